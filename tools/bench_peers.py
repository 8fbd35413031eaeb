"""Wall time of the peer-to-peer families on their papers' settings, emulated vs the
vectorized NumPy references (tests/references.py) in the same process:

* zCDP-NFL, elastic net with privacy noise (Fig. 3.1(a): 50 peers, 200 iterations);
* NPFL-RL with the stochastic actor-critic (Fig. 6.2: 30 peers, 200 iterations).

The emulated runs are the real thing: every model put on the wire (sized as msgpack
encodes it), routed over the peer graph and logged to a file; the references compute the
same iterations as whole-array operations (no network) — the floor for the emulator.
Reported per family (min of --reps): CPU and wall time of both, their ratios, the
messages sent and the largest difference between the models.

    python tools/bench_peers.py [--iterations 200] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import networkx as nx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

from benchtime import ratios, timed  # noqa: E402

from references import nfl as nfl_reference  # noqa: E402
from references import npfl as npfl_reference  # noqa: E402

from netemu.log import MessageLog  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.scenario.build import build_world  # noqa: E402


def emulate(scenario: str, algorithm: int, iterations: int, reps: int):
    sc = load_scenario(ROOT / "scenarios" / scenario, [f"run.rounds={iterations}", "run.runs=1"])
    with tempfile.TemporaryDirectory() as tmp:

        def setup():
            log = open(Path(tmp) / "messages.jsonl", "wb")
            return build_world(sc, algorithm, 0, log=MessageLog(log)), log

        def run(arg):
            world, log = arg
            with log:
                world.run()
            return world

        seconds = timed(run, reps, setup)
    world = seconds[2]
    names = sorted(world.actors, key=lambda k: int(k.split("-")[1]))
    adjacency = nx.to_numpy_array(nx.Graph(world.network.graph.to_undirected()), nodelist=names)
    return world, names, adjacency, seconds


def report(family, world, names, emulated, ref, reps):
    W, W_ref = np.array([world.actors[k].w for k in names]), ref[2][0]
    return {"family": family, "peers": len(names), "messages": world.network.message_counts()["total"]["sent"],
            **ratios(emulated, ref, reps), "max_model_difference": float(np.max(np.abs(W - W_ref)))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    T = args.iterations

    world, names, adjacency, emulated = emulate("zcdpnfl_fig3_1a.toml", 0, T, args.reps)
    state = world.actors[names[0]].state
    normals = lambda n: np.array([world.streams.generator(f"privacy/{k}/{n}").standard_normal(state.w_c.size) for k in names])
    ref = timed(lambda: nfl_reference([state.task.parts[k] for k in names], adjacency, state.p, state.objective, T, normals),
                args.reps)
    print(json.dumps(report("zcdp-nfl", world, names, emulated, ref, args.reps)))

    world, names, adjacency, emulated = emulate("npflrl_fig6_2.toml", 3, T, args.reps)  # npfl-rl-sac
    state = world.actors[names[0]].state
    draws = lambda k, n, epoch: world.streams.keyed(f"sac/{k}").uniform(n, epoch)
    ref = timed(lambda: npfl_reference(state.task, adjacency, names, state.p, T, draws), args.reps)
    print(json.dumps(report("npfl-rl-sac", world, names, emulated, ref, args.reps)))


if __name__ == "__main__":
    main()
