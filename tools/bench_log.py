"""`netemu log summary` on a 1,000,000-record message log.

The log comes from a real emulation (a server and 255 clients exchanging models over
delaying, lossy links).  Reported against a reference measured in the same run: the
bare floor of reading the file and parsing every line with orjson.  CPU and wall
time, min of --reps.

--arrow writes the same run's log a second time as an Arrow log (`output.log_format =
"arrow"`, messages.arrows) and times the summary of each beside the other, alternately, with
both files' sizes; the summaries must be equal.

    python tools/bench_log.py [--records 1000000] [--keep FILE] [--reps 3] [--arrow]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_net import Client, Server  # noqa: E402
from benchtime import timed  # noqa: E402

from netemu import Bernoulli, Exponential, Link, MessageLog, World, star  # noqa: E402
from netemu.logarrow import ArrowSink  # noqa: E402
from netemu.report.logtools import summarize  # noqa: E402


def make_log(path: Path, records: int, arrow: bool = False) -> int:
    g = star(255)
    links = {e: Link(Exponential(0.01), loss=Bernoulli(0.01), link_class=g.edges[e]["link_class"]) for e in g.edges}
    with open(path, "wb") as f:
        log = MessageLog(ArrowSink(f) if arrow else f)
        world = World(g, seed=1, links=links, log=log)
        world.add(Server("server", rounds=records // (4 * 255) + 1))
        for k in range(255):
            world.add(Client(f"client-{k}"))
        world.run()
        log.close()
        return log.records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="write the log here instead of a temporary file")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--arrow", action="store_true", help="also as an Arrow log: the two summaries side by side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "messages.jsonl"
        n = make_log(path, args.records)

        def parse() -> None:
            with open(path, "rb") as f:
                for line in f:
                    orjson.loads(line)

        floor = timed(parse, args.reps)
        took = timed(lambda: summarize(path), args.reps)
        if args.arrow:
            arrows = path.with_name("messages.arrows")
            make_log(arrows, args.records, arrow=True)
            if summarize(arrows) != summarize(path):
                raise SystemExit("the Arrow log's summary differs from the JSON lines'")
            best = {"jsonl": [float("inf")] * 2, "arrow": [float("inf")] * 2}
            for _ in range(args.reps):  # alternately, one each
                for name, p in (("jsonl", path), ("arrow", arrows)):
                    cpu, wall, _ = timed(lambda p=p: summarize(p), 1)
                    best[name] = [min(best[name][0], cpu), min(best[name][1], wall)]
            print(json.dumps({"records": n, "reps": args.reps, "jsonl_mib": round(path.stat().st_size / 2**20, 1),
                              "arrow_mib": round(arrows.stat().st_size / 2**20, 1),
                              **{f"summary_{k}_cpu_s": round(v[0], 2) for k, v in best.items()},
                              "arrow_vs_jsonl_cpu": round(best["arrow"][0] / best["jsonl"][0], 2)}))
            return
        print(json.dumps({"records": n, "mib": round(path.stat().st_size / 2**20, 1), "reps": args.reps,
                          "summary_cpu_s": round(took[0], 2), "summary_wall_s": round(took[1], 2),
                          "parse_only_cpu_s": round(floor[0], 2), "parse_only_wall_s": round(floor[1], 2),
                          "ratio_cpu": round(took[0] / floor[0], 2), "ratio_wall": round(took[1] / floor[1], 2)}))


if __name__ == "__main__":
    main()
