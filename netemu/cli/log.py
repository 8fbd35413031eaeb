"""`netemu log summary|filter|timeline|diff|export`: a message log on the terminal, a timeline image, or tables."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    log = sub.add_parser("log", help="inspect a message log (a run folder, a messages.jsonl or a messages.arrows)")
    log_sub = log.add_subparsers(dest="log_command", required=True, metavar="SUBCOMMAND")
    summary = log_sub.add_parser("summary", help="traffic per message kind and link class, delay percentiles, slowest links and actors")
    summary.add_argument("log", type=Path, help="run folder, messages.jsonl or messages.arrows")
    summary.add_argument("--json", action="store_true", help="print JSON instead of a table")
    summary.add_argument("--top", type=int, default=5, help="how many slowest links and actors (default 5)")
    summary.add_argument("--algorithm", help="only this algorithm's records")
    summary.add_argument("--run", type=int, help="only this Monte Carlo run's records")
    summary.add_argument("--per-run", action="store_true", help="an actor table per algorithm and run (default: the mean over them)")
    summary.set_defaults(func=cmd_log_summary)
    filt = log_sub.add_parser("filter", help="print the records matching every condition given")
    filt.add_argument("log", type=Path, help="run folder, messages.jsonl or messages.arrows")
    for name, kind in (("src", str), ("dst", str), ("kind", str), ("round", int), ("since", float), ("until", float),
                       ("event", str), ("actor", str), ("algorithm", str), ("run", int)):
        filt.add_argument(f"--{name}", type=kind, help="an actor as src, dst or actor" if name == "actor" else None)
    filt.add_argument("--table", action="store_true", help="a readable table instead of JSON lines")
    filt.set_defaults(func=cmd_log_filter)
    tl = log_sub.add_parser("timeline", help="a swim-lane PNG: arrows from send to delivery, crosses for drops, compute spans")
    tl.add_argument("log", type=Path, help="run folder, messages.jsonl or messages.arrows")
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
    ex = log_sub.add_parser("export", help="the log as tables with a fixed schema (Parquet, Arrow, CSV), or metrics.csv for TensorBoard")
    ex.add_argument("log", type=Path, help="run folder, messages.jsonl or messages.arrows")
    ex.add_argument("--format", choices=("parquet", "arrow", "csv", "tensorboard"), default="parquet",
                    help="parquet (default), arrow (IPC file), csv: one file per table; tensorboard: metrics.csv as event files")
    ex.add_argument("--out", type=Path, help="folder to write into (default: export/ beside the log, tensorboard/ for tensorboard)")
    ex.set_defaults(func=cmd_log_export)


def cmd_log_summary(args) -> int:
    import json

    from netemu.report.logtools import summarize
    from netemu.terminal import printable as p

    s = summarize(args.log, top=args.top, algorithm=args.algorithm, run=args.run)
    if not s["records"] and (args.algorithm is not None or args.run is not None):  # an option that selects nothing
        from netemu.errors import LogError

        chosen = " ".join(f"--{k} {v!r}" for k, v in (("algorithm", args.algorithm), ("run", args.run)) if v is not None)
        raise LogError(f"{chosen}: no record of it in {args.log}")
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    first, last = s["virtual_time"]["first"], s["virtual_time"]["last"]
    print(f"{s['records']} records of {s['runs']} algorithm/run pair(s), virtual time {first} .. {last}")
    groups = s["traffic_by_algorithm"] if len(s["traffic_by_algorithm"]) > 1 else {"": s["traffic"]}
    for alg, traffic in groups.items():
        _traffic_table(traffic, f"algorithm {p(alg)}" if alg else "")
    print("(delay percentiles from a streaming sketch, within 1 % of the exact order statistic; max exact)")
    if s["unused_by_algorithm"]:
        print(f"\n{'delivered, not used':<28}{'kind':<16}  by reason")
        for alg, kinds in s["unused_by_algorithm"].items():
            for kind, reasons in kinds.items():
                print(f"{p(alg):<28}{p(kind):<16}  " + ", ".join(f"{p(r)} {n}" for r, n in reasons.items()))
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


def _traffic_table(traffic: dict, title: str) -> None:
    """The traffic per kind / link class, then what the network did to it (retransmissions, ...)."""
    from netemu.terminal import printable as p

    if title:
        print(f"\n{title}:")
    print(f"\n{'kind / link class':<28}{'sent':>9}{'deliv.':>9}{'dropped':>9}{'in fl.':>8}{'bytes':>12}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}  drops")
    for name, t in traffic.items():
        d = t["delay"] or dict.fromkeys(("p50", "p90", "p99", "max"), float("nan"))
        reasons = ", ".join(f"{p(k)} {v}" for k, v in t["dropped_by_reason"].items())
        print(f"{p(name):<28}{t['sent']:>9}{t['delivered']:>9}{t['dropped']:>9}{t['in_flight']:>8}{t['bytes']:>12}"
              f"{d['p50']:>9.3g}{d['p90']:>9.3g}{d['p99']:>9.3g}{d['max']:>9.3g}  {reasons}")
    print(f"\n{'network':<28}{'retrans.':>9}{'att./msg':>9}{'max att.':>9}{'timeouts':>9}{'queue dr.':>10}{'dupl.':>8}")
    for name, t in traffic.items():
        n = t["network"]
        per = n["attempts_per_message"]
        print(f"{p(name):<28}{n['retransmissions']:>9}{(per if per is not None else float('nan')):>9.3f}{n['max_attempts']:>9}"
              f"{n['timeouts']:>9}{n['queue_drops']:>10}{n['duplicates']:>8}")


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

    from netemu.report.logtools import filter_records
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
    from netemu.cli.common import finite_window
    from netemu.errors import LogError
    from netemu.report.logtools import timeline
    from netemu.terminal import printable

    finite_window(args, LogError)
    notes: list[str] = []
    out = timeline(args.log, args.out, actors=args.actors, since=args.since, until=args.until, algorithm=args.algorithm,
                   run=args.run, max_messages=args.max_messages, notes=notes)
    print(out)
    for note in notes:
        print(f"  note: {printable(note)}")
    return 0


def cmd_log_diff(args) -> int:
    import json

    from netemu.report.logtools import diff

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



def cmd_log_export(args) -> int:
    from netemu.report.export import export_log, export_tensorboard
    from netemu.report.logtools import log_path
    from netemu.terminal import printable

    if args.format == "tensorboard":
        folder = args.log if args.log.is_dir() else args.log.parent
        written = export_tensorboard(folder, args.out or folder / "tensorboard")
        what = "scalars"
    else:
        written = export_log(args.log, args.out or log_path(args.log).parent / "export", args.format)
        what = "rows"
    for w in written:
        print(f"{printable(str(w.path))}  {w.rows} {what}")
    return 0
