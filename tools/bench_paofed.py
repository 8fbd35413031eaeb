"""PAO-Fed-U1 on the default scenario (K = 256, 2000 iterations), emulated vs the
vectorized NumPy reference (tests/references.py) in the same process.

The emulated run is what `netemu run` does: every partial message put on the wire (sized
as msgpack encodes it), routed through delaying links, logged to a file, and every
random fate recorded in a trace file.  The floor computes the same algorithm on the same
data as whole-array operations, without delays (it has no network), and draws the same
availability fates inside its timer: the keyed draw of every client that has data, per
iteration, as the emulated clients do (one vectorized `uniforms` call per iteration).
Reported (min of --reps): CPU and wall time of both and their ratios.

    python tools/bench_paofed.py [--iterations 2000] [--reps 3]
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
from references import online_fl as reference  # noqa: E402

from netemu.kernels.online import rff  # noqa: E402
from netemu.log import MessageLog  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.scenario.build import build_world  # noqa: E402
from netemu.trace import TraceWriter  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    T = args.iterations
    sc = load_scenario(ROOT / "scenarios" / "paofed_fig4_2a.toml", [f"run.rounds={T}", "run.runs=1"])
    u1 = sc.settings.labels.index("pao-fed-u1")
    with tempfile.TemporaryDirectory() as tmp:

        def setup():
            log = open(Path(tmp) / "messages.jsonl", "wb")
            trace = open(Path(tmp) / "trace.msgpack", "wb")
            writer = TraceWriter(trace, {"scenario": sc.name})
            world = build_world(sc, u1, 0, log=MessageLog(log).bind(algorithm="pao-fed-u1", run=0),
                                fates=writer.fates("pao-fed-u1", 0))
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
    state = world.actors["server"].state
    params, data = state.p, state.data
    nodes = world.network.nodes
    clients = list(data.clients)
    prob = np.array([nodes[c].participation for c in clients])
    omega, phase = rff(4, params.rff_dim, params.kernel_width, world.streams.generator("rff"))

    def floor():
        draws = world.streams.keyed("participation")  # the same keyed draws, inside the timer
        has = np.zeros((T, len(clients)), dtype=bool)
        for k, when in enumerate(data.arrival):
            has[when[when < T], k] = True
        drawn = (prob > 0) & (prob < 1)

        def available(n: int) -> np.ndarray:
            out = prob >= 1
            ks = np.flatnonzero(has[n] & drawn)
            coords = [(clients[k], n) for k in ks]
            u = draws.uniforms(coords) if hasattr(draws, "uniforms") else np.array([draws.uniform(*c) for c in coords])
            out[ks] = u < prob[ks]  # (the fallback measures source trees older than `uniforms`)
            return out

        return reference(data, params, T, available, omega, phase, data.test)

    ref = timed(floor, args.reps)
    counts = world.network.message_counts()["total"]
    print(json.dumps({
        "clients": len(clients), "iterations": T, "messages": counts["sent"], "trace_entries": trace_entries,
        **ratios(emulated, ref, args.reps),
    }))


if __name__ == "__main__":
    main()
