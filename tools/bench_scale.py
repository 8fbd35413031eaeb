"""The quick start (FedAvg over a star, stragglers, lossy links) at scale: 100,000
clients (or --clients N) for a few rounds, run as `netemu run` runs it — message log
and trace on, plots off — in a fresh process.

Reported: wall and CPU time of the run (imports and scenario loading excluded; min of
--reps, default 1 because a run at 100,000 clients takes minutes), peak memory
(ru_maxrss of the process), and per client: memory at peak above what the process held
before the run, and CPU per client-round.  The same run at --small clients (default 1,000) is measured in
its own process beside it, so the growth of the cost per client-round with the number
of clients is a ratio measured on the same machine in the same invocation.

    python tools/bench_scale.py                        # 100,000 clients x 5 rounds
    python tools/bench_scale.py --clients 1000000 --rounds 1
    python tools/bench_scale.py --actors               # clients as one actor each, not one cohort

The clients run as one `Cohort` (what `netemu run` does); --actors runs them as one actor
each, the engine's other path, which writes the same log and trace.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one(clients: int, rounds: int, actors: bool = False) -> dict:
    """One run in this process (the parent starts a fresh process per measurement)."""
    from netemu.algorithms import fedavg
    from netemu.runner import execute
    from netemu.scenario import load_scenario

    if actors:
        fedavg.build.__kwdefaults__["cohort"] = False

    sc = load_scenario(ROOT / "scenarios" / "quickstart.toml", [
        f"topology.clients={clients}", f"run.rounds={rounds}", "run.runs=1", "output.plots=false"])
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    c0 = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        summary = execute(sc, Path(tmp) / "run", quiet=True)
        log_mib = (Path(tmp) / "run" / "messages.jsonl").stat().st_size / 2**20
    return {
        "clients": clients, "rounds": rounds, "clients_as": "actors" if actors else "cohort",
        "cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "rss_before_run_mib": base_rss,
        "messages": summary["messages"]["fedavg"]["sent"], "log_mib": round(log_mib, 1),
    }


def measure(clients: int, rounds: int, reps: int, actors: bool = False) -> dict:
    runs = []
    for _ in range(max(1, reps)):
        out = subprocess.run([sys.executable, __file__, "--one", str(clients), "--rounds", str(rounds), *(["--actors"] * actors)],
                             capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    best = dict(runs[0])
    for key in ("cpu_s", "wall_s", "peak_rss_mib"):
        best[key] = min(r[key] for r in runs)
    best["us_cpu_per_client_round"] = round(best["cpu_s"] / (clients * rounds) * 1e6, 1)
    best["kib_per_client_at_peak"] = round((best["peak_rss_mib"] - best["rss_before_run_mib"]) * 1024 / clients, 2)
    for key in ("cpu_s", "wall_s", "peak_rss_mib", "rss_before_run_mib"):
        best[key] = round(best[key], 2)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000, help="clients of the comparison run (0: none)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--actors", action="store_true", help="the clients as one actor each (not one cohort)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one run in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.rounds, args.actors)))
        return
    big = measure(args.clients, args.rounds, args.reps, args.actors)
    if args.small:
        small = measure(args.small, args.rounds, max(args.reps, 3), args.actors)
        print(json.dumps(small))
        big["cpu_per_client_round_vs_small"] = round(big["us_cpu_per_client_round"] / small["us_cpu_per_client_round"], 2)
    print(json.dumps(big))


if __name__ == "__main__":
    main()
