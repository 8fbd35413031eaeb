"""Whole FL rounds and uneven access rates against ns-3, behind FIFO and FqCoDel queues.

The same two netemu models as tools/ns3/queues.py ("before": max-min, no queue; "after": the
referee's queue discipline), against `transfers.cc` run with `--qdisc fifo` and `--qdisc fqcodel`:

  round-star  a whole round: the server sends every client its model, and each client sends one
              back the instant its download is complete (`--direction round`; its own connection
              each way); the last upload's arrival counts.  8, 16, 64 clients x 100 kB, 1 MB (star)
  round-tree  the same through access points of 4 (100 Mbit/s AP links): 16, 64 clients
  uneven      uploads and downloads over uneven access links, client k's at 10 Mbit/s x 10^(-k/(n-1)),
              from 10 down to 1 Mbit/s (`--accessSpread 10`): 8, 16, 64 clients x 100 kB, 1 MB (star)

Everything else is grid.BASE: a 20 Mbit/s server link, 1 ms delays, 100-packet device queues,
ns-3's default TCP (Cubic, SACK, 1 s minimum RTO).  Without loss ns-3 has no randomness: one
run per point.

    sh tools/ns3/build.sh
    python tools/ns3/rounds.py --out tools/ns3/reference-rounds.json      # ns-3 (a few minutes on 2 cores)
    python tools/ns3/rounds.py --compare tools/ns3/reference-rounds.json  # netemu against it
    python tools/ns3/rounds.py --compare tools/ns3/reference-rounds.json --ns3  # and ns-3 through netemu
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grid  # noqa: E402  (tools/ns3/grid.py, by path)
import queues  # noqa: E402

FAMILIES = {  # fixed parameters, directions, axes
    "round-star": ({"topology": "star"}, ("round",), {"clients": [8, 16, 64], "bytes": [100_000, 1_000_000]}),
    "round-tree": ({"topology": "tree", "clientsPerAp": 4}, ("round",), {"clients": [16, 64], "bytes": [100_000, 1_000_000]}),
    "uneven": ({"topology": "star", "accessSpread": 10.0}, ("up", "down"),
               {"clients": [8, 16, 64], "bytes": [100_000, 1_000_000]}),
}


def points() -> list[dict]:
    out = []
    for family, (fixed, directions, axes) in FAMILIES.items():
        for qdisc, direction, values in itertools.product(queues.QDISCS, directions, itertools.product(*axes.values())):
            chosen = dict(zip(axes, values))
            name = f"{family}-{qdisc}-{direction}-" + "-".join(f"{k}={v}" for k, v in chosen.items())
            out.append({"name": name, **grid.BASE, **fixed, "direction": direction, "qdisc": qdisc, **chosen})
    return out


def main() -> int:
    return grid.family_main(__doc__, points, lambda reference, ns3: queues.report(queues.evaluate(reference, ns3), FAMILIES),
                            ns3='also run every point through netemu with engine = "ns3"')


if __name__ == "__main__":
    sys.exit(main())
