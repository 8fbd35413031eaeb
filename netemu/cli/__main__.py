"""`python -m netemu.cli ...`: the `netemu` command."""

import sys

from netemu.cli import main  # the handlers first, then the heavy imports

sys.exit(main())
