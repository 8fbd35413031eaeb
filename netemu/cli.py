"""The `netemu` command: run, replay and validate scenarios.

Each subcommand is one small function; errors a user can fix (a bad scenario, a
mismatched trace, a failing actor) are printed without a Python traceback and give
exit code 2 (bad input) or 1 (the emulation stopped); Ctrl-C gives 130 and leaves a
valid, incomplete run folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from netemu import __version__
from netemu.scenario import ScenarioError, load_scenario

__all__ = ["main"]

EXAMPLES = """examples:
  netemu run scenarios/quickstart.toml
  netemu run scenarios/quickstart.toml --runs 10 --seed 3 --set algorithm.lr=0.02 --out runs/lr002
  netemu replay runs/quickstart/trace.msgpack --scenario scenarios/quickstart.toml
  netemu validate scenarios/*.toml
"""


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help="run folder to create (default: runs/NAME, numbered if taken)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario value, e.g. --set run.rounds=200 --set algorithm.lr=0.1 (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary on the terminal")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="netemu",
        description="Emulate networked federated learning: actors in virtual time over impaired links.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"netemu {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a scenario into a run folder", description="Run every algorithm of SCENARIO for every Monte Carlo run and write a run folder.")
    run.add_argument("scenario", type=Path, help="scenario TOML file")
    run.add_argument("--seed", type=int, help="root seed (overrides run.seed)")
    run.add_argument("--runs", type=int, help="Monte Carlo runs (overrides run.runs)")
    _add_run_options(run)
    run.set_defaults(func=cmd_run)

    replay = sub.add_parser(
        "replay",
        help="run a scenario against the network realization recorded in a trace",
        description="Replay the fates recorded in TRACE. With the scenario that recorded it the message log is "
        "byte-identical; with another algorithm every message sent in the same (link, round, index) meets the "
        "same fate, and draws the trace lacks come from the seeded streams.",
    )
    replay.add_argument("trace", type=Path, help="trace.msgpack of an earlier run")
    replay.add_argument("--scenario", type=Path, required=True, help="scenario TOML file to run")
    replay.add_argument("--source", help="whose fates algorithms not in the trace replay (default: the trace's first algorithm)")
    _add_run_options(replay)
    replay.set_defaults(func=cmd_replay)

    validate = sub.add_parser("validate", help="check scenario files without running them")
    validate.add_argument("scenarios", type=Path, nargs="+", help="scenario TOML files")
    validate.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    validate.set_defaults(func=cmd_validate)
    return parser


def _print_summary(summary: dict, out: Path) -> None:
    print(f"run folder: {out}")
    for label, metrics in summary["final"].items():
        shown = ", ".join(f"{k} = {v:.6g}" for k, v in metrics.items())
        m = summary["messages"][label]
        print(f"  {label}: {shown}  |  messages sent {m['sent']}, delivered {m['delivered']}, dropped {m['dropped']}, in flight {m['in_flight']}")
    if "replay" in summary:
        print(f"  replayed fates: {summary['replay']['replayed']}, new draws: {summary['replay']['new']}")
    print(f"  wall time {summary['wall_time_s']:.2f} s")


def _execute(sc, args, replay=None, source=None) -> int:
    from netemu.runner import default_out_dir, execute
    from netemu.world import ActorFailed, DeadlockError

    out = args.out or default_out_dir(sc)
    if out.exists():
        print(f"netemu: the run folder {out} already exists; choose another --out or remove it", file=sys.stderr)
        return 2
    try:
        summary = execute(sc, out, quiet=args.quiet, replay=replay, replay_source=source)
    except KeyboardInterrupt:
        print(f"\nnetemu: interrupted; the run folder {out} holds what was done (summary.json: complete = false)", file=sys.stderr)
        return 130
    except (ActorFailed, DeadlockError) as exc:
        print(f"netemu: the emulation stopped: {exc}\nthe run folder {out} holds everything logged until then", file=sys.stderr)
        return 1
    if not args.quiet:
        _print_summary(summary, out)
    return 0


def cmd_run(args) -> int:
    overrides = list(args.overrides)
    if args.seed is not None:
        overrides.append(f"run.seed={args.seed}")
    if args.runs is not None:
        overrides.append(f"run.runs={args.runs}")
    return _execute(load_scenario(args.scenario, overrides), args)


def cmd_replay(args) -> int:
    from netemu.trace import Trace

    trace = Trace.read(args.trace)
    overrides = [*args.overrides, f"run.seed={trace.header['seed']}"]
    sc = load_scenario(args.scenario, overrides)
    if sc.table["run"]["runs"] > len(trace.header["runs"]):
        overrides.append(f"run.runs={len(trace.header['runs'])}")
        sc = load_scenario(args.scenario, overrides)
    return _execute(sc, args, replay=trace, source=args.source)


def cmd_validate(args) -> int:
    failed = 0
    for path in args.scenarios:
        try:
            sc = load_scenario(path, args.overrides)
        except ScenarioError as exc:
            failed += 1
            print(exc, file=sys.stderr)
        else:
            labels = ", ".join(a["label"] for a in sc.table["algorithm"])
            print(f"{path}: ok ({sc.table['run']['runs']} run(s) x {sc.table['run']['rounds']} rounds; algorithms: {labels})")
    return 2 if failed else 0


def main(argv: list[str] | None = None) -> int:
    from netemu.trace import TraceError

    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except (ScenarioError, TraceError) as exc:
        print(f"netemu: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
