"""The `netemu` command: run, replay and validate scenarios, inspect what they wrote.

One small module per subcommand or group (run/replay, validate, log, plot, report, devices,
sweep, algorithms), each registering its parser and holding its command; `core` builds the
top-level parser and is the one place errors meant for people become `netemu: ...` lines and
exit codes (netemu/errors.py): 0 complete, 1 the emulation stopped, 2 bad input, 3 a run ended
early, 130 Ctrl-C, 143 SIGTERM; the last three leave a valid run folder whose summary.json
says complete = false.  Imports point one way: `core` -> the subcommand modules -> `common`.
"""

from netemu.cli.core import main

__all__ = ["main"]
