"""`netemu log summary` on a 1,000,000-record message log.

The log comes from a real emulation (a server and 255 clients exchanging models over
delaying, lossy links).  Reported against a reference measured in the same run: the
bare floor of reading the file and parsing every line with orjson.

    python tools/bench_log.py [--records 1000000] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_net import Client, Server  # noqa: E402

from netemu import Bernoulli, Exponential, Link, MessageLog, World, star  # noqa: E402
from netemu.logtools import summarize  # noqa: E402


def make_log(path: Path, records: int) -> int:
    g = star(255)
    links = {e: Link(Exponential(0.01), loss=Bernoulli(0.01), link_class=g.edges[e]["link_class"]) for e in g.edges}
    with open(path, "wb") as f:
        log = MessageLog(f)
        world = World(g, seed=1, links=links, log=log)
        world.add(Server("server", rounds=records // (4 * 255) + 1))
        for k in range(255):
            world.add(Client(f"client-{k}"))
        world.run()
        return log.records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="write the log here instead of a temporary file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "messages.jsonl"
        n = make_log(path, args.records)
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            for line in f:
                orjson.loads(line)
        floor = time.perf_counter() - t0
        t0 = time.perf_counter()
        summarize(path)
        took = time.perf_counter() - t0
        print(json.dumps({"records": n, "mib": round(path.stat().st_size / 2**20, 1), "summary_s": round(took, 2),
                          "parse_only_s": round(floor, 2), "ratio": round(took / floor, 2)}))


if __name__ == "__main__":
    main()
