"""Memory per client of the quick start (FedAvg over a star), by component, and the peak
of whole runs at 100,000 and 1,000,000 clients.

Part 1 (in this process, tracemalloc): the world of --clients N clients is built step by
step as `build_world` builds it, and the bytes each step adds are divided by N:

    graph      the networkx topology (freed once the World is built: the Network keeps
               its own successors)
    links      the Link objects (components shared per link class) and their dict
    network    Node objects, the links/successors dicts of the Network
    data       the clients' samples: the float64 values themselves, then the arrays,
               tuples and dict around them
    actors     the actors (inboxes, round counters, a reference to their data)

then one round is run with the message log and trace written to files, and tracemalloc
reports the peak above the built world (messages in flight, tasks, the trace's dedup
table) and what is still held after the round.

Part 2 (--run N [N ...], each in a fresh process, no tracemalloc): `netemu run` of the quick
start at N clients x --rounds rounds (log and trace on, plots off); reported: peak RSS
(ru_maxrss), the RSS before the run, and the peak above it per client.

    python tools/bench_memory.py                          # components at 20,000 clients
    python tools/bench_memory.py --clients 100000 --run 100000 1000000
    python tools/bench_memory.py --clients 0 --run 1000000 --set data.in_memory=false   # data drawn on use
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _scenario(clients: int, rounds: int, sets: list[str] | None = None):
    from netemu.scenario import load_scenario

    return load_scenario(ROOT / "scenarios" / "quickstart.toml", [
        f"topology.clients={clients}", f"run.rounds={rounds}", "run.runs=1", "output.plots=false", *(sets or [])])


def components(clients: int) -> dict:
    """Bytes per client of each part of a built quick-start world, and of one round."""
    from netemu import plugins
    from netemu.log import MessageLog
    from netemu.engine.rng import Streams
    from netemu.scenario.build import build_behaviours, build_data, build_links, run_seed
    from netemu.scenario.graph import build_graph
    from netemu.trace import TraceWriter
    from netemu.engine.world import World

    sc = _scenario(clients, 1)
    spec = plugins.algorithm("fedavg")
    params = sc.algorithm_params(0)

    def used() -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    out: dict = {"clients": clients}
    with tempfile.TemporaryDirectory() as tmp:
        log_file = open(Path(tmp) / "messages.jsonl", "wb")
        trace_file = open(Path(tmp) / "trace.msgpack", "wb")
        writer = TraceWriter(trace_file, {"algorithms": ["fedavg"]})
        tracemalloc.start()
        m0 = used()
        streams = Streams(run_seed(sc.settings.run.seed, 0))
        graph = build_graph(sc, streams)
        m1 = used()
        links = build_links(sc, graph)
        m2 = used()
        world = World(graph, seed=streams.seed, links=links, behaviours=build_behaviours(sc, graph),
                      log=MessageLog(log_file).bind(algorithm="fedavg", run=0), fates=writer.fates("fedavg", 0))
        del links
        m3 = used()
        data = build_data(sc, graph, streams)
        m4 = used()
        values = sum(X.nbytes + y.nbytes for X, y in data.parts.values())
        del graph  # build_world's graph is a local: freed when it returns
        m5 = used()
        spec.build(world, params, data, 1)
        del data
        m6 = used()
        tracemalloc.reset_peak()
        t0 = time.process_time()
        world.run()
        cpu = time.process_time() - t0
        peak = tracemalloc.get_traced_memory()[1]
        m7 = used()
        tracemalloc.stop()
        log_file.close()
        trace_file.close()
    per = lambda b: round(b / clients, 1)
    graph_bytes = m1 - m0
    out["bytes_per_client"] = {
        "graph (freed after the build)": per(graph_bytes),
        "links": per(m2 - m1),
        "network (nodes, successors)": per(m3 - m2),
        "data: the float64 values": per(values),
        "data: arrays, tuples, dict around them": per(m4 - m3 - values),
        "actors": per(m6 - m5),
        "built world, graph freed (all of the above but the graph)": per(m6 - m0),
        "built world without data or actors": per(m6 - m0 - (m4 - m3) - (m6 - m5)),
        "one round: peak above the built world": per(peak - m6),
        "one round: still held after it": per(m7 - m6),
    }
    out["round_cpu_s_under_tracemalloc"] = round(cpu, 1)
    return out


def one_run(clients: int, rounds: int, sets: list[str]) -> dict:
    """`execute` of the quick start in this process (the parent starts a fresh one)."""
    from netemu.run.runner import execute

    sc = _scenario(clients, rounds, sets)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0, c0 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        summary = execute(sc, Path(tmp) / "run", quiet=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "clients": clients, "rounds": rounds, "set": sets, "wall_s": round(time.perf_counter() - t0, 1),
        "cpu_s": round(time.process_time() - c0, 1), "peak_rss_mib": round(peak, 1), "rss_before_run_mib": round(before, 1),
        "kib_per_client_above_start": round((peak - before) * 1024 / clients, 2),
        "messages": summary["messages"]["fedavg"]["sent"], "complete": summary["complete"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20_000, help="clients of the component breakdown (0: skip it)")
    parser.add_argument("--run", type=int, nargs="*", default=[], help="client counts of whole runs, each in a fresh process")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a scenario setting for the whole runs, e.g. data.in_memory=false (repeatable)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one run in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one, args.rounds, args.set)))
        return
    if args.clients:
        print(json.dumps(components(args.clients), indent=1))
    for n in args.run:
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--rounds", str(args.rounds),
                              *(f"--set={s}" for s in args.set)],
                             capture_output=True, text=True, check=True)
        print(out.stdout.strip())


if __name__ == "__main__":
    main()
