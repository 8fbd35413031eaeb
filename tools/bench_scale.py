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
    python tools/bench_scale.py --profile 15           # + the 15 functions whose cost grows most
    python tools/bench_scale.py --clients 20000 --log-format both --reps 3   # JSON lines vs Arrow log, side by side

The clients run as one `Cohort` (what `netemu run` does); --actors runs them as one actor
each, the engine's other path, which writes the same log and trace.

--log-format arrow writes the message log as Arrow record batches (`output.log_format`); `both`
runs the two formats alternately, rep by rep, one fresh process each (no --small run), and
prints each one's best and the ratio of their CPU times.

--profile N samples where the CPU time of both runs goes, by function, and prints the N
functions whose cost per client-round grows most from --small to --clients: the running
Python function is sampled every tick of the process's CPU time (SIGPROF, ~4 ms on Linux;
time spent in C, e.g. a heap pop, counts for the Python function that called it).  The
sampler costs well under 1 %; the small end then runs at least 20 times for enough samples.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from benchtime import sampled  # noqa: E402


class _Sampler:
    """CPU seconds by function (`file:qualname`, the file as its last two path parts),
    from a sample of the running Python frame at every SIGPROF (`benchtime.sampled`); the
    process's CPU time is shared out in proportion to the samples, so the profile adds up
    to the measured time."""

    def __init__(self) -> None:
        self.samples: Counter[str] = Counter()

    def sample(self, frame: FrameType | None) -> None:
        if frame is not None:
            code = frame.f_code
            self.samples[f"{'/'.join(Path(code.co_filename).parts[-2:])}:{code.co_qualname}"] += 1

    def seconds(self, cpu_s: float) -> dict[str, float]:
        total = sum(self.samples.values()) or 1
        return {name: cpu_s * n / total for name, n in self.samples.items()}


def one(clients: int, rounds: int, actors: bool = False, profile: bool = False, log_format: str = "jsonl") -> dict:
    """One run in this process (the parent starts a fresh process per measurement)."""
    from netemu.algorithms import fedavg
    from netemu.run.runner import execute
    from netemu.scenario import load_scenario

    if actors:
        fedavg.build.__kwdefaults__["cohort"] = False

    sc = load_scenario(ROOT / "scenarios" / "quickstart.toml", [
        f"topology.clients={clients}", f"run.rounds={rounds}", "run.runs=1", "output.plots=false", f'output.log_format="{log_format}"'])
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sampler = _Sampler()
    t0 = time.perf_counter()
    c0 = time.process_time()
    with sampled(sampler.sample) if profile else nullcontext(), tempfile.TemporaryDirectory() as tmp:
        summary = execute(sc, Path(tmp) / "run", quiet=True)
        log_mib = (Path(tmp) / "run" / ("messages.arrows" if log_format == "arrow" else "messages.jsonl")).stat().st_size / 2**20
    cpu_s, wall_s = time.process_time() - c0, time.perf_counter() - t0
    return {
        "clients": clients, "rounds": rounds, "clients_as": "actors" if actors else "cohort", "log_format": log_format,
        "cpu_s": cpu_s, "wall_s": wall_s,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "rss_before_run_mib": base_rss,
        "messages": summary["messages"]["fedavg"]["sent"], "log_mib": round(log_mib, 1),
        **({"profile": sampler.seconds(cpu_s)} if profile else {}),
    }


def measure(clients: int, rounds: int, reps: int, actors: bool = False, profile: bool = False, log_format: str = "jsonl",
            runs: list[dict] | None = None) -> dict:
    """The best of `reps` runs, each in a fresh process (and of `runs`, measured already)."""
    runs = list(runs or [])
    for _ in range(max(1, reps) - len(runs)):
        out = subprocess.run([sys.executable, __file__, "--one", str(clients), "--rounds", str(rounds), *(["--actors"] * actors),
                              *(["--profile", "1"] * profile), "--log-format", log_format], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    best = dict(runs[0])
    if profile:  # µs of CPU per client-round by function, the mean over the runs
        total: Counter[str] = Counter()
        for r in runs:
            total.update(r["profile"])
        best["profile"] = {name: s / len(runs) / (clients * rounds) * 1e6 for name, s in total.items()}
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
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the N functions whose CPU per client-round grows most from --small to --clients")
    parser.add_argument("--log-format", choices=("jsonl", "arrow", "both"), default="jsonl",
                        help="the message log's format (output.log_format); both: the two alternately, side by side")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one run in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.rounds, args.actors, args.profile > 0, args.log_format)))
        return
    if args.log_format == "both":
        runs: dict[str, list[dict]] = {"jsonl": [], "arrow": []}
        for _ in range(max(1, args.reps)):  # alternately: both formats meet the same load on a shared machine
            for fmt in runs:
                runs[fmt].append(measure(args.clients, args.rounds, 1, args.actors, log_format=fmt))
        best = {fmt: measure(args.clients, args.rounds, len(r), args.actors, log_format=fmt, runs=r) for fmt, r in runs.items()}
        for b in best.values():
            print(json.dumps(b))
        print(json.dumps({"arrow_cpu_vs_jsonl": round(best["arrow"]["cpu_s"] / best["jsonl"]["cpu_s"], 3),
                          "arrow_log_mib_vs_jsonl": round(best["arrow"]["log_mib"] / best["jsonl"]["log_mib"], 3)}))
        return
    profile = args.profile > 0
    if profile and not args.small:
        parser.error("--profile compares two sizes: give --small > 0")
    big = measure(args.clients, args.rounds, args.reps, args.actors, profile, args.log_format)
    if args.small:
        small = measure(args.small, args.rounds, max(args.reps, 20 if profile else 3), args.actors, profile, args.log_format)
        small_profile, big_profile = small.pop("profile", {}), big.pop("profile", {})
        print(json.dumps(small))
        big["cpu_per_client_round_vs_small"] = round(big["us_cpu_per_client_round"] / small["us_cpu_per_client_round"], 2)
    print(json.dumps(big))
    if profile:
        print(growth_table(small_profile, big_profile, args.small, args.clients, args.profile))


def growth_table(small: dict[str, float], big: dict[str, float], n_small: int, n_big: int, top: int) -> str:
    """The `top` functions whose µs of CPU per client-round grow most from `small` to `big`."""
    names = sorted(set(small) | set(big), key=lambda k: big.get(k, 0.0) - small.get(k, 0.0), reverse=True)[:top]
    lines = [f"{'growth':>8} {f'at {n_small:,}':>10} {f'at {n_big:,}':>10}  µs CPU per client-round by function (self time; mean of the runs)"]
    for name in names:
        a, b = small.get(name, 0.0), big.get(name, 0.0)
        lines.append(f"{b - a:+8.2f} {a:10.2f} {b:10.2f}  {name}")
    a, b = sum(small.values()), sum(big.values())
    lines.append(f"{b - a:+8.2f} {a:10.2f} {b:10.2f}  all functions")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
