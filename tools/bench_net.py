"""Messages per second through the emulated network, for 10, 256 and 10,000 actors.

A server broadcasts a 10-entry float64 model to every client each round; every
client answers with an update.  Links have exponential delay and 1 % loss, so every
message draws its fate; every event is written to a real message log file.

Reported against a reference measured in the same process: the bare per-message
work no emulator can avoid — msgpack-encode the envelope, decode it, and render two
JSON log lines (send + deliver) — for the same number of messages.  The ratio
emulator/reference is the emulation overhead.  Each size runs in its own process so
peak memory (max RSS) is per size.

    python tools/bench_net.py            # all sizes
    python tools/bench_net.py --sizes 10 256
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import orjson

from netemu import Actor, Bernoulli, Exponential, Link, MessageLog, World, star
from netemu.wire.codec import decode_envelope, encode, encode_envelope


class Server(Actor):
    def __init__(self, name, rounds):
        super().__init__(name)
        self.rounds = rounds

    async def run(self):
        w = np.zeros(10)
        n = len(self.neighbours)
        for r in range(self.rounds):
            self.round = r
            self.broadcast("model", w)
            for _ in range(n):
                if await self.recv("update", timeout=10.0) is None:
                    break


class Client(Actor):
    daemon = True

    async def run(self):
        while True:
            msg = await self.recv("model")
            self.send(msg.src, "update", msg.payload, round=msg.round)


def emulate(n_actors: int, rounds: int, log_path: str) -> tuple[int, float]:
    g = star(n_actors - 1)
    links = {e: Link(Exponential(0.01), loss=Bernoulli(0.01), link_class=g.edges[e]["link_class"]) for e in g.edges}
    with open(log_path, "wb") as f:
        world = World(g, seed=1, links=links, log=MessageLog(f))
        world.add(Server("server", rounds))
        for k in range(n_actors - 1):
            world.add(Client(f"client-{k}"))
        t0 = time.perf_counter()
        result = world.run()
        wall = time.perf_counter() - t0
    return result.messages["total"]["sent"], wall


def reference(n_messages: int, log_path: str) -> float:
    """The unavoidable work per message, without the emulator."""
    payload = encode(np.zeros(10))
    with open(log_path, "wb") as f:
        t0 = time.perf_counter()
        for i in range(n_messages):
            data = encode_envelope(i, "client-1", "server", "update", 3, 1.5, payload)
            decode_envelope(data)
            for ev in ("send", "deliver"):
                f.write(orjson.dumps({"t": 1.5, "event": ev, "id": i, "src": "client-1", "dst": "server", "kind": "update",
                                      "round": 3, "bytes": len(data), "link": "uplink"}, option=orjson.OPT_APPEND_NEWLINE))
        return time.perf_counter() - t0


def measure(n_actors: int) -> dict:
    rounds = max(2, 200_000 // (2 * n_actors))
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "messages.jsonl")
        sent, wall = emulate(n_actors, rounds, log)
        ref = reference(sent, log)
    return {
        "actors": n_actors,
        "rounds": rounds,
        "messages": sent,
        "emulated_msgs_per_s": round(sent / wall),
        "reference_msgs_per_s": round(sent / ref),
        "ratio_emulated_over_reference_time": round(wall / ref, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 256, 10_000])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    for n in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        print(out.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
