"""Wall time of FedPnP (soft denoiser) on the Table 1 setting (20 clients, Dir(0.2)
digits, softmax model, 5 local epochs), emulated vs the vectorized NumPy reference
(tests/references.py) in the same process.

The emulated run is the real thing: every model and update put on the wire (sized as
msgpack encodes it), routed over the star, logged to a file, every random fate recorded
in a trace (as `netemu run` does; this network draws none), and the accuracies of every
round evaluated; the reference runs all clients' SGD as batched array operations with
BLAS `matmul` (no network, no per-round evaluation: the floor for the emulator, if
anything too low).  Reported (min of --reps): CPU and wall time of both, their ratios,
the messages sent, the trace entries and the largest difference between the model
stacks.

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

from helpers import WithTask  # noqa: E402
from references import graphfl as reference  # noqa: E402

from netemu.log import MessageLog  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.scenario.build import build_world  # noqa: E402
from netemu.trace import TraceWriter  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    sc = load_scenario(ROOT / "scenarios" / "fedpnp_table1_dir02.toml", [f"run.rounds={args.rounds}", "run.runs=1"])
    with tempfile.TemporaryDirectory() as tmp:

        label = sc.settings.labels[1]  # fedpnp-soft, beta = 0.0005

        def setup():
            log = open(Path(tmp) / "messages.jsonl", "wb")
            trace = open(Path(tmp) / "trace.msgpack", "wb")
            writer = TraceWriter(trace, {"scenario": sc.name})
            world = build_world(sc, 1, 0, log=MessageLog(log).bind(algorithm=label, run=0), fates=writer.fates(label, 0))
            return world, log, trace, writer

        def emulate(arg):
            world, log, trace, writer = arg
            with log, trace:
                world.run()
                writer.close(True)
                world.log.flush()
            return world, writer.entries

        emulated = timed(emulate, args.reps, setup)
    world, trace_entries = emulated[2]
    server = world.actors["server"]
    st = server.state
    floor = timed(lambda: reference(st.task, st.clients, WithTask(st.p, st.training), st.A, st.theta0, world.streams, args.rounds), args.reps)
    print(json.dumps({
        "clients": len(st.clients), "rounds": args.rounds, "messages": world.network.message_counts()["total"]["sent"],
        "trace_entries": trace_entries,
        **ratios(emulated, floor, args.reps),
        "max_model_difference": float(np.max(np.abs(floor[2] - server.Psi))),
    }))


if __name__ == "__main__":
    main()
