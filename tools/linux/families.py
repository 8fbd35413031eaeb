"""The Linux kernel as referee of the ns-3 families that netns and tbf allow: uneven access rates,
staggered starts and whole FL rounds, behind FIFO queues.

This kernel has tbf, pfifo and bfifo but no netem, fq_codel, sfq or codel ("Specified qdisc kind is
unknown"): no delays, no random loss and no fair queue, so every family here is FIFO (each link
one tbf of `queue` full frames, as grid.py shapes it) with zero delays, on grid.py's star or a
tree of access points (tools/linux/README.md).  At zero delay a handshake and a slow start cost
next to nothing, so the streams here check how messages queue behind each other and share the
server link, not the round trips tools/ns3's streams family is about.

  uneven     up- and downloads from 8, 16, 32 clients x 100 kB, 1 MB over access links from
             10 Mbit/s down to 1 Mbit/s (client k at 10 x 10^(-k/(n-1)) Mbit/s)
  staggered  up- and downloads from 8, 16, 32 clients x 100 kB, 1 MB, each starting at a uniform
             time in [0, 50 ms) (the draws are stored under "starts")
  round      the server sends every client 100 kB or 1 MB and each client sends as much back the
             moment it is in (8, 16, 32 clients)
  stream     1 and 8 clients each send 10 or 50 messages of 2 kB or 20 kB back to back on one
             connection (tools/ns3/streams.py's family); every message's arrival is compared
  tree       two-level trees: 16 and 32 clients x 100 kB, 1 MB, up and down, behind access points of
             4 whose links to the router run at 20 Mbit/s (the access points are the bottleneck: 4 x
             10 Mbit/s behind each) or 100 Mbit/s (the server's 100 Mbit/s link is)

netemu runs each point with tools/ns3/queues.py's two models (`before`: max-min, reliable, fair and
unbounded; `after`: `qdisc = "fifo"` with every link's `queue_bytes` the tbf limit), at Linux's
200 ms minimum RTO.

    sudo python tools/linux/families.py --out tools/linux/reference-families.json   # about 10 minutes
    python tools/linux/families.py --compare tools/linux/reference-families.json
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path):
    """A tool module by its path, under its own name (tools/linux/grid.py and tools/ns3/grid.py share a file name)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


grid = _load("linux_grid", HERE / "grid.py")

FAMILIES = {  # fixed parameters, directions, axes
    "uneven": ({"accessSpread": 10.0}, ("up", "down"), {"clients": [8, 16, 32], "bytes": [100_000, 1_000_000]}),
    "staggered": ({"startSpread": 0.05}, ("up", "down"), {"clients": [8, 16, 32], "bytes": [100_000, 1_000_000]}),
    "round": ({}, ("round",), {"clients": [8, 16, 32], "bytes": [100_000, 1_000_000]}),
    "tree": ({"topology": "tree", "clientsPerAp": 4, "server": 100 * grid.MBIT}, ("up", "down"),
             {"clients": [16, 32], "bytes": [100_000, 1_000_000], "apRate": [20 * grid.MBIT, 100 * grid.MBIT]}),
    "stream": ({}, ("up",), {"clients": [1, 8], "messages": [10, 50], "bytes": [2_000, 20_000]}),
}


def points() -> list[dict]:
    out = []
    for family, (fixed, directions, axes) in FAMILIES.items():
        for direction, values in itertools.product(directions, itertools.product(*axes.values())):
            chosen = dict(zip(axes, values))
            name = f"{family}-{'' if direction == family else direction + '-'}" + "-".join(f"{k}={v}" for k, v in chosen.items())
            out.append({"name": name, **grid.BASE, **fixed, "direction": direction, **chosen})
    return out


def evaluate(reference: Path) -> list[tuple[dict, dict, dict[str, float | None]]]:
    """(point, the kernel's result, each netemu model's last completion) per point the kernel completed."""
    from netemu.engine.net.model import NetModel

    compare = _load("ns3_compare", HERE.parent / "ns3" / "compare.py")
    streams = _load("ns3_streams", HERE.parent / "ns3" / "streams.py")

    def last(p: dict, model: NetModel, starts: list[float] | None) -> float | None:
        if p.get("messages", 1) > 1:  # a stream: its last message's arrival
            return max(t for a in streams.run(p, model) for t in a)
        return compare.run(p, model, starts)

    rows = []
    for entry in json.loads(reference.read_text()):
        p, res = entry["point"], compare.result(entry)
        if res["last"] is None:
            continue
        base = {"sharing": "max-min", "transport": "reliable", "window": p["window"], "rto_min": compare.min_rto(entry)}
        models = {"before": NetModel(**base), "after": NetModel(**base, qdisc="fifo")}
        # the tbf limit counts 1514-byte frames; compare.run gives every link `queue` x 1500 bytes under fifo
        got: dict = {m: last(p, model, res.get("starts")) for m, model in models.items()}
        if p.get("messages", 1) > 1:  # every message's arrival, the transfers' in order (tools/ns3/streams.py)
            got["arrivals"] = ([t for a in res["arrivals"] for t in a], [t for a in streams.run(p, models["before"]) for t in a])
        rows.append((p, res, got))
    return rows


def report(rows: list[tuple[dict, dict, dict[str, float | None]]]) -> list[str]:
    def err(got: float | None, ref: float) -> str:
        return f"{got:8.3f} {(got - ref) / ref:+7.1%}" if got is not None else f"{'lost':>16}"

    lines = [f"{'point':<40} {'Linux (s)':>10} {'spread':>7} {'drops':>6}  {'before':>8} {'err':>7}  {'after':>8} {'err':>7}"]
    for p, res, got in rows:
        spread = res.get("last_spread")
        lines.append(f"{p['name']:<40} {res['last']:10.3f} {'-' if spread is None else f'{spread:.1%}':>7} "
                     f"{res['queue_drops']:6d}  {err(got['before'], res['last'])}  {err(got['after'], res['last'])}")
    lines.append(f"{'family':<10} {'points':>6}  {'before median':>13} {'p90':>7}  {'after median':>12} {'p90':>7}")
    for family in [*FAMILIES, "all"]:
        subset = [r for r in rows if family == "all" or r[0]["name"].startswith(family + "-")]
        cells = []
        for m in ("before", "after"):
            errs = sorted(abs(got[m] - res["last"]) / res["last"] for _, res, got in subset if got[m] is not None)
            p90 = errs[min(len(errs) - 1, int(0.9 * len(errs)))] if errs else None
            cells.append(f"{statistics.median(errs):13.1%} {p90:7.1%}" if errs else f"{'-':>13} {'-':>7}")
        lines.append(f"{family:<10} {len(subset):>6}  {cells[0]}  {cells[1]}")
    pairs = [pair for _, _, got in rows if "arrivals" in got for pair in zip(*got["arrivals"])]
    if pairs:
        errs = sorted(abs(ours - theirs) / theirs for theirs, ours in pairs)
        lines.append(f"stream: {len(errs)} messages; |error| of each message's arrival: median {statistics.median(errs):.1%}, "
                     f"p90 {errs[min(len(errs) - 1, int(0.9 * len(errs)))]:.1%}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", type=Path, help="compare netemu with these kernel results")
    args, rest = ap.parse_known_args(argv)
    if args.compare:
        print("\n".join(report(evaluate(args.compare))))
        return 0
    return grid.main(rest, points)


if __name__ == "__main__":
    sys.exit(main())
