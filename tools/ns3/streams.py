"""Streams of small messages against ns-3: each client sends M messages back to back on one
TCP connection (`transfers.cc --messages M`), and each message's arrival is compared.

netemu sends the same messages at t = 0 under `sharing = "max-min"`, `transport = "reliable"`
(ns-3's minimum RTO of 1 s) twice: with `connection = "persistent"` (one connection per pair,
as ns-3's single socket) and `"per-message"` (a connection each).  Without loss ns-3 has no
randomness: one run per configuration.

    sh tools/ns3/build.sh
    python tools/ns3/streams.py --out tools/ns3/reference-streams.json     # ns-3 (about a minute)
    python tools/ns3/streams.py --compare tools/ns3/reference-streams.json # netemu against it
    python tools/ns3/streams.py --compare tools/ns3/reference-streams.json --ns3   # and ns-3 through netemu

`--ns3` adds ns-3 itself run through netemu (`engine = "ns3"`, one persistent connection per pair as
transfers.cc's one socket, each message exactly the point's bytes, envelope included).
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from pathlib import Path

import msgpack

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import compare  # noqa: E402  (tools/ns3/compare.py, by path)
import grid  # noqa: E402

from netemu import World  # noqa: E402
from netemu.engine.net.model import NetModel  # noqa: E402

AXES = {"clients": [1, 8], "messages": [10, 50], "bytes": [2_000, 20_000], "accessDelay": [0.001, 0.010]}
MODELS = {c: (lambda p, c=c: NetModel(sharing="max-min", transport="reliable", window=p["window"], rto_min=1.0, connection=c))
          for c in ("persistent", "per-message")}


def points() -> list[dict]:
    out = []
    for clients, messages, nbytes, delay in itertools.product(*AXES.values()):
        name = f"stream-clients={clients}-messages={messages}-bytes={nbytes}-accessDelay={delay:g}"
        out.append({"name": name, **grid.BASE, "clients": clients, "messages": messages, "bytes": nbytes, "accessDelay": delay})
    return out


def run(p: dict, model: NetModel, exact: bool = False) -> list[list[float]]:
    """Per transfer, the virtual times at which netemu delivers its messages, in arrival order."""
    g, links, pairs = compare.topology(p)
    world = World(g, seed=p.get("seed", 1), links=links, model=model)
    net = world.network
    arrivals: dict[str, list[float]] = {src: [] for src, _ in pairs}
    for _, dst in pairs:
        net.connect(dst, lambda m: arrivals[m.src].append(m.delivered_at) and None)
    payload = msgpack.packb(bytes(p["bytes"]))
    for k, (src, dst) in enumerate(pairs):
        for i in range(p["messages"]):
            data = compare.exact_payload(p["bytes"], k * p["messages"] + i, src, dst, 0.0, "message", i) if exact else payload
            world.at(0.0, lambda s=src, d=dst, i=i, b=data: net.send(s, d, "message", i, b))
    world.env.run()
    return [sorted(arrivals[src]) for src, _ in pairs]


def evaluate(reference: Path) -> list[tuple[dict, list[float], dict[str, list[float]]]]:
    """(point, ns-3's arrivals, each model's arrivals), every transfer's messages pooled in order."""
    rows = []
    for entry in json.loads(reference.read_text()):
        p, ns3 = entry["point"], entry["ns3"]
        if ns3["last"] is None:
            continue
        ours = {m: [t for a in run(p, make(p), exact=m == "ns3") for t in a] for m, make in MODELS.items()}
        rows.append((p, [t for a in ns3["arrivals"] for t in a], ours))
    return rows


def report(rows) -> list[str]:
    lines = [f"{'configuration':<58} {'ns-3 med':>9} {'last':>7}  " + "  ".join(f"{m + ' med':>16} {'last':>7}" for m in MODELS)]
    errs: dict[str, list[float]] = {m: [] for m in MODELS}
    lasts: dict[str, list[float]] = {m: [] for m in MODELS}
    for p, ns3, ours in rows:
        cells = []
        for m in MODELS:
            e = [abs(o - n) / n for o, n in zip(ours[m], ns3)]
            errs[m] += e
            lasts[m].append(abs(ours[m][-1] - ns3[-1]) / ns3[-1])
            cells.append(f"{statistics.median(ours[m]):9.3f} {(statistics.median(ours[m]) - statistics.median(ns3)) / statistics.median(ns3):+6.1%}"
                         f" {ours[m][-1]:7.3f}")
        lines.append(f"{p['name']:<58} {statistics.median(ns3):9.3f} {ns3[-1]:7.3f}  " + "  ".join(cells))
    for m in MODELS:
        e = sorted(errs[m])
        lines.append(f"{m}: {len(e)} messages in {len(rows)} configurations; |error| of each message's arrival: median "
                     f"{statistics.median(e):.1%}, p90 {e[int(0.9 * len(e))]:.1%}; of the last: median {statistics.median(lasts[m]):.1%}")
    return lines


def main() -> int:
    def compare(reference: Path, ns3: bool) -> list[str]:
        if ns3:
            MODELS["ns3"] = lambda p: NetModel(engine="ns3", transport="reliable", window=p["window"], rto_min=1.0, queue_packets=p["queue"],
                                                 qdisc="fifo")
        return report(evaluate(reference))

    return grid.family_main(__doc__, points, compare, ns3='also run every configuration through netemu with engine = "ns3"')


if __name__ == "__main__":
    sys.exit(main())
