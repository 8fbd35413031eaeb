"""Wall time of FedPnP (soft denoiser) on the Table 1 setting (20 clients, Dir(0.2)
digits, softmax model, 5 local epochs), emulated vs the vectorized NumPy reference
(tests/references.py) in the same process.

The emulated run is the real thing: every model and update encoded, routed over the
star, logged to a file; the reference runs all clients' SGD as batched array
operations (no network) — the floor for the emulator.  Reported: both wall times,
their ratio, the messages sent and the largest difference between the model stacks.

    python tools/bench_graphfl.py [--rounds 20]
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

from references import graphfl as reference  # noqa: E402

from netemu.log import MessageLog  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.scenario.build import build_world  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    sc = load_scenario(ROOT / "scenarios" / "fedpnp_table1_dir02.toml", [f"run.rounds={args.rounds}", "run.runs=1"])
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "messages.jsonl", "wb") as log:
        world = build_world(sc, 1, 0, log=MessageLog(log))  # fedpnp-soft, beta = 0.0005
        t0 = time.perf_counter()
        world.run()
        emulated = time.perf_counter() - t0
    server = world.actors["server"]
    st = server.state
    t0 = time.perf_counter()
    Psi = reference(st.task, st.clients, st.p, st.A, st.theta0, world.streams, args.rounds)
    ref = time.perf_counter() - t0
    print(json.dumps({
        "clients": len(st.clients), "rounds": args.rounds, "messages": world.network.message_counts()["total"]["sent"],
        "emulated_s": round(emulated, 2), "reference_s": round(ref, 2), "ratio": round(emulated / ref, 1),
        "max_model_difference": float(np.max(np.abs(Psi - server.Psi))),
    }))


if __name__ == "__main__":
    main()
