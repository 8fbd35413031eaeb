"""ns-3 as netemu's network engine at scale: rounds of N clients x B-byte uploads through one server link.

Each round the server actor sends every client a 100-byte "go" and waits for all their B-byte
updates (one persistent TCP connection per pair, as `connection = "persistent"`); R rounds.  The
star sits behind a router: client access links (--access bit/s, 1 ms) and one server link
(--server bit/s, 1 ms), ns-3's FIFO device queues of 100 packets.

Measured, min of --reps runs each, CPU time (this process's time.process_time plus the ns-3 child's
user + system time, `resource.getrusage(RUSAGE_CHILDREN)`) beside wall time:

  ns3      the rounds through netemu with engine = "ns3"
  floor    the same uploads by tools/ns3/transfers.cc alone (one run per round: N bulk TCP transfers
           of B bytes through the same star), i.e. what ns-3 itself costs for these packets
  flow     the same rounds on netemu's flow model (sharing = "max-min", transport = "reliable")

    python tools/bench_ns3.py                                   # 100 clients x 1 MB, 10 rounds
    python tools/bench_ns3.py --clients 300 --bytes 100000 --rounds 2 --reps 1
    python tools/bench_ns3.py --scale                           # one round at several sizes: where it stops being practical
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


ROUND_LIMIT = 600.0  # virtual seconds the server waits for a round's updates
#: (clients, bytes) of the --scale rounds
SCALE = ((10, 1_000_000), (100, 100_000), (300, 1_000_000), (1000, 100_000))


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def world_rounds(clients: int, nbytes: int, rounds: int, access: float, server: float, engine: str) -> dict:
    """The rounds through netemu; returns the virtual time of the last round and the CPU it took."""
    from netemu import Actor, Constant, Link, World
    from netemu.engine.net import topology as T
    from netemu.engine.net.model import NetModel

    g = T.behind_routers(T.star(clients), server_link=True)
    links = {(u, v): Link(Constant(0.001), bandwidth=server if cls.startswith("server") else access, link_class=cls)
             for u, v, cls in g.edges(data="link_class")}
    # ns-3's minimum RTO (1 s), as transfers.cc's: with 0.2 s, 100 flows' initial windows into one 100-packet
    # queue leave a few transfers in repeated timeouts for 80-140 s, in transfers.cc as here
    model = (NetModel(engine="ns3", transport="reliable", connect_timeout=600.0, rto_min=1.0, qdisc="fifo") if engine == "ns3"
             else NetModel(sharing="max-min", transport="reliable", connect_timeout=600.0, rto_min=1.0))
    update = bytes(nbytes)  # encoded by the actor's send: a msgpack bin of nbytes
    names = [f"client-{k}" for k in range(clients)]
    ends: list[float] = []
    got = [0]  # updates received

    class Server(Actor):
        async def run(self):
            for r in range(rounds):
                self.broadcast("go", b"x" * 100, names, round=r)
                deadline = self.now + ROUND_LIMIT  # an update TCP gave up on never comes (ns-3: SYNs lost 6 times)
                for _ in names:
                    if await self.recv(until=deadline) is None:
                        break
                    got[0] += 1
                ends.append(self.now)

    class Client(Actor):
        daemon = True

        async def run(self):
            while True:
                msg = await self.recv()
                self.send("server", "update", update, round=msg.round)

    world = World(g, seed=1, links=links, model=model)
    world.add(Server("server"))
    for name in names:
        world.add(Client(name))
    c0, k0, w0 = time.process_time(), children_cpu(), time.perf_counter()
    world.run()
    engine_obj = world.network._transfers
    if hasattr(engine_obj, "close"):
        engine_obj.close()  # the ns-3 child waited for: its CPU time is in RUSAGE_CHILDREN
    return {"cpu": time.process_time() - c0 + children_cpu() - k0, "wall": time.perf_counter() - w0, "virtual": ends[-1],
            "rounds": len(ends), "received": got[0], "sent": rounds * clients}


def floor(clients: int, nbytes: int, rounds: int, access: float, server: float, binary: Path) -> dict:
    """transfers.cc for the same uploads: one run per round."""
    k0, w0 = children_cpu(), time.perf_counter()
    last = 0.0
    for _ in range(rounds):
        out = subprocess.run([str(binary), "--topology=star", f"--clients={clients}", f"--bytes={nbytes + 5}", "--direction=up",
                              f"--access={int(access)}", f"--server={int(server)}", "--accessDelay=0.001", "--serverDelay=0.001"],
                             capture_output=True, text=True, check=True)
        last = json.loads(out.stdout)["last"]
    return {"cpu": children_cpu() - k0, "wall": time.perf_counter() - w0, "round_time": last}


def child(args: argparse.Namespace, what: str) -> dict:
    """One measurement in a fresh process (its RUSAGE_CHILDREN is its own)."""
    cmd = [sys.executable, __file__, "--one", what, "--clients", str(args.clients), "--bytes", str(args.bytes), "--rounds",
           str(args.rounds), "--access", str(args.access), "--server", str(args.server)]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--bytes", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--access", type=float, default=100e6, help="client access links, bit/s")
    ap.add_argument("--server", type=float, default=1e9, help="the server link, bit/s")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="ns3,floor,flow")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--scale", action="store_true", help="one round at each of SCALE's (clients, bytes), ns3 and floor")
    args = ap.parse_args()
    if args.scale:
        print(f"one round each; min of {args.reps}; CPU per round and per GB moved", flush=True)
        for clients, nbytes in SCALE:
            args.clients, args.bytes, args.rounds = clients, nbytes, 1
            got = {what: min((child(args, what) for _ in range(args.reps)), key=lambda r: r["cpu"]) for what in ("ns3", "floor")}
            gb = clients * nbytes / 1e9
            print(f"  {clients:5d} clients x {nbytes:>10,} B: ns3 cpu {got['ns3']['cpu']:7.2f} s ({got['ns3']['cpu'] / gb:6.1f} s/GB), "
                  f"floor {got['floor']['cpu']:7.2f} s; round {got['ns3']['virtual']:.3f} s virtual, "
                  f"{got['ns3']['received']} of {clients} updates", flush=True)
        return
    if args.one == "floor":
        binary = ROOT / "tools" / "ns3" / "build" / "transfers"
        if not binary.exists():
            subprocess.run(["sh", str(ROOT / "tools" / "ns3" / "build.sh")], check=True, capture_output=True)
        print(json.dumps(floor(args.clients, args.bytes, args.rounds, args.access, args.server, binary)))
        return
    if args.one:
        from netemu.ns3.build import binary as ns3_binary

        ns3_binary()  # built before the clock starts (cached)
        print(json.dumps(world_rounds(args.clients, args.bytes, args.rounds, args.access, args.server, args.one)))
        return
    print(f"{args.clients} clients x {args.bytes:,} bytes up, {args.rounds} rounds; access {args.access:g} bit/s, server link "
          f"{args.server:g} bit/s; min of {args.reps}", flush=True)
    for what in args.only.split(","):
        runs = [child(args, what) for _ in range(args.reps)]
        best = min(runs, key=lambda r: r["cpu"])
        extra = (f"virtual {best['virtual']:.3f} s ({best['rounds']} rounds, {best['received']} of {best['sent']} updates)" if "virtual" in best
                 else f"ns-3 round {best['round_time']:.3f} s")
        print(f"  {what:<6} cpu {best['cpu']:8.2f} s   wall {min(r['wall'] for r in runs):8.2f} s   {extra}", flush=True)


if __name__ == "__main__":
    main()
