"""A send's arrival events as one entry of the event queue (`Arrivals`, issue 40 item 1) against
one `Due` entry each, the queue before: the same events in the same order, side by side in one
process, CPU time (process_time), min of --reps.

    python tools/bench_arrivals.py                    # the queue alone: a broadcast's events, pushed and stepped
    python tools/bench_arrivals.py --quickstart 20000 --rounds 2 --reps 3
                                                      # + the quick start run in-process both ways, alternating

The queue alone: N events at exponential times (one broadcast to N clients over random delays)
queued and then processed, µs per event.  --quickstart: `netemu run scenarios/quickstart.toml` at
that many clients (log and trace on, plots off, one run), once with `Arrivals` and once with one
`Due` per event (the network's queueing swapped in place), alternating, CPU s of the whole command
(scenario load and build included, identical in both).  Both ways write the same bytes.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

import netemu.engine.net.network as network
from netemu.engine.clock import VirtualEnvironment
from netemu.engine.net.inflight import Arrivals, Due

ROOT = Path(__file__).resolve().parent.parent


def one_each(env: VirtualEnvironment, callback, items: list) -> None:
    """The queue before: one `Due` per arrival event, in the order it was made."""
    for t, order, value in items:
        env.schedule_reserved(Due((callback,), value), t, order)


def queue_alone(n: int, reps: int) -> dict[str, float]:
    rnd = random.Random(1)
    waits = [rnd.expovariate(100.0) for _ in range(n)]
    out = {}
    for name, queue in (("one Due each", one_each), ("Arrivals", Arrivals)):
        best = float("inf")
        for _ in range(reps):
            env = VirtualEnvironment()
            c0 = time.process_time()
            for _ in range(max(1, 200_000 // n)):
                now = env.now
                queue(env, lambda e: None, [(now + w, env.reserve(), None) for w in waits])
                while env.peek() != float("inf"):
                    env.step()
            best = min(best, (time.process_time() - c0) / (max(1, 200_000 // n) * n))
        out[name] = best * 1e6
    return out


def quickstart(clients: int, rounds: int, reps: int) -> dict[str, float]:
    from netemu.cli import main

    cpu: dict[str, list[float]] = {"one Due each": [], "Arrivals": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            for name, queue in (("one Due each", one_each), ("Arrivals", Arrivals)):
                network._Arrivals = queue  # type: ignore[assignment]
                out = os.path.join(tmp, f"{rep}-{len(cpu[name])}-{name[0]}")
                c0 = time.process_time()
                main(["run", str(ROOT / "scenarios" / "quickstart.toml"), "--quiet", "--out", out, "--set", "output.plots=false",
                      "--set", f"topology.clients={clients}", "--set", f"run.rounds={rounds}", "--set", "run.runs=1"])
                cpu[name].append(time.process_time() - c0)
    network._Arrivals = Arrivals
    return {name: min(v) for name, v in cpu.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 10_000, 100_000])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quickstart", type=int, help="clients of the quick start, run both ways")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    for n in args.sizes:
        r = queue_alone(n, args.reps)
        print(f"queue alone, {n} events: " + ", ".join(f"{k} {v:.2f} µs/event" for k, v in r.items())
              + f"; ratio {r['Arrivals'] / r['one Due each']:.2f}", flush=True)
    if args.quickstart:
        r = quickstart(args.quickstart, args.rounds, args.reps)
        print(f"quick start, {args.quickstart} clients x {args.rounds} rounds: " + ", ".join(f"{k} {v:.2f} s CPU" for k, v in r.items())
              + f"; ratio {r['Arrivals'] / r['one Due each']:.3f}")


if __name__ == "__main__":
    main()
