"""What max-min sharing costs: two measurements, each a ratio to a reference run in the same invocation.

1. The quick start (scenarios/quickstart.toml, message log and trace on, plots off) at
   --clients clients (default 100,000) x --rounds rounds, in a fresh process per run:
     plain       the quick start as shipped (every client's own links, no routers)
     none        + a 1 Gbit/s server link through a router, sharing = "none" (store and forward)
     max-min     + the same server link, sharing = "max-min"
     none-reliable, max-min-reliable   the same two under transport = "reliable"
   The goals: max-min within 2x the CPU time of plain; max-min-reliable within 1.5x none-reliable.
2. --transfers transfers (default 10,000) that cross one 1 Gbit/s server link at once, of
   different sizes (1-100 kB) from clients with 10 different access rates: every end is
   an event that recomputes the rates.  Reference: the same sends with sharing = "none".

CPU time (time.process_time) beside wall time, the minimum of --reps runs (default 3).

    python tools/bench_sharing.py
    python tools/bench_sharing.py --clients 10000 --rounds 3 --transfers 2000
    python tools/bench_sharing.py --only none-reliable --only max-min-reliable --transfers 0
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from benchtime import timed  # noqa: E402

VARIANTS = {
    "plain": [],
    "none": ["topology.server_link={bandwidth=1e9}"],
    "max-min": ["topology.server_link={bandwidth=1e9}", "network.sharing=max-min"],
    "none-reliable": ["topology.server_link={bandwidth=1e9}", "network.transport=reliable"],
    "max-min-reliable": ["topology.server_link={bandwidth=1e9}", "network.sharing=max-min", "network.transport=reliable"],
}


def quickstart(variant: str, clients: int, rounds: int) -> dict:
    """One run of the quick start in this process (the parent starts a fresh process per run)."""
    from netemu.run.runner import execute
    from netemu.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "quickstart.toml", [
        f"topology.clients={clients}", f"run.rounds={rounds}", "run.runs=1", "output.plots=false", *VARIANTS[variant]])
    c0, w0 = time.process_time(), time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        summary = execute(sc, Path(tmp) / "run", quiet=True)
    return {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0, "messages": summary["messages"]["fedavg"]["sent"]}


def transfers(n: int, sharing: str) -> float:
    """`n` uploads through one shared server link, all sent at t=0; the last delivery's time."""
    import msgpack

    from netemu import Constant, Link, World
    from netemu.engine.net import topology as T
    from netemu.engine.net.model import NetModel

    g = T.behind_routers(T.star(n), server_link=True)
    links = {}
    for u, v, cls in g.edges(data="link_class"):
        k = int((u if u.startswith("client") else v).split("-")[1]) if cls in ("uplink", "downlink") else -1
        links[(u, v)] = Link(Constant(0.001), bandwidth=1e9 if k < 0 else 1e6 * (1 + k % 10), link_class=cls)
    world = World(g, seed=1, links=links, model=NetModel(sharing=sharing))
    net = world.network
    last = [0.0]
    net.connect("server", lambda m: last.__setitem__(0, m.delivered_at) and None)
    for k in range(n):
        net.send(f"client-{k}", "server", "up", 0, msgpack.packb(bytes(1000 * (1 + (k * 7919) % 100))))
    world.env.run()
    return last[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--transfers", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", action="append", choices=list(VARIANTS), help="run only these quick-start variants (repeatable)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one quick-start run of this variant
    args = ap.parse_args()
    if args.one:
        print(json.dumps(quickstart(args.one, args.clients, args.rounds)))
        return
    out: dict = {"quickstart": {"clients": args.clients, "rounds": args.rounds, "reps": args.reps}}
    for variant in args.only or VARIANTS:
        runs = []
        for _ in range(max(1, args.reps)):
            p = subprocess.run([sys.executable, __file__, "--one", variant, "--clients", str(args.clients), "--rounds", str(args.rounds)],
                               capture_output=True, text=True, check=True)
            runs.append(json.loads(p.stdout))
        out["quickstart"][variant] = {"cpu_s": round(min(r["cpu_s"] for r in runs), 2), "wall_s": round(min(r["wall_s"] for r in runs), 2),
                                      "messages": runs[0]["messages"]}
        print(f"quick start, {variant}: {out['quickstart'][variant]}", file=sys.stderr, flush=True)
    q = out["quickstart"]
    for name, a, b in (("max_min_to_plain", "max-min", "plain"), ("max_min_to_none", "max-min", "none"),
                       ("max_min_reliable_to_none_reliable", "max-min-reliable", "none-reliable")):
        if a in q and b in q:
            q[f"ratio_cpu_{name}"] = round(q[a]["cpu_s"] / q[b]["cpu_s"], 2)
    if args.transfers <= 0:
        print(json.dumps(out, indent=1))
        return
    shared = timed(lambda: transfers(args.transfers, "max-min"), args.reps)
    fifo = timed(lambda: transfers(args.transfers, "none"), args.reps)
    out["transfers"] = {
        "n": args.transfers, "reps": args.reps,
        "max_min_cpu_s": round(shared[0], 3), "max_min_wall_s": round(shared[1], 3), "max_min_last_delivery_s": round(shared[2], 4),
        "none_cpu_s": round(fifo[0], 3), "none_wall_s": round(fifo[1], 3), "none_last_delivery_s": round(fifo[2], 4),
        "ratio_cpu": round(shared[0] / fifo[0], 2), "us_cpu_per_transfer": round(shared[0] / args.transfers * 1e6, 1),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
