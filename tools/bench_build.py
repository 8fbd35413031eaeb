"""The build of the quick-start world at scale: what `netemu run` does before the first
round of a 100,000-client star (or --clients N), timed part by part in a fresh process.

Parts, as `netemu.run.runner.execute` runs them: `graph` (the topology built for the trace's
fingerprint), `fingerprint`, and `world` (`build_world`: links, node behaviours, the World and
its network, the data, the algorithm's actors; the graph is handed over as the runner hands it
to a one-run scenario's world, or built again by a tree whose `build_world` takes no graph).  CPU time (time.process_time)
beside wall time, min of --reps fresh processes; per client in µs; the peak memory of the
process (ru_maxrss, including the scenario's loading).  The same build at
--small clients (default 1,000) is measured beside it, so the growth of the cost per
client is a ratio measured in the same invocation.

    python tools/bench_build.py                       # 100,000 clients
    python tools/bench_build.py --clients 1000000 --reps 1

For an A/B comparison run it with PYTHONPATH set to each tree in turn (the child
processes import netemu from there).
"""

from __future__ import annotations

import argparse
import inspect
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("graph", "fingerprint", "world")


def one(clients: int) -> dict:
    """One build in this process (the parent starts a fresh process per measurement)."""
    from netemu.engine.rng import Streams
    from netemu.scenario import load_scenario
    from netemu.scenario import build
    from netemu.scenario.build import build_world, run_seed
    try:
        from netemu.scenario import graph as graphs  # where the graph is built (build_graph, release)
    except ImportError:  # a tree from before: in the build module
        graphs = build
    build_graph = graphs.build_graph
    from netemu.trace import topology_fingerprint

    sc = load_scenario(ROOT / "scenarios" / "quickstart.toml", [
        f"topology.clients={clients}", "run.rounds=5", "run.runs=1", "output.plots=false"])
    cpu: dict[str, float] = {}
    wall: dict[str, float] = {}

    def timed(part: str, fn, *args, **kwargs):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn(*args, **kwargs)
        cpu[part], wall[part] = time.process_time() - c0, time.perf_counter() - w0
        return out

    graph = timed("graph", build_graph, sc, Streams(run_seed(1, 0)))
    timed("fingerprint", topology_fingerprint, graph)
    if "graph" in inspect.signature(build_world).parameters:  # the world takes the graph (and empties it)
        timed("world", build_world, sc, 0, 0, graph=graph)
        del graph
    else:  # a tree from before: the graph released (or, older still, dropped) and built again
        if hasattr(graphs, "release"):
            graphs.release(graph)
        del graph
        timed("world", build_world, sc, 0, 0)
    return {"clients": clients, "cpu_s": cpu, "wall_s": wall, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure(clients: int, reps: int) -> dict:
    runs = []
    for _ in range(max(1, reps)):
        out = subprocess.run([sys.executable, __file__, "--one", str(clients)], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    best = {"clients": clients, "reps": len(runs)}
    for key in ("cpu_s", "wall_s"):
        best[key] = {p: round(min(r[key][p] for r in runs), 3) for p in PARTS}
        best[key]["total"] = round(min(sum(r[key].values()) for r in runs), 3)
    best["us_cpu_per_client"] = round(best["cpu_s"]["total"] / clients * 1e6, 1)
    best["peak_rss_mib"] = round(min(r["peak_rss_mib"] for r in runs), 1)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000, help="clients of the comparison build (0: none)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one build in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    big = measure(args.clients, args.reps)
    if args.small:
        small = measure(args.small, max(args.reps, 3))
        print(json.dumps(small))
        big["cpu_per_client_vs_small"] = round(big["us_cpu_per_client"] / small["us_cpu_per_client"], 2)
    print(json.dumps(big))


if __name__ == "__main__":
    main()
