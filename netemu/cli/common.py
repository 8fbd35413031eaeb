"""What more than one subcommand needs: naming the Python code a scenario ships before it runs, checking a time window."""

from __future__ import annotations

import math


def announce_script(sc, args) -> None:
    """Say which Python code shipped with the scenario a run will execute (its script, a Flower
    app_dir: path and BLAKE2 hash), or refuse it with --no-scripts."""
    from netemu.diagnostics import event
    from netemu.errors import InputError
    from netemu.scenario.build import script_hash

    for key, path in sc.code():
        if getattr(args, "no_scripts", False):
            raise InputError(f"{sc.path}: {key} = {str(path)!r}: refused by --no-scripts (a scenario that ships Python code runs it)")
        what = "the Python script" if key == "script" else f"Python code from ({key})"
        digest = script_hash(path)
        event("run.executes_code", f"netemu: this scenario executes {what} {path} (blake2b {digest})", key=key, path=str(path), blake2b=digest)



def finite_window(args, error: type[Exception]) -> None:
    """Refuse a non-finite --since / --until (nan, inf, -inf): a window bound is a virtual time."""
    for option in ("since", "until"):
        value = getattr(args, option, None)
        if value is not None and not math.isfinite(value):
            raise error(f"--{option} {value}: expected a finite time in virtual seconds (nan and inf are not accepted)")
