"""The queue families against ns-3: FIFO device queues against FqCoDel, slow starts that overflow
a server link, two-level trees and staggered starts.

Every configuration runs in ns-3 twice (`transfers.cc --qdisc fifo`: device DropTail queues of
`queue` packets only; `--qdisc fqcodel`: ns-3's default FqCoDel queue disc kept in front of them)
and in netemu under two models, each against both:

  before  sharing = "max-min", transport = "reliable", ns-3's 1 s minimum RTO: links shared fairly,
          no queue (what netemu did before qdisc existed)
  after   the same with the referee's queue discipline: qdisc = "fifo" and every link's queue_bytes
          the device queue (`queue` packets of 1500 bytes) against ns-3's FIFO; qdisc = "fair" with
          no bound against FqCoDel (whose 10,240-packet limit these transfers never reach)

Families (star and tree behind one 20 Mbit/s server link, 10 Mbit/s access links, 1 ms delays,
100-packet device queues, up- and downloads, ns-3's default TCP):

  overflow   8, 16, 64 clients x 10 kB, 100 kB, 1 MB, all starting at t = 0 (star)
  tree       16, 64 clients x 100 kB, 1 MB through access points of 4 (100 Mbit/s AP links)
  staggered  16, 64 clients x 100 kB, 1 MB, each starting at a uniform time in [0, 50 ms) (star)
  newreno    the overflow family with ns-3's TcpNewReno (`--tcp newreno`), against netemu's
             congestion_control = "newreno" (no HyStart; a loss halves the window)

Without loss ns-3 has no randomness (the staggered starts are its seeded draw): one run per point.
With `--ns3` every point also runs through netemu with engine = "ns3" (`qdisc` the point's: "fifo" or
"fair", i.e. FqCoDel; compare.NS3), against transfers.cc and as the referee of `after`.

    sh tools/ns3/build.sh
    python tools/ns3/queues.py --out tools/ns3/reference-queues.json      # ns-3 (a few minutes on 2 cores)
    python tools/ns3/queues.py --compare tools/ns3/reference-queues.json  # netemu against it
    python tools/ns3/queues.py --compare tools/ns3/reference-queues.json --ns3   # ... and ns-3 through netemu
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import compare  # noqa: E402  (tools/ns3/compare.py, by path)
import grid  # noqa: E402

from netemu.engine.net.model import NetModel  # noqa: E402

QDISCS = ("fifo", "fqcodel")
DIRECTIONS = ("up", "down")
FAMILIES = {
    "overflow": ({"topology": "star"}, {"clients": [8, 16, 64], "bytes": [10_000, 100_000, 1_000_000]}),
    "tree": ({"topology": "tree", "clientsPerAp": 4}, {"clients": [16, 64], "bytes": [100_000, 1_000_000]}),
    "staggered": ({"topology": "star", "startSpread": 0.05}, {"clients": [16, 64], "bytes": [100_000, 1_000_000]}),
    # the overflow family again with ns-3's TcpNewReno (no HyStart; netemu: congestion_control = "newreno")
    "newreno": ({"topology": "star", "tcp": "newreno"}, {"clients": [8, 16, 64], "bytes": [10_000, 100_000, 1_000_000]}),
}


def points() -> list[dict]:
    out = []
    for family, (fixed, axes) in FAMILIES.items():
        for qdisc, direction, values in itertools.product(QDISCS, DIRECTIONS, itertools.product(*axes.values())):
            chosen = dict(zip(axes, values))
            name = f"{family}-{qdisc}-{direction}-" + "-".join(f"{k}={v}" for k, v in chosen.items())
            out.append({"name": name, **grid.BASE, **fixed, "direction": direction, "qdisc": qdisc, **chosen})
    return out


def models(p: dict) -> dict[str, NetModel]:
    base = {"sharing": "max-min", "transport": "reliable", "window": p["window"], "rto_min": 1.0,
            "congestion_control": p.get("tcp", "cubic")}
    return {"before": NetModel(**base), "after": NetModel(**base, qdisc="fifo" if p["qdisc"] == "fifo" else "fair")}


def evaluate(reference: Path, ns3_engine: bool = False) -> list[tuple[dict, dict, dict[str, float | None]]]:
    """(point, ns-3's result, each model's last completion, and with `ns3_engine` ns-3 through netemu's as
    "ns3") per point ns-3 completed."""
    rows = []
    for entry in json.loads(reference.read_text()):
        p, ns3 = entry["point"], entry["ns3"]
        if ns3["last"] is None:
            continue
        starts = ns3.get("starts") if p.get("startSpread") else None
        got = {m: compare.run(p, model, starts) for m, model in models(p).items()}
        if ns3_engine:
            got["ns3"] = compare.run(p, compare.NS3(p), starts, exact=True)
        rows.append((p, ns3, got))
    return rows


def _p90(errs: list[float]) -> float:
    return errs[min(len(errs) - 1, int(0.9 * len(errs)))]


def _errors(pairs: list[tuple[float | None, float | None]]) -> list[float]:
    return sorted(abs(a - b) / b for a, b in pairs if a is not None and b is not None)


def report(rows: list[tuple[dict, dict, dict[str, float | None]]], families=FAMILIES) -> list[str]:
    engine = bool(rows) and "ns3" in rows[0][2]
    cols = ("before", "after", "ns3") if engine else ("before", "after")
    lines = [f"{'point':<58} {'ns-3 (s)':>10} {'drops':>6}  {'before':>8} {'err':>7}  {'after':>8} {'err':>7}"
             + (f"  {'via netemu':>10} {'err':>7}" if engine else "")]
    for p, ns3, got in rows:
        cells = "  ".join(f"{got[m]:8.3f} {(got[m] - ns3['last']) / ns3['last']:+7.1%}" if got[m] is not None else f"{'lost':>16}"  # type: ignore[operator]
                          for m in cols)
        lines.append(f"{p['name']:<58} {ns3['last']:9.3f}{'*' if compare.stalled(ns3) else ' '} {ns3['queue_drops']:6d}  {cells}")
    lines.append(f"{'family':<10} {'qdisc':<8} {'points':>6}  {'before median':>13} {'p90':>7}  {'after median':>12} {'p90':>7}"
                 + (f"  {'via netemu':>10} {'p90':>7}  {'after vs via':>12} {'p90':>7}" if engine else ""))
    for family, qdisc in itertools.product([*families, "all"], QDISCS):
        subset = [(p, ns3, got) for p, ns3, got in rows if p["qdisc"] == qdisc and (family == "all" or p["name"].startswith(family + "-"))]
        cells = []
        columns = [[(got[m], ns3["last"]) for _, ns3, got in subset] for m in cols]
        if engine:  # the flow model (after) against ns-3 through netemu
            columns.append([(got["after"], got["ns3"]) for _, _, got in subset])
        for pairs in columns:
            errs = _errors(pairs)
            cells.append(f"{statistics.median(errs):13.1%} {_p90(errs):7.1%}" if errs else f"{'-':>13} {'-':>7}")
        lines.append(f"{family:<10} {qdisc:<8} {len(subset):>6}  " + "  ".join(cells))
    return lines


def main() -> int:
    return grid.family_main(__doc__, points, lambda reference, ns3: report(evaluate(reference, ns3)),
                            ns3='also run every point through netemu with engine = "ns3"')


if __name__ == "__main__":
    sys.exit(main())
