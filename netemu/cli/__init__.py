"""The `netemu` command: run, replay and validate scenarios, inspect what they wrote.

One small module per subcommand or group (run/replay, validate, log, plot, report, devices,
sweep, algorithms), each registering its parser and holding its command; `core` builds the
top-level parser and is the one place errors meant for people become `netemu: ...` lines and
exit codes (netemu/errors.py): 0 complete, 1 the emulation stopped, 2 bad input, 3 a run ended
early, 130 Ctrl-C, 143 SIGTERM; the last three leave a valid run folder whose summary.json
says complete = false.  Imports point one way: `core` -> the subcommand modules -> `common`.

`main` here is the console entry point: it installs the signal handlers (netemu.run.signals)
before it imports `core` and with it NumPy, SimPy and networkx, so that Ctrl-C or SIGTERM at
any instant — the first imports included — ends in one line and the documented exit code.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["main"]

EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # netemu/errors.py, not imported before the handlers are in place


@contextmanager
def _no_collections() -> Iterator[None]:
    """The garbage collector paused while the command's modules are imported, and what they made
    frozen (gc.freeze: never traversed again): ~100,000 long-lived objects (NumPy, networkx,
    netemu's own: modules, classes, functions) and next to no garbage, which the collections they
    set off, one of them traversing everything, and every full collection after them traversed for
    nothing: 0.06-0.1 s of CPU at every `netemu run` (the run itself raises the thresholds: World.run).
    Once per process: a program or test that calls `main` again freezes nothing more."""
    if "netemu.cli.core" in sys.modules:  # imported already (a second command in this process): nothing to do
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def main(argv: list[str] | None = None) -> int:
    from netemu.run.signals import Terminated, cli_signals, ignore_signals, raise_pending

    with cli_signals():
        try:
            with _no_collections():
                from netemu.cli.core import main as run_command

            raise_pending()  # a signal while the modules were imported
            code = run_command(argv)
            if code not in (EXIT_INTERRUPTED, EXIT_TERMINATED):  # the command did not report one already
                raise_pending()  # one that came during a later import, and was recorded, not raised
            return code
        except KeyboardInterrupt as exc:  # before or after a run (a run's own interruption is reported by `netemu run`)
            ignore_signals()  # a second signal while this is reported: no traceback
            terminated = isinstance(exc, Terminated)
            print("netemu: terminated (SIGTERM)" if terminated else "\nnetemu: interrupted", file=sys.stderr)
            return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
