"""`netemu validate`: check scenario files without running them (never executes a scenario script)."""

from __future__ import annotations

import argparse
from pathlib import Path

from netemu.scenario import load_scenario


def register(sub: argparse._SubParsersAction) -> None:
    validate = sub.add_parser("validate", help="check scenario files without running them (never executes a scenario script)")
    validate.add_argument("scenarios", type=Path, nargs="+", help="scenario TOML files")
    validate.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    validate.set_defaults(func=cmd_validate)


def cmd_validate(args) -> int:
    from netemu.diagnostics import event
    from netemu.errors import NetemuError
    from netemu.terminal import printable  # names and values from the file never reach the terminal raw

    failed = 0
    for path in args.scenarios:
        try:
            sc = load_scenario(path, args.overrides)
        except NetemuError as exc:
            failed += 1
            event("error", str(exc), level="error", error=type(exc).__name__, scenario=str(path))
        else:
            s = sc.settings
            print(printable(f"{path}: ok ({s.run.runs} run(s) x {s.run.rounds} rounds; algorithms: {', '.join(s.labels)})"))
            from netemu.scenario.build import script_hash

            for key, code in sc.code():
                print(printable(f"  {key} {code} (blake2b {script_hash(code)}): not executed by validate; `netemu run` executes it"))
    return 2 if failed else 0

