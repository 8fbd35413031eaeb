"""`netemu report`: one self-contained HTML page about run folders."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    rep = sub.add_parser(
        "report",
        help="one self-contained HTML page about run folders: curves, traffic, clients, privacy, timeline",
        description="Write one HTML file (no network access needed to view it) about RUN_DIR...: learning curves against "
        "rounds and virtual time, traffic per link class, per-client participation and compute, privacy spent, the "
        "scenario, the outcome and a timeline window. Several folders are compared side by side.",
    )
    rep.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR", help="run folders (a sweep folder: its points' run folders)")
    rep.add_argument("--out", type=Path, default=Path("report.html"), help="HTML file to write (default report.html)")
    rep.add_argument("--since", type=float, help="timeline window start (virtual s; default: the run's start)")
    rep.add_argument("--until", type=float, help="timeline window end (default: after the first 3 rounds)")
    rep.add_argument("--algorithm", help="which algorithm the timeline shows (default: the first)")
    rep.add_argument("--run", type=int, help="which Monte Carlo run the timeline shows (default: the first)")
    rep.add_argument("--max-events", type=int, default=1000,
                     help="most messages + compute spans drawn one by one in the timeline; more are drawn aggregated per "
                     "time bin and lane group (default 1000)")
    rep.add_argument("--actors", metavar="PATTERN",
                     help="only these actors in the clients section and the timeline: comma-separated globs, e.g. 'server,client-1?'")
    rep.add_argument("--target", metavar="METRIC=VALUE[:K]",
                     help="time to accuracy: when METRIC first reaches VALUE, or with :K when it has held for K consecutive "
                     "evaluations (default: the main metric's best final value within 10 %%; docs/inspecting.md)")
    rep.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from netemu.cli.common import finite_window
    from netemu.report.html import ReportError, Window, write_report
    from netemu.report.target import parse_target

    finite_window(args, ReportError)
    if args.max_events < 1:
        raise ReportError(f"--max-events {args.max_events}: expected a positive number of events")
    if args.since is not None and args.until is not None and args.until < args.since:
        raise ReportError(f"--until {args.until} is before --since {args.since}: expected since <= until")
    window = Window(since=args.since, until=args.until, algorithm=args.algorithm, run=args.run, max_events=args.max_events)
    target = parse_target(args.target) if args.target is not None else None
    print(write_report(args.runs, args.out, window, actors=args.actors, target=target))
    return 0

