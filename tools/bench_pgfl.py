"""Wall time of PGFL on the setting of Fig. 5.1(a) (10 servers × 15 clients, every client
every iteration, no privacy), emulated vs the vectorized NumPy reference
(tests/references.py) in the same process.

The emulated run is the real thing: every model encoded, routed over the multi-server
graph, logged to a file.  The reference computes the same iterations as whole-array
operations (it has no network) — the floor for the emulator.  Reported: both wall
times, their ratio, and the largest difference between the two sets of client models.

    python tools/bench_pgfl.py [--iterations 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from references import pgfl as reference  # noqa: E402

from netemu.log import MessageLog  # noqa: E402
from netemu.net.topology import random_connected_graph  # noqa: E402
from netemu.rng import Streams  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.scenario.build import build_world, run_seed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    sc = load_scenario(ROOT / "scenarios" / "pgfl_fig5_1a.toml", [f"run.rounds={args.iterations}", "run.runs=1"])
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "messages.jsonl", "wb") as log:
        world = build_world(sc, 0, 0, log=MessageLog(log))
        t0 = time.perf_counter()
        world.run()
        emulated = time.perf_counter() - t0
    state = world.actors["server-0"].state
    topo = sc.table["topology"]
    server_graph = random_connected_graph(topo["servers"], topo["server_degree"],
                                          Streams(run_seed(sc.table["run"]["seed"], 0)).generator("topology"))
    t0 = time.perf_counter()
    W, _ = reference(state.task, state.server_of, server_graph, state.p, args.iterations)
    ref = time.perf_counter() - t0
    counts = world.network.message_counts()["total"]
    print(json.dumps({
        "clients": len(state.clients), "iterations": args.iterations, "messages": counts["sent"],
        "emulated_s": round(emulated, 2), "reference_s": round(ref, 2), "ratio": round(emulated / ref, 1),
        "max_model_difference": float(np.max(np.abs(W - state.W))),
    }))


if __name__ == "__main__":
    main()
