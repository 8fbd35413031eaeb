"""Wall time of PGFL on the setting of Fig. 5.1(a) (10 servers × 15 clients, every client
every iteration, no privacy), emulated vs the vectorized NumPy reference
(tests/references.py) in the same process.

The emulated run is the real thing: every model put on the wire (sized as msgpack
encodes it), routed over the multi-server graph, logged to a file.  The reference
computes the same iterations as whole-array operations (it has no network) — the floor
for the emulator.  Reported (min of --reps): CPU and wall time of both, their ratios,
and the largest difference between the two sets of client models.

    python tools/bench_pgfl.py [--iterations 100] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

from benchtime import ratios, timed  # noqa: E402

from references import pgfl as reference  # noqa: E402

from netemu.log import MessageLog  # noqa: E402
from netemu.engine.net.topology import random_connected_graph  # noqa: E402
from netemu.engine.rng import Streams  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.scenario.build import build_world, run_seed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    sc = load_scenario(ROOT / "scenarios" / "pgfl_fig5_1a.toml", [f"run.rounds={args.iterations}", "run.runs=1"])
    with tempfile.TemporaryDirectory() as tmp:

        def setup():
            log = open(Path(tmp) / "messages.jsonl", "wb")
            return build_world(sc, 0, 0, log=MessageLog(log)), log

        def emulate(arg):
            world, log = arg
            with log:
                world.run()
            return world

        emulated = timed(emulate, args.reps, setup)
    world = emulated[2]
    state = world.actors["server-0"].state
    topo = sc.settings.topology.params
    server_graph = random_connected_graph(topo["servers"], topo["server_degree"],
                                          Streams(run_seed(sc.settings.run.seed, 0)).generator("topology"))
    ref = timed(lambda: reference(state.task, state.server_of, server_graph, state.p, args.iterations), args.reps)
    W = ref[2][0]
    counts = world.network.message_counts()["total"]
    print(json.dumps({
        "clients": len(state.clients), "iterations": args.iterations, "messages": counts["sent"],
        **ratios(emulated, ref, args.reps),
        "max_model_difference": float(np.max(np.abs(W - state.W))),
    }))


if __name__ == "__main__":
    main()
