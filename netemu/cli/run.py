"""`netemu run` and `netemu replay`: a scenario into a run folder, with its outcome on the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

from netemu.cli.common import announce_script
from netemu.diagnostics import event
from netemu.scenario import load_scenario
from netemu.terminal import printable as p  # a folder or name from the command line or a scenario, escaped for the terminal


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help="run folder to create (default: runs/NAME, numbered if taken)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario value, e.g. --set run.rounds=200 --set algorithm.lr=0.1 (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary on the terminal")
    p.add_argument("--no-scripts", action="store_true",
                   help="refuse a scenario that names a Python script (a scenario with a script is code)")


def register(sub: argparse._SubParsersAction) -> None:
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


def _print_summary(summary: dict, out: Path) -> None:
    print(f"run folder: {p(out)}")
    runs = summary.get("runs", 1)
    print(f"  final values: each metric's last-round value{f', mean over {runs} Monte Carlo runs [95 % t-interval]' if runs > 1 else ''}")
    for label, metrics in summary["final"].items():
        ci = summary.get("final_ci95", {}).get(label, {})
        shown = ", ".join(f"{k} = {v:.6g}{_interval(ci.get(k))}" for k, v in metrics.items())
        m = summary["messages"][label]
        print(f"  {p(label)}: {shown}  |  messages sent {m['sent']}, delivered {m['delivered']}, dropped {m['dropped']}, in flight {m['in_flight']}")
    if "replay" in summary:
        print(f"  replayed fates: {summary['replay']['replayed']}, new draws: {summary['replay']['new']}")
    print(f"  {p(_outcome_words(summary))}")
    print(f"  wall time {summary['wall_time_s']:.2f} s")


def _interval(ci: dict | None) -> str:
    if not ci or ci.get("hi") is None:
        return ""
    lo = "-inf" if ci["lo"] is None else f"{ci['lo']:.4g}"
    return f" [{lo}, {ci['hi']:.4g}]"


def _outcome_words(summary: dict) -> str:
    """The outcome in one line: complete, or how many runs ended early and why."""
    runs = [o for outcomes in summary.get("outcome", {}).values() for o in outcomes]
    if summary["complete"]:
        return f"complete: {len(runs)} run(s), every one did its {summary['rounds_planned']} rounds"
    early = [o for o in runs if not o["complete"]]
    done = ", ".join(f"{o['rounds_done']}" for o in early[:5])
    return (f"INCOMPLETE: {len(early)} of {len(runs)} run(s) ended early (rounds done: {done} of "
            f"{summary['rounds_planned']}); {summary['stopped_by']}")


def _execute(sc, args, replay=None, source=None, overrides: list[str] | None = None) -> int:
    from netemu.errors import EXIT_COMPLETE, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_TERMINATED, NetemuError, RunStopped, WriteFailed
    from netemu.run.runner import Terminated, default_out_dir, execute, stop_on_signals
    from netemu.run.signals import ignore_signals

    out = args.out or default_out_dir(sc)
    if out.exists():
        event("error", f"netemu: the run folder {p(out)} already exists; choose another --out or remove it", level="error",
              error="InputError", exit_code=2)
        return 2
    announce_script(sc, args)
    try:
        with stop_on_signals():
            summary = execute(sc, out, quiet=args.quiet, replay=replay, replay_source=source, overrides=overrides or ())
    except KeyboardInterrupt as exc:
        ignore_signals()  # a second signal while this is reported: no traceback
        terminated = isinstance(exc, Terminated)
        what = "terminated (SIGTERM)" if terminated else "\nnetemu: interrupted"
        code = EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
        event("run.interrupted", f"{'netemu: ' if terminated else ''}{what}; {_folder_state(out)}", level="error",
              signal="SIGTERM" if terminated else "SIGINT", folder=str(out), exit_code=code)
        return code
    except WriteFailed as exc:  # a full disk, a read-only filesystem: one line, and what the folder holds
        event("error", f"netemu: {exc}; {_folder_state(out)}", level="error", error=type(exc).__name__, folder=str(out),
              exit_code=exc.exit_code)
        return exc.exit_code
    except RunStopped as exc:
        more = " and the traceback (summary.json: failure)" if getattr(exc, "details", None) else ""
        event("error", f"netemu: the emulation stopped: {exc}\nthe run folder {p(out)} holds everything logged until then{more}",
              level="error", error=type(exc).__name__, folder=str(out), exit_code=exc.exit_code)
        return exc.exit_code
    except NetemuError as exc:
        if not out.is_dir():
            raise
        event("error", f"netemu: {exc}\nthe run folder {p(out)} is incomplete (summary.json: complete = false)", level="error",
              error=type(exc).__name__, folder=str(out), exit_code=exc.exit_code)
        return exc.exit_code
    if not args.quiet:
        _print_summary(summary, out)
    for warning in summary["warnings"]:
        event("warning", f"netemu: warning: {p(warning)}", level="warning", folder=str(out))
    if not summary["complete"]:
        if args.quiet:
            event("run.incomplete", f"netemu: {p(_outcome_words(summary))}", level="warning", folder=str(out))
        return EXIT_INCOMPLETE
    return EXIT_COMPLETE


def _folder_state(out: Path) -> str:
    """What an interrupted run left, in words: the folder and whether summary.json calls it complete."""
    from netemu.run.executors import read_summary

    summary = read_summary(out)
    if summary is None:
        return f"no run folder was written ({p(out)})" if not out.exists() else f"the run folder {p(out)} is incomplete (no summary.json)"
    state = "true: every run had ended" if summary.get("complete") else "false"
    return f"the run folder {p(out)} holds what was done (summary.json: complete = {state})"


def cmd_run(args) -> int:
    overrides = list(args.overrides)
    if args.seed is not None:
        overrides.append(f"run.seed={args.seed}")
    if args.runs is not None:
        overrides.append(f"run.runs={args.runs}")
    return _execute(load_scenario(args.scenario, overrides), args, overrides=overrides)


def cmd_replay(args) -> int:
    from netemu.trace import Trace

    trace = Trace.read(args.trace)
    overrides = [*args.overrides, f"run.seed={trace.header['seed']}"]
    sc = load_scenario(args.scenario, overrides)
    if sc.settings.run.runs > len(trace.header["runs"]):
        overrides.append(f"run.runs={len(trace.header['runs'])}")
        sc = load_scenario(args.scenario, overrides)
    return _execute(sc, args, replay=trace, source=args.source, overrides=overrides)

