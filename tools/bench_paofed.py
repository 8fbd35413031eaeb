"""Wall time of PAO-Fed-U1 on the default scenario (K = 256, 2000 iterations), emulated
vs the vectorized NumPy reference (tests/references.py) in the same process.

The emulated run is the real thing: every partial message encoded, routed through
delaying links, logged to a file.  The reference computes the same algorithm on the
same data and availability draws as whole-array operations, without delays (it has
no network) — the floor for the emulator.  Reported: both wall times and their ratio.

    python tools/bench_paofed.py [--iterations 2000]
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

from references import online_fl as reference  # noqa: E402

from netemu.kernels.online import rff  # noqa: E402
from netemu.log import MessageLog  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.scenario.build import build_world  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    sc = load_scenario(ROOT / "scenarios" / "paofed_fig4_2a.toml", [f"run.rounds={args.iterations}", "run.runs=1"])
    u1 = [a["label"] for a in sc.table["algorithm"]].index("pao-fed-u1")
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "messages.jsonl", "wb") as log:
        world = build_world(sc, u1, 0, log=MessageLog(log))
        t0 = time.perf_counter()
        world.run()
        emulated = time.perf_counter() - t0
    state = world.actors["server"].state
    params, data = state.p, state.data
    draws = world.streams.keyed("participation")
    nodes = world.network.nodes
    # the environment's availability draws, drawn before timing (they are not the algorithm's work)
    avail = np.array([[draws.uniform(c, n) < nodes[c].participation for c in data.clients] for n in range(args.iterations)])
    available = avail.__getitem__
    omega, phase = rff(4, params.rff_dim, params.kernel_width, world.streams.generator("rff"))
    t0 = time.perf_counter()
    reference(data, params, args.iterations, available, omega, phase, data.test)
    ref = time.perf_counter() - t0
    counts = world.network.message_counts()["total"]
    print(json.dumps({
        "clients": len(data.clients), "iterations": args.iterations, "messages": counts["sent"],
        "emulated_s": round(emulated, 2), "reference_s": round(ref, 2), "ratio": round(emulated / ref, 1),
    }))


if __name__ == "__main__":
    main()
