"""Messages per second through the emulated network, for 10, 256 and 10,000 actors.

A server broadcasts a 10-entry float64 model to every client each round; every
client answers with an update.  Links have exponential delay and 1 % loss, so every
message draws its fate; every event is written to a real message log file.

Reported against a floor measured in the same process: the bare per-message work no
emulator can avoid — draw the message's fate (the same keyed loss and delay draws),
size its envelope header (`header_size`, as the network does), size its payload and copy
it for the receiver (`unencoded`: the receiver gets what a decode would give, a value of
its own; since issue 40 no bytes are made for a payload nothing reads, so the floor
neither encodes nor decodes), and render two JSON log lines (send + deliver) — for the
same number of messages.  The ratio emulator/floor is the emulation overhead.  CPU time
(process_time) and wall time, min of --reps.  Each size runs in its own process so peak
memory (max RSS) is per size.  The emulated time includes building the world;
`us_per_msg_run_cpu` is the run alone (at 100,000 actors, two rounds, the build is a large
part of it).

    python tools/bench_net.py            # all sizes
    python tools/bench_net.py --sizes 10 256 --reps 3
    python tools/bench_net.py --cohort   # the clients as one Cohort, the server collecting with gather
    python tools/bench_net.py --batched  # the batched path: broadcasts arriving at one instant, no replies
    python tools/bench_net.py --instant  # --cohort on constant-delay links: members answer as arrays

With --cohort each message costs the same network work (its fate draws, envelope and two
log lines), without the per-client machinery (a task, future and inbox per client, a
wake-up of the server per reply); a round ends at the quorum or 10 s after the broadcast
(instead of 10 s after the last reply), so the two logs differ only in when lossy
rounds end.

With --instant the links have a constant 10 ms delay (and the same 1 % loss, so every
message still draws its fate): a broadcast reaches every client at one instant, the
clients answer in one `on_messages` call with one `send_from`, and the answers reach the
server at one instant.  This is the path where a cohort's members are handled as arrays;
with --cohort's exponential delays every delivery is at its own instant.

With --batched the server broadcasts every second over constant-delay links to a cohort
that only receives: each broadcast is one `send_many` and its messages arrive at one
instant, in one event (issue 15, item 1).  No fates are drawn, so the floor draws none
either: it sizes each message's envelope header, sizes and copies its payload and renders
its two log lines.
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
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchtime import timed  # noqa: E402

from netemu import Actor, Bernoulli, Cohort, Constant, Exponential, Link, MessageLog, World, star  # noqa: E402
from netemu.coordination import gather  # noqa: E402
from netemu.engine.rng import Streams  # noqa: E402
from netemu.wire.codec import header_size  # noqa: E402
from netemu.wire.lazy import unencoded  # noqa: E402


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
            await self.replies(n)

    async def replies(self, n):
        for _ in range(n):
            if await self.recv("update", timeout=10.0) is None:
                break


class Client(Actor):
    daemon = True

    async def run(self):
        while True:
            msg = await self.recv("model")
            self.send(msg.src, "update", msg.payload, round=msg.round)


class GatheringServer(Server):
    async def replies(self, n):
        # `recv(timeout=10)` n times ends 10 s after the last reply; the deadline here is absolute
        await gather(self, "update", self.now + 10.0, quorum=n)


class Sink(Cohort):
    receives = "model"

    def on_messages(self, ms, msgs):  # a broadcast's messages, due at one instant, in one call
        pass


class Broadcaster(Server):
    async def run(self):
        w = np.zeros(10)
        for r in range(self.rounds):
            self.round = r
            self.broadcast("model", w)
            await self.sleep(1.0)


class Clients(Cohort):
    receives = "model"

    def on_message(self, m, msg):
        self.send(m, msg.src, "update", msg.payload, round=msg.round)


class ArrayClients(Cohort):
    receives = "model"

    def on_messages(self, ms, msgs):  # the members a broadcast reached at this instant
        for m, msg in zip(ms, msgs):
            m.round = msg.round
        self.send_from(ms, msgs[0].src, "update", [msg.payload for msg in msgs])


def emulate(n_actors: int, rounds: int, log_path: str, cohort: bool = False, batched: bool = False,
            run_cpu: list[float] | None = None, instant: bool = False) -> int:
    """Build the star and run it; the messages sent.  `run_cpu` gets the run's own CPU time
    (without building the world: at 100,000 actors and two rounds the build is a large part)."""
    g = star(n_actors - 1)
    links = {e: link(batched, instant, g.edges[e]["link_class"]) for e in g.edges}
    with open(log_path, "wb") as f:
        world = World(g, seed=1, links=links, log=MessageLog(f))
        if batched:
            world.add(Broadcaster("server", 2 * rounds))
            world.add(Sink("clients", [f"client-{k}" for k in range(n_actors - 1)]))
        elif cohort or instant:
            world.add(GatheringServer("server", rounds))
            world.add((ArrayClients if instant else Clients)("clients", [f"client-{k}" for k in range(n_actors - 1)]))
        else:
            world.add(Server("server", rounds))
            for k in range(n_actors - 1):
                world.add(Client(f"client-{k}"))
        c0 = time.process_time()
        result = world.run()
        if run_cpu is not None:
            run_cpu.append(time.process_time() - c0)
    return result.messages["total"]["sent"]


def link(batched: bool, instant: bool, link_class: str = "link") -> Link:
    """A link of the run: constant delay (--batched, no loss; --instant, 1 % loss) or exponential with 1 % loss."""
    if batched:
        return Link(Constant(0.01), link_class=link_class)
    return Link(Constant(0.01) if instant else Exponential(0.01), loss=Bernoulli(0.01), link_class=link_class)


def reference(n_messages: int, n_links: int, log_path: str, batched: bool = False, instant: bool = False) -> None:
    """The unavoidable work per message, without the emulator: its fate, its size, its payload's
    size and copy, its two log lines (batched: no fate)."""
    model = np.zeros(10)
    fates = link(False, instant)
    streams = Streams(1)
    draws = [streams.keyed(f"link/client-{k}->server") for k in range(n_links)]
    with open(log_path, "wb") as f:
        for i in range(n_messages):
            round, k = divmod(i, n_links)
            if batched:
                delay = 0.01
            else:
                reason, delay = fates.draw_fate(draws[k], round, 0)
            nbytes = header_size(i, "client-1", "server", "update", 3, 1.5) + len(unencoded(model))  # sized and copied
            for ev in ("send", "deliver"):
                f.write(orjson.dumps({"t": 1.5 + delay, "event": ev, "id": i, "src": "client-1", "dst": "server",
                                      "kind": "update", "round": 3, "bytes": nbytes, "link": "uplink"},
                                     option=orjson.OPT_APPEND_NEWLINE))


def measure(n_actors: int, reps: int, cohort: bool = False, batched: bool = False, instant: bool = False) -> dict:
    rounds = max(2, 200_000 // (2 * n_actors))
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "messages.jsonl")
        run_cpu: list[float] = []
        cpu, wall, sent = timed(lambda: emulate(n_actors, rounds, log, cohort, batched, run_cpu, instant), reps)
        ref_cpu, ref_wall, _ = timed(lambda: reference(sent, 2 * (n_actors - 1), log, batched, instant), reps)
    return {
        "actors": n_actors, "cohort": cohort or batched or instant, "batched": batched, "instant": instant,
        "rounds": rounds,
        "messages": sent,
        "reps": reps,
        "emulated_msgs_per_s_cpu": round(sent / cpu), "emulated_msgs_per_s_wall": round(sent / wall),
        "floor_msgs_per_s_cpu": round(sent / ref_cpu), "floor_msgs_per_s_wall": round(sent / ref_wall),
        "us_per_msg_cpu": round(cpu / sent * 1e6, 1),
        "us_per_msg_run_cpu": round(min(run_cpu) / sent * 1e6, 1),  # the same without building the world
        "ratio_cpu": round(cpu / ref_cpu, 2), "ratio_wall": round(wall / ref_wall, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 256, 10_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cohort", action="store_true", help="clients as one Cohort, server with gather")
    parser.add_argument("--batched", action="store_true", help="broadcasts arriving at one instant to a receiving cohort")
    parser.add_argument("--instant", action="store_true", help="--cohort on constant-delay links: members answer as arrays")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.reps, args.cohort, args.batched, args.instant)))
        return
    for n in args.sizes:
        flags = [*(["--cohort"] * args.cohort), *(["--batched"] * args.batched), *(["--instant"] * args.instant)]
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--reps", str(args.reps), *flags],
                             capture_output=True, text=True, check=True)
        print(out.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
