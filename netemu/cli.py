"""The `netemu` command: run, replay and validate scenarios.

Each subcommand is one small function; errors a user can fix (a bad scenario, a
mismatched trace, a failing actor) are printed without a Python traceback.  Exit codes
(netemu/errors.py, listed in `netemu --help`): 0 complete, 1 the emulation stopped,
2 bad input, 3 a run ended early, 130 Ctrl-C, 143 SIGTERM; the last three leave a
valid run folder whose summary.json says complete = false.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

from netemu import __version__
from netemu.scenario import load_scenario

__all__ = ["main"]

EXAMPLES = """examples:
  netemu run scenarios/quickstart.toml
  netemu run scenarios/quickstart.toml --runs 10 --seed 3 --set algorithm.lr=0.02 --out runs/lr002
  netemu replay runs/quickstart/trace.msgpack --scenario scenarios/quickstart.toml
  netemu validate scenarios/*.toml
  netemu algorithms pgfl
  netemu log summary runs/quickstart
  netemu log filter runs/quickstart --actor client-3 --kind update --table
  netemu log diff runs/a runs/b
  netemu plot runs/a runs/b --metric mse
  netemu plot runs/a runs/b --metric mse --x time
  netemu sweep scenarios/quickstart.toml --grid algorithm.lr=0.02,0.05,0.1 --grid run.seed=1..5
  netemu plot runs/quickstart-sweep --metric mse --x algorithm.lr

exit codes:
  0    complete: every run of every algorithm did all its rounds
  1    failed: an actor raised, or a deadlock stopped the emulation
  2    bad input: a scenario, trace, log, device file or option was refused
  3    incomplete: a run ended early without failing (run.until, the horizon run.max_time,
       a crash without recovery); summary.json says which run and why
  130  interrupted (Ctrl-C), 143 terminated (SIGTERM): the run folder holds what was done
"""


class _Parser(argparse.ArgumentParser):
    """The top-level parser: `--help` ends with the registered algorithms and data kinds
    (read only when help is shown, so other commands do not import every plug-in)."""

    def format_help(self) -> str:
        from netemu.plugins import registry

        reg = registry()
        lines = [f"algorithms (netemu algorithms lists their parameters): {', '.join(reg.algorithms)}",
                 f"data kinds: {', '.join(reg.data)}"]
        lines += [f"plug-in not loaded: {b}" for b in reg.broken]
        return super().format_help() + "\n" + "\n".join(lines) + "\n"


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help="run folder to create (default: runs/NAME, numbered if taken)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario value, e.g. --set run.rounds=200 --set algorithm.lr=0.1 (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary on the terminal")
    p.add_argument("--no-scripts", action="store_true",
                   help="refuse a scenario that names a Python script (a scenario with a script is code)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
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

    log = sub.add_parser("log", help="inspect a message log (a run folder or a messages.jsonl)")
    log_sub = log.add_subparsers(dest="log_command", required=True, metavar="SUBCOMMAND")
    summary = log_sub.add_parser("summary", help="traffic per message kind and link class, delay percentiles, slowest links and actors")
    summary.add_argument("log", type=Path, help="run folder or messages.jsonl")
    summary.add_argument("--json", action="store_true", help="print JSON instead of a table")
    summary.add_argument("--top", type=int, default=5, help="how many slowest links and actors (default 5)")
    summary.add_argument("--algorithm", help="only this algorithm's records")
    summary.add_argument("--run", type=int, help="only this Monte Carlo run's records")
    summary.add_argument("--per-run", action="store_true", help="an actor table per algorithm and run (default: the mean over them)")
    summary.set_defaults(func=cmd_log_summary)
    filt = log_sub.add_parser("filter", help="print the records matching every condition given")
    filt.add_argument("log", type=Path, help="run folder or messages.jsonl")
    for name, kind in (("src", str), ("dst", str), ("kind", str), ("round", int), ("since", float), ("until", float),
                       ("event", str), ("actor", str), ("algorithm", str), ("run", int)):
        filt.add_argument(f"--{name}", type=kind, help="an actor as src, dst or actor" if name == "actor" else None)
    filt.add_argument("--table", action="store_true", help="a readable table instead of JSON lines")
    filt.set_defaults(func=cmd_log_filter)
    tl = log_sub.add_parser("timeline", help="a swim-lane PNG: arrows from send to delivery, crosses for drops, compute spans")
    tl.add_argument("log", type=Path, help="run folder or messages.jsonl")
    tl.add_argument("--out", type=Path, default=Path("timeline.png"), help="image file (default timeline.png)")
    tl.add_argument("--actors", nargs="+", help="only these actors' lanes")
    tl.add_argument("--since", type=float, help="start of the time window")
    tl.add_argument("--until", type=float, help="end of the time window")
    tl.add_argument("--algorithm", help="which algorithm of a run folder (default: the first)")
    tl.add_argument("--run", type=int, help="which Monte Carlo run (default: the first)")
    tl.add_argument("--max-messages", type=int, default=400,
                    help="more messages than this: a shorter window (none given) or aggregated drawing (default 400)")
    tl.set_defaults(func=cmd_log_timeline)
    diff = log_sub.add_parser("diff", help="where two logs first diverge, and how their totals differ")
    diff.add_argument("a", type=Path)
    diff.add_argument("b", type=Path)
    diff.set_defaults(func=cmd_log_diff)

    sw = sub.add_parser(
        "sweep",
        help="run every combination of a parameter grid, each in its own run folder",
        description="Run SCENARIO for every combination of the --grid values (resuming: complete folders run with the "
        "same scenario are skipped) and write OUT/sweep.csv with the status and final metrics per folder. "
        "Exit code: 0 every point complete, 1 some failed, 3 some ended early, 2 bad input, 130/143 interrupted.",
    )
    sw.add_argument("scenario", type=Path, help="scenario TOML file")
    sw.add_argument("--grid", action="append", required=True, metavar="KEY=V1,V2|A..B",
                    help="a swept key and its values, e.g. --grid algorithm.mu=0.1,0.2 --grid run.seed=1..20 (repeatable)")
    sw.add_argument("--out", type=Path, help="sweep folder (default: runs/NAME-sweep)")
    sw.add_argument("--executor", choices=("local", "dask"), default="local",
                    help="local: a process pool on this machine; dask: dask.distributed (a LocalCluster unless --address)")
    sw.add_argument("--address", help="dask scheduler address, e.g. tcp://host:8786")
    sw.add_argument("--workers", type=int, help="worker processes (default: the machine's cores; with dask a LocalCluster's, default 2)")
    sw.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                    help="how long to try to reach the dask scheduler at --address (default 10)")
    sw.add_argument("--tls-ca-file", type=Path, help="CA certificate (PEM) of a TLS-secured dask scheduler (tls://host:port)")
    sw.add_argument("--tls-cert", type=Path, help="client certificate (PEM) for the TLS-secured scheduler")
    sw.add_argument("--tls-key", type=Path, help="client private key (PEM), unless it is in --tls-cert")
    sw.add_argument("--rerun-stale", action="store_true",
                    help="run again finished points whose scenario changed since (default: refuse them)")
    sw.add_argument("--max-points", type=int, default=10_000, metavar="N",
                    help="refuse grids of more than N points (default 10000)")
    sw.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="fixed overrides for every point")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=cmd_sweep)

    dev = sub.add_parser("devices", help="import device availability and capacity traces")
    dev_sub = dev.add_subparsers(dest="devices_command", required=True, metavar="SUBCOMMAND")
    imp = dev_sub.add_parser(
        "import",
        help="convert FedScale or FLGo traces (or netemu's own CSV) into a netemu devices file",
        description="Convert device traces into a netemu devices JSON file, for [devices] file = ... in a scenario "
        "(docs/inspecting.md). fedscale: client_behave_trace and client_device_capacity (pickle or JSON; pickles are "
        "read without running code), paired by position as FedScale does, periodic, compute time 3 x batch x steps x "
        "ms / 1000. flgo: Kaggle's pings.csv (id,timestamp) and Benchmark-On-Device-Training time tables "
        "(batchsize,expr_train). netemu-csv: availability rows client,start,end and capacity rows client,speed,bandwidth.",
    )
    imp.add_argument("--format", choices=("fedscale", "flgo", "netemu-csv", "csv"), required=True,
                     help="csv is the old name of netemu-csv")
    imp.add_argument("--availability", type=Path, help="availability trace")
    imp.add_argument("--capacity", type=Path, nargs="+", help="capacity trace (flgo: one time table per device type)")
    imp.add_argument("--time-scale", type=float, default=1.0, help="multiply the traces' times by this (default 1)")
    imp.add_argument("--periodic", action=argparse.BooleanOptionalAction, default=None,
                     help="repeat the trace after its end (default: yes for fedscale and flgo, no for netemu-csv)")
    imp.add_argument("--pairing", choices=("position", "id"), default="position",
                     help="fedscale: client c takes record c %% n of each file (position, FedScale's) or the same id")
    imp.add_argument("--count", type=int, help="fedscale, flgo: how many devices to write (default: the larger file)")
    imp.add_argument("--order", choices=("HIGH", "LOW"), default="HIGH",
                     help="flgo: users with the most (HIGH) or fewest (LOW) pings first")
    imp.add_argument("--out", type=Path, required=True, help="devices JSON file to write")
    imp.set_defaults(func=cmd_devices_import)

    plot = sub.add_parser("plot", help="learning curves of run folders, or a final metric against a swept parameter")
    plot.add_argument("runs", type=Path, nargs="+", help="run folders (or one sweep folder with --x)")
    plot.add_argument("--metric", required=True, help="metric name, e.g. mse_db")
    plot.add_argument("--x", help="x axis: round (default) or time (virtual seconds) for run folders; "
                      "with a sweep folder: the swept key, e.g. algorithm.tau")
    plot.add_argument("--out", type=Path, help="image file (default: METRIC.png in the current folder)")
    plot.add_argument("--svg", action="store_true", help="write SVG instead of PNG")
    plot.set_defaults(func=cmd_plot)

    rep = sub.add_parser(
        "report",
        help="one self-contained HTML page about run folders: curves, traffic, clients, privacy, timeline",
        description="Write one HTML file (no network access needed to view it) about RUN_DIR...: learning curves against "
        "rounds and virtual time, traffic per link class, per-client participation and compute, privacy spent, the "
        "scenario, the outcome and a timeline window. Several folders are compared side by side.",
    )
    rep.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR", help="run folders")
    rep.add_argument("--out", type=Path, default=Path("report.html"), help="HTML file to write (default report.html)")
    rep.add_argument("--since", type=float, help="timeline window start (virtual s; default: the run's start)")
    rep.add_argument("--until", type=float, help="timeline window end (default: after the first 3 rounds)")
    rep.add_argument("--algorithm", help="which algorithm the timeline shows (default: the first)")
    rep.add_argument("--run", type=int, help="which Monte Carlo run the timeline shows (default: the first)")
    rep.add_argument("--max-events", type=int, default=1000, help="most messages + compute spans in the timeline (default 1000)")
    rep.set_defaults(func=cmd_report)

    algs = sub.add_parser(
        "algorithms",
        help="list the algorithms and data kinds (built-in and plug-ins) with their parameters and defaults",
        description="List every registered algorithm (netemu's own and installed plug-ins, entry point group "
        "netemu.algorithms) and data kind (netemu.data): where it comes from, what it needs, its parameters and defaults.",
    )
    algs.add_argument("names", nargs="*", help="only these algorithms (default: all)")
    algs.set_defaults(func=cmd_algorithms)

    validate = sub.add_parser("validate", help="check scenario files without running them (never executes a scenario script)")
    validate.add_argument("scenarios", type=Path, nargs="+", help="scenario TOML files")
    validate.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    validate.set_defaults(func=cmd_validate)
    return parser


def _print_summary(summary: dict, out: Path) -> None:
    print(f"run folder: {out}")
    runs = summary.get("runs", 1)
    print(f"  final values: each metric's last-round value{f', mean over {runs} Monte Carlo runs' if runs > 1 else ''}")
    for label, metrics in summary["final"].items():
        shown = ", ".join(f"{k} = {v:.6g}" for k, v in metrics.items())
        m = summary["messages"][label]
        print(f"  {label}: {shown}  |  messages sent {m['sent']}, delivered {m['delivered']}, dropped {m['dropped']}, in flight {m['in_flight']}")
    if "replay" in summary:
        print(f"  replayed fates: {summary['replay']['replayed']}, new draws: {summary['replay']['new']}")
    print(f"  {_outcome_words(summary)}")
    print(f"  wall time {summary['wall_time_s']:.2f} s")


def _outcome_words(summary: dict) -> str:
    """The outcome in one line: complete, or how many runs ended early and why."""
    runs = [o for outcomes in summary.get("outcome", {}).values() for o in outcomes]
    if summary["complete"]:
        return f"complete: {len(runs)} run(s), every one did its {summary['rounds_planned']} rounds"
    early = [o for o in runs if not o["complete"]]
    done = ", ".join(f"{o['rounds_done']}" for o in early[:5])
    return (f"INCOMPLETE: {len(early)} of {len(runs)} run(s) ended early (rounds done: {done} of "
            f"{summary['rounds_planned']}); {summary['stopped_by']}")


def _announce_script(sc, args) -> None:
    """Say which Python code shipped with the scenario a run will execute (its script, a Flower
    app_dir: path and BLAKE2 hash), or refuse it with --no-scripts."""
    from netemu.errors import InputError
    from netemu.scenario.build import script_hash

    for key, path in sc.code():
        if getattr(args, "no_scripts", False):
            raise InputError(f"{sc.path}: {key} = {str(path)!r}: refused by --no-scripts (a scenario that ships Python code runs it)")
        what = "the Python script" if key == "script" else f"Python code from ({key})"
        print(f"netemu: this scenario executes {what} {path} (blake2b {script_hash(path)})", file=sys.stderr)


def _execute(sc, args, replay=None, source=None) -> int:
    from netemu.errors import EXIT_COMPLETE, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_TERMINATED, NetemuError, RunStopped
    from netemu.runner import Terminated, default_out_dir, execute, stop_on_signals

    out = args.out or default_out_dir(sc)
    if out.exists():
        print(f"netemu: the run folder {out} already exists; choose another --out or remove it", file=sys.stderr)
        return 2
    _announce_script(sc, args)
    try:
        with stop_on_signals():
            summary = execute(sc, out, quiet=args.quiet, replay=replay, replay_source=source)
    except Terminated:
        print(f"netemu: terminated (SIGTERM); the run folder {out} holds what was done (summary.json: complete = false)", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print(f"\nnetemu: interrupted; the run folder {out} holds what was done (summary.json: complete = false)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except RunStopped as exc:
        more = " and the actor's traceback (summary.json: failure)" if getattr(exc, "details", None) else ""
        print(f"netemu: the emulation stopped: {exc}\nthe run folder {out} holds everything logged until then{more}", file=sys.stderr)
        return exc.exit_code
    except NetemuError as exc:
        if not out.is_dir():
            raise
        print(f"netemu: {exc}\nthe run folder {out} is incomplete (summary.json: complete = false)", file=sys.stderr)
        return exc.exit_code
    if not args.quiet:
        _print_summary(summary, out)
    for warning in summary["warnings"]:
        print(f"netemu: warning: {warning}", file=sys.stderr)
    if not summary["complete"]:
        if args.quiet:
            print(f"netemu: {_outcome_words(summary)}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_COMPLETE


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
    from netemu.errors import NetemuError

    failed = 0
    for path in args.scenarios:
        try:
            sc = load_scenario(path, args.overrides)
        except NetemuError as exc:
            failed += 1
            print(exc, file=sys.stderr)
        else:
            labels = ", ".join(a["label"] for a in sc.table["algorithm"])
            print(f"{path}: ok ({sc.table['run']['runs']} run(s) x {sc.table['run']['rounds']} rounds; algorithms: {labels})")
            from netemu.scenario.build import script_hash

            for key, code in sc.code():
                print(f"  {key} {code} (blake2b {script_hash(code)}): not executed by validate; `netemu run` executes it")
    return 2 if failed else 0


def _parameters(params: type, defaults: dict) -> str:
    import dataclasses

    shown = []
    for f in dataclasses.fields(params):
        default = defaults.get(f.name, f.default)
        shown.append(f.name if default is dataclasses.MISSING else f"{f.name} = {default!r}")
    return ", ".join(shown)


def cmd_algorithms(args) -> int:
    from netemu.plugins import algorithm, registry

    reg = registry()
    for spec in [algorithm(name) for name in args.names or reg.algorithms]:  # an unknown name: PluginError
        doc = (spec.doc.strip().splitlines() or [""])[0]
        print(f"{spec.name}  ({reg.origin.get(('algorithm', spec.name), 'module:attribute')})")
        if doc:
            print(f"    {doc}")
        print(f"    data.kind: {' | '.join(spec.datasets) or 'any'}; roles: {', '.join(spec.roles) or 'any'}")
        for req in spec.requires:
            print(f"    needs: {req.needs}")
        print(f"    parameters: {_parameters(spec.params, spec.defaults)}")
    if not args.names:
        print("\ndata kinds:")
        for name, data in reg.data.items():
            print(f"{name}  ({reg.origin[('data kind', name)]})\n    {data.doc}\n    parameters: {_parameters(data.params, {})}")
    for line in reg.broken:
        print(f"netemu: plug-in not loaded: {line}", file=sys.stderr)
    return 2 if reg.broken else 0


def cmd_log_summary(args) -> int:
    import json

    from netemu.logtools import summarize
    from netemu.terminal import printable as p

    s = summarize(args.log, top=args.top, algorithm=args.algorithm, run=args.run)
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    first, last = s["virtual_time"]["first"], s["virtual_time"]["last"]
    print(f"{s['records']} records of {s['runs']} algorithm/run pair(s), virtual time {first} .. {last}")
    print(f"\n{'kind / link class':<28}{'sent':>9}{'deliv.':>9}{'dropped':>9}{'in fl.':>8}{'bytes':>12}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}  drops")
    for name, t in s["traffic"].items():
        d = t["delay"] or dict.fromkeys(("p50", "p90", "p99", "max"), float("nan"))
        reasons = ", ".join(f"{p(k)} {v}" for k, v in t["dropped_by_reason"].items())
        print(f"{p(name):<28}{t['sent']:>9}{t['delivered']:>9}{t['dropped']:>9}{t['in_flight']:>8}{t['bytes']:>12}"
              f"{d['p50']:>9.3g}{d['p90']:>9.3g}{d['p99']:>9.3g}{d['max']:>9.3g}  {reasons}")
    print("(delay percentiles from a streaming sketch, within 1 % of the exact order statistic; max exact)")
    for title, key in (("slowest links", "slowest_links"), ("slowest receivers", "slowest_receivers")):
        print(f"\n{title} (mean delay):")
        for x in s[key]:
            print(f"  {p(x['name']):<30} {x['mean_delay']:.4g} s mean, {x['max_delay']:.4g} s max, {x['messages']} messages")
    tables = ({k: v["actors"] for k, v in s["per_run"].items()} if args.per_run or s["runs"] == 1
              else {f"mean over {s['runs']} algorithm/run pairs (--per-run, --run, --algorithm for one)": s["actors"]})
    for label, actors in tables.items():
        print(f"\n{'actor':<20}{'participation':>14}{'compute time':>14}{'idle time':>12}   {p(label)}")
        for name, a in actors.items():
            print(f"{p(name):<20}{a['participation_rate']:>14.3f}{a['compute_time']:>14.4g}{a['idle_time']:>12.4g}")
    return 0


def _safe_json(line: str) -> str:
    """A JSON line with every non-printable character as a \\u escape (still valid JSON)."""
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() else json_escape(c) for c in line)


def json_escape(c: str) -> str:
    n = ord(c)
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


def cmd_log_filter(args) -> int:
    import orjson

    from netemu.logtools import filter_records
    from netemu.terminal import printable as p

    conditions = {k: getattr(args, k) for k in ("src", "dst", "kind", "round", "since", "until", "event", "actor", "algorithm", "run")}
    out = sys.stdout
    for r in filter_records(args.log, **conditions):
        if args.table:
            rest = " ".join(f"{p(k)}={p(v)}" for k, v in r.items() if k not in ("t", "event", "src", "dst", "kind"))
            route = f"{r.get('src', r.get('actor', ''))}->{r['dst']}" if "dst" in r else r.get("actor", "")
            out.write(f"{r['t']:>14.6f}  {p(r['event']):<9} {p(route):<28} {p(r.get('kind', '')):<10} {rest}\n")
        else:
            out.write(_safe_json(orjson.dumps(r).decode()) + "\n")
    return 0


def cmd_log_timeline(args) -> int:
    from netemu.logtools import timeline
    from netemu.terminal import printable

    notes: list[str] = []
    out = timeline(args.log, args.out, actors=args.actors, since=args.since, until=args.until, algorithm=args.algorithm,
                   run=args.run, max_messages=args.max_messages, notes=notes)
    print(out)
    for note in notes:
        print(f"  note: {printable(note)}")
    return 0


def cmd_log_diff(args) -> int:
    import json

    from netemu.logtools import diff

    d = diff(args.a, args.b)
    if d["identical"]:
        print("the logs are identical")
    else:
        f = d["first_difference"]
        print(f"first difference at line {f['line']}:\n  a: {json.dumps(f['a'])}\n  b: {json.dumps(f['b'])}")
    print(f"\n{'event':<14}{'a':>12}{'b':>12}{'b - a':>12}")
    for e, t in d["totals"].items():
        print(f"{e:<14}{t['a']:>12}{t['b']:>12}{t['b_minus_a']:>12}")
    return 0 if d["identical"] else 1


def cmd_plot(args) -> int:
    from netemu.report import plot_runs, plot_sweep

    fmt = "svg" if args.svg else "png"
    if args.x and args.x not in ("round", "time"):
        out = plot_sweep(args.runs[0], args.metric, args.x, args.out, fmt=fmt)
    else:
        out = plot_runs(args.runs, args.metric, args.out, fmt=fmt, x=args.x or "round")
    print(out)
    return 0


def cmd_report(args) -> int:
    from netemu.htmlreport import ReportError, Window, write_report

    if args.max_events < 1:
        raise ReportError(f"--max-events {args.max_events}: expected a positive number of events")
    if args.since is not None and args.until is not None and args.until < args.since:
        raise ReportError(f"--until {args.until} is before --since {args.since}: expected since <= until")
    window = Window(since=args.since, until=args.until, algorithm=args.algorithm, run=args.run, max_events=args.max_events)
    print(write_report(args.runs, args.out, window))
    return 0


def cmd_devices_import(args) -> int:
    from netemu.devices import DeviceError, from_fedscale, from_flgo, from_netemu_csv, write_devices

    if args.availability is None and not args.capacity:
        raise DeviceError("give --availability, --capacity or both")
    if args.format != "flgo" and args.capacity and len(args.capacity) > 1:
        raise DeviceError(f"--capacity: {args.format} takes one capacity file, got {len(args.capacity)}")
    capacity = args.capacity[0] if args.capacity and args.format != "flgo" else args.capacity
    if args.format == "fedscale":
        doc = from_fedscale(args.availability, capacity, args.time_scale, pairing=args.pairing,
                            periodic=args.periodic is not False, count=args.count)
    elif args.format == "flgo":
        doc = from_flgo(args.availability, capacity, args.time_scale, periodic=args.periodic is not False,
                        order=args.order, count=args.count)
    else:
        doc = from_netemu_csv(args.availability, capacity, args.time_scale, periodic=bool(args.periodic))
    write_devices(doc, args.out)
    periods = {d["period"] for d in doc["devices"] if "period" in d}
    repeat = f", repeating every {min(periods):g} s" if len(periods) == 1 else (", periodic" if periods else ", not periodic")
    print(f"{args.out}: {len(doc['devices'])} devices, horizon {doc['horizon']:g} s{repeat}")
    for note in doc.get("notes", []):
        print(f"  note: {note}")
    return 0


def cmd_sweep(args) -> int:
    import signal

    from netemu.errors import EXIT_COMPLETE, EXIT_FAILED, EXIT_INCOMPLETE, EXIT_TERMINATED
    from netemu.progress import progress as progress_display
    from netemu.sweep import TLS, SweepError, SweepInterrupted, parse_grid, sweep

    tls = None
    if args.tls_ca_file or args.tls_cert or args.tls_key:
        if not (args.tls_ca_file and args.tls_cert):
            raise SweepError("TLS needs --tls-ca-file and --tls-cert (and --tls-key unless the key is in the cert file)")
        tls = TLS(str(args.tls_ca_file), str(args.tls_cert), str(args.tls_key) if args.tls_key else None)
    if args.max_points < 1:
        raise SweepError(f"--max-points {args.max_points}: expected >= 1")
    terminated = []

    def on_term(signum, frame):  # SIGTERM stops a sweep like Ctrl-C (pending points cancelled, workers stopped)
        terminated.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        grid = parse_grid(args.grid, args.max_points)
        sc = load_scenario(args.scenario, args.overrides)
        _announce_script(sc, args)
        out = args.out or Path("runs") / f"{sc.name}-sweep"
        with progress_display(None, quiet=args.quiet, label="sweep", unit="run") as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.n = done
                bar.refresh()

            result = sweep(args.scenario, grid, out, base_overrides=args.overrides, executor=args.executor,
                           workers=args.workers, address=args.address, tls=tls, connect_timeout=args.connect_timeout,
                           rerun_stale=args.rerun_stale, progress=progress)
    except KeyboardInterrupt:  # before any point ran
        what = "terminated (SIGTERM)" if terminated else "interrupted"
        raise SweepInterrupted(f"sweep {what} before any point ran", EXIT_TERMINATED if terminated else None) from None
    except SweepInterrupted as exc:
        if terminated:
            raise SweepInterrupted(str(exc).replace("sweep interrupted", "sweep terminated (SIGTERM)"), EXIT_TERMINATED) from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    failed, incomplete, total = result.count("failed"), result.count("incomplete"), len(result.points)
    for name, p in result.points.items():
        if p.status != "complete" and not args.quiet:
            print(f"  {name}: {p.status}: {p.error}", file=sys.stderr)
    if not args.quiet:
        print(f"sweep folder: {out}\nsummary: {result.path}")
    line = f"{total} point{'s' if total != 1 else ''}: {total - failed - incomplete} complete, {incomplete} incomplete, {failed} failed"
    if failed or incomplete:
        print(f"netemu: sweep: {line} (see {result.path})", file=sys.stderr)
    elif not args.quiet:
        print(line)
    return EXIT_FAILED if failed else EXIT_INCOMPLETE if incomplete else EXIT_COMPLETE


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """netemu's own warnings as one plain line (`netemu: warning: ...`), others as Python shows them."""
    if category.__module__.startswith("netemu"):
        from netemu.terminal import printable

        return f"netemu: warning: {printable(message)}\n"
    return _python_format_warning(message, category, filename, lineno, line)


_python_format_warning = warnings.formatwarning


def main(argv: list[str] | None = None) -> int:
    from netemu.errors import NetemuError

    warnings.formatwarning = _format_warning
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader (e.g. `| head`) has gone: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except NetemuError as exc:  # the one family of errors meant for people (netemu/errors.py)
        from netemu.terminal import printable  # names from shared files never reach the terminal raw

        print("netemu: " + "\n".join(map(printable, str(exc).split("\n"))), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("\nnetemu: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
