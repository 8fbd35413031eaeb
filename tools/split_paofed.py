"""Where the CPU time of bench_paofed's emulated run goes: PAO-Fed-U1, K = 256, log and trace on.

A SIGPROF sampler (one sample per kernel tick of CPU time, 4 ms at HZ = 250) files each
sample under the deepest frame that matches a category: the algorithm (split into the
maths the vectorized floor also does, the per-client step, the server's per-client
bookkeeping and the data gather), the participation draws with their trace entries, the
network path (send, delivery, fates, message log), the codec and the actor/cohort
machinery.  Time spent in C is counted where Python resumes, so small categories are
approximate (±2 % of the run at 1,500 samples); the run's total CPU time is exact.

    python tools/split_paofed.py [--iterations 2000] [--detail]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from benchtime import sampled  # noqa: E402
from netemu.log import MessageLog  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.scenario.build import build_world  # noqa: E402
from netemu.trace import TraceWriter  # noqa: E402

# (file name part, function or None, category): the deepest matching frame of a sample decides,
# except that everything under a participation draw stays a participation draw
RULES = [
    ("asyncio", None, "machinery (event loop, actors, cohort)"), ("netemu/engine/clock.py", None, "machinery (event loop, actors, cohort)"),
    ("netemu/engine/world.py", None, "machinery (event loop, actors, cohort)"), ("netemu/engine/actors.py", None, "machinery (event loop, actors, cohort)"),
    ("netemu/engine/cohort.py", None, "machinery (event loop, actors, cohort)"),
    ("simpy", None, "network: send, links, delivery"), ("netemu/engine/net/", None, "network: send, links, delivery"),
    ("netemu/log.py", None, "network: message log"), ("orjson", None, "network: message log"),
    ("netemu/trace", None, "network: message fates, trace"), ("netemu/engine/rng.py", None, "network: message fates, trace"),
    ("netemu/wire/", None, "codec"), ("msgpack", None, "codec"),
    ("online_fl.py", "client_updates", "alg"), ("online_fl.py", "on_messages", "alg"), ("online_fl.py", "run", "alg"),
    ("online_fl.py", "decode", "alg"), ("kernels/online.py", "aggregate", "alg"),
    ("netemu/coordination.py", "participants", "participation draws (with their trace entries)"),
    ("netemu/engine/net/network.py", "participates", "participation draws (with their trace entries)"),
    ("netemu/engine/net/network.py", "participations", "participation draws (with their trace entries)"),
]
ALG_FILES = ("online_fl.py", "kernels/online.py", "data/online.py")
FLOOR_MATHS = {"features", "rff_features", "lms_step", "mse_db", "aggregate", "expect", "with_data"}


def category(frame) -> tuple[str, str]:
    """(category, innermost algorithm function) of one sampled stack."""
    stack = []
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    cat, step = "other", ""
    for f in reversed(stack):  # root -> leaf
        file, name = f.f_code.co_filename, f.f_code.co_name
        for part, func, c in RULES:
            if part in file and (func is None or func == name):
                if cat.startswith("participation"):
                    break
                cat = c
                if c == "alg":
                    step = "client" if name in ("client_updates", "on_messages") else "server"
                break
    if cat != "alg":
        return cat, ""
    inner = next(f for f in stack if any(p in f.f_code.co_filename for p in ALG_FILES))
    fn = inner.f_code.co_name
    if fn in ("samples", "sample", "<listcomp>") and "data/online.py" in inner.f_code.co_filename:
        return "alg: data gather (samples)", fn
    if step == "client":
        return "alg: client step (per-client numpy)", fn
    if fn in FLOOR_MATHS:
        return "alg: maths the floor also does (features, LMS of idle clients, aggregation, test MSE)", fn
    return "alg: server per-client bookkeeping (share, selection, decode, loop)", fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--detail", action="store_true", help="also per innermost algorithm function")
    args = parser.parse_args()
    sc = load_scenario(ROOT / "scenarios" / "paofed_fig4_2a.toml", [f"run.rounds={args.iterations}", "run.runs=1"])
    u1 = sc.settings.labels.index("pao-fed-u1")
    counts: collections.Counter = collections.Counter()
    detail: collections.Counter = collections.Counter()

    def sample(frame) -> None:
        cat, fn = category(frame)
        counts[cat] += 1
        if fn:
            detail[f"{cat[:24]}… / {fn}"] += 1

    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "messages.jsonl", "wb") as log, \
            open(Path(tmp) / "trace.msgpack", "wb") as trace:
        writer = TraceWriter(trace, {"scenario": sc.name})
        world = build_world(sc, u1, 0, log=MessageLog(log).bind(algorithm="pao-fed-u1", run=0),
                            fates=writer.fates("pao-fed-u1", 0))
        c0 = time.process_time()
        with sampled(sample):
            world.run()
            writer.close(True)
            world.log.flush()
        cpu = time.process_time() - c0
    total = sum(counts.values()) or 1
    print(f"CPU {cpu:.2f} s, {total} samples")
    for cat, n in counts.most_common():
        print(f"  {cat:88s} {100 * n / total:5.1f} %  {cpu * n / total:5.2f} s")
    if args.detail:
        for key, n in detail.most_common():
            print(f"    {key:60s} {cpu * n / total:5.2f} s")


if __name__ == "__main__":
    main()
