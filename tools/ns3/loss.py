"""The random-loss family against ns-3: bulk TCP transfers over access links that lose packets.

Each configuration (clients, bytes, access delay, loss rate, ns-3's TCP) runs with several
seeds in ns-3 (`transfers.cc --loss`: a per-packet RateErrorModel on each client's access
link, data direction) and in netemu (`sharing = "max-min"`, `transport = "reliable"`,
`rto_min` = ns-3's 1 s, a Bernoulli packet loss on the same links; one seed per run, as
ns-3's).  One seed's last completion time is mostly luck (whether a timeout struck), so the
comparison is of the medians over the seeds.  Two ns-3 stacks: its default (Cubic, SACK,
PRR) and NewReno without SACK, the TCP that Padhye et al.'s model describes.

    sh tools/ns3/build.sh
    python tools/ns3/loss.py --out tools/ns3/reference-loss.json     # ns-3 (a few minutes on 2 cores)
    python tools/ns3/loss.py --compare tools/ns3/reference-loss.json # netemu against it
    python tools/ns3/loss.py --compare tools/ns3/reference-loss.json --ns3   # and ns-3 through netemu

`--ns3` also runs every configuration through netemu with `engine = "ns3"` (the same TCP:
`congestion_control`, `sack`; one connection per transfer, each message exactly the point's bytes)
over the same eight seeds.  Its loss draws are ns-3's own streams, seeded from netemu's seed, not transfers.cc's:
the two agree in distribution, not run for run, so their medians over eight seeds differ by chance.
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

SEEDS = range(1, 9)
STACKS = {"cubic-sack": {"tcp": "cubic", "sack": True}, "newreno": {"tcp": "newreno", "sack": False}}
AXES = {"clients": [1, 8], "bytes": [100_000, 1_000_000], "accessDelay": [0.001, 0.010], "loss": [0.005, 0.01, 0.02]}


def configs() -> list[dict]:
    """The family's configurations, each a grid point without its seed."""
    out = []
    for stack, (clients, nbytes, delay, loss) in itertools.product(STACKS, itertools.product(*AXES.values())):
        name = f"loss-{stack}-clients={clients}-bytes={nbytes}-accessDelay={delay:g}-loss={loss:g}"
        out.append({"name": name, **grid.BASE, "clients": clients, "bytes": nbytes, "accessDelay": delay, "loss": loss, **STACKS[stack]})
    return out


def points() -> list[dict]:
    return [{**c, "name": f"{c['name']}-seed={s}", "seed": s} for c in configs() for s in SEEDS]


def evaluate(reference: Path, ns3_engine: bool = False) -> list[tuple]:
    """(configuration, ns-3's median last completion, netemu's median[, ns-3 through netemu's median, or
    None]) per configuration."""
    by_config: dict[str, list[tuple[dict, float | None]]] = {}
    for entry in json.loads(reference.read_text()):
        p = entry["point"]
        by_config.setdefault(p["name"].rsplit("-seed=", 1)[0], []).append((p, entry["ns3"]["last"]))
    rows = []
    for name, runs in by_config.items():
        ns3 = [t for _, t in runs if t is not None]
        ours = [compare.run(p, compare.MODELS["netemu"](p, 1.0)) for p, _ in runs]
        if len(ns3) == len(runs) and all(t is not None for t in ours):
            row = ({**runs[0][0], "name": name}, statistics.median(ns3), statistics.median(ours))  # type: ignore[type-var]
            if ns3_engine:
                engine = [compare.run(p, compare.NS3(p), exact=True) for p, _ in runs]
                row += (statistics.median(engine) if engine and None not in engine else None,)  # type: ignore[type-var]
            rows.append(row)
    return rows


def report(rows: list[tuple]) -> list[str]:
    lines = [f"{'configuration':<72} {'ns-3':>8} {'netemu':>8} {'error':>8}" + ("  ns-3 via netemu   error  netemu vs it" if rows and len(rows[0]) > 3 else "")]
    for p, ns3, ours, *engine in rows:
        line = f"{p['name']:<72} {ns3:8.3f} {ours:8.3f} {(ours - ns3) / ns3:+8.1%}"
        if engine and engine[0] is not None:
            line += f"  {engine[0]:16.3f} {(engine[0] - ns3) / ns3:+7.1%} {(ours - engine[0]) / engine[0]:+13.1%}"
        lines.append(line)
    for stack in STACKS:
        errs = sorted(abs(o - n) / n for p, n, o, *_ in rows if p["name"].startswith(f"loss-{stack}-"))
        if errs:
            p90 = errs[min(len(errs) - 1, int(0.9 * len(errs)))]
            lines.append(f"{stack}: {len(errs)} configurations; |error| of the median last completion: "
                         f"median {statistics.median(errs):.1%}, p90 {p90:.1%}, max {errs[-1]:.1%}")
    for title, pairs in (("ns-3 through netemu against transfers.cc", [(e[0], n) for _, n, _, *e in rows if e and e[0] is not None]),
                         ("netemu (flow model) against ns-3 through netemu", [(o, e[0]) for _, _, o, *e in rows if e and e[0] is not None])):
        errs = sorted(abs(a - b) / b for a, b in pairs)
        if errs:
            p90 = errs[min(len(errs) - 1, int(0.9 * len(errs)))]
            lines.append(f"{title}: {len(errs)} configurations; |error| of the median last completion: "
                         f"median {statistics.median(errs):.1%}, p90 {p90:.1%}, max {errs[-1]:.1%}")
    return lines


def main() -> int:
    return grid.family_main(__doc__, points, lambda reference, ns3: report(evaluate(reference, ns3)),
                            ns3='also run every configuration through netemu with engine = "ns3"')


if __name__ == "__main__":
    sys.exit(main())
