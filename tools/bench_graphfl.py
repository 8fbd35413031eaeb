"""Wall time of FedPnP (soft denoiser) on the Table 1 setting (20 clients, Dir(0.2)
digits, softmax model, 5 local epochs), emulated vs the vectorized NumPy reference
(tests/references.py) in the same process.

The emulated run is the real thing: every model and update encoded, routed over the
star, logged to a file; the reference runs all clients' SGD as batched array
operations with BLAS `matmul` (no network) — the floor for the emulator.  Reported
(min of --reps): CPU and wall time of both, their ratios, the messages sent and the
largest difference between the model stacks.

    python tools/bench_graphfl.py [--rounds 20] [--reps 3]
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

from references import graphfl as reference  # noqa: E402

from netemu.log import MessageLog  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.scenario.build import build_world  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    sc = load_scenario(ROOT / "scenarios" / "fedpnp_table1_dir02.toml", [f"run.rounds={args.rounds}", "run.runs=1"])
    with tempfile.TemporaryDirectory() as tmp:

        def setup():
            log = open(Path(tmp) / "messages.jsonl", "wb")
            return build_world(sc, 1, 0, log=MessageLog(log)), log  # fedpnp-soft, beta = 0.0005

        def emulate(arg):
            world, log = arg
            with log:
                world.run()
            return world

        emulated = timed(emulate, args.reps, setup)
    world = emulated[2]
    server = world.actors["server"]
    st = server.state
    floor = timed(lambda: reference(st.task, st.clients, st.p, st.A, st.theta0, world.streams, args.rounds), args.reps)
    print(json.dumps({
        "clients": len(st.clients), "rounds": args.rounds, "messages": world.network.message_counts()["total"]["sent"],
        **ratios(emulated, floor, args.reps),
        "max_model_difference": float(np.max(np.abs(floor[2] - server.Psi))),
    }))


if __name__ == "__main__":
    main()
