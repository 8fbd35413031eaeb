"""`python -m netemu.cli ...`: the `netemu` command."""

import sys

from netemu.cli.core import main

sys.exit(main())
