"""Instructions per message, counted by valgrind's callgrind: the engine's cost in a unit that the
machine's load does not move (about ±0.6 % from run to run, where CPU time on a shared machine
moves by ±20 %), for changes too small for `bench_net`'s timings to resolve.

For each source tree given, `bench_net`'s run — with --cohort (the default here: a server
broadcasting to a cohort of N−1 clients over lossy links with exponential delays, collecting with
`gather`), --instant or one actor per client — is counted at two numbers of rounds, and the
difference is divided by the difference in messages: the instructions of one message, without the
imports, the world's build or the teardown.  The floor (`bench_net.reference`: the same fate draws,
envelope header sizes, payload copies and two log lines per message) is counted the same way, so
each tree's emulated/floor ratio is in one unit.  Each tree runs its own netemu and its own
tools/bench_net.py (PYTHONPATH set to it); the first tree given is the reference of the ratios
between trees.  Counts are made with PYTHONHASHSEED=0 (set iteration orders fixed).

    python tools/bench_instructions.py                      # this tree, 256 clients
    python tools/bench_instructions.py --trees ../base .    # side by side: base, then this tree
    python tools/bench_instructions.py --clients 10000 --rounds 2 4 --no-floor

The two round counts should differ by 10,000 messages or more (it says so otherwise): below that,
one-time costs (first uses, caches) weigh in.  Needs valgrind (apt-get install valgrind); callgrind runs ~50× slower than Python alone, so 256
clients × (70, 110) rounds takes about 4 minutes per tree, the floor another 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# what a child process runs: one `bench_net` emulation, or its floor, printing the messages it handled
CHILD = """
import os, sys, tempfile
sys.path.insert(0, os.path.join(sys.argv[1], "tools"))
import bench_net
what, n, rounds, mode = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
flags = {"cohort": mode == "cohort", "instant": mode == "instant"}
with tempfile.TemporaryDirectory() as tmp:
    log = os.path.join(tmp, "messages.jsonl")
    if what == "emulate":
        print(bench_net.emulate(n, rounds, log, cohort=flags["cohort"], instant=flags["instant"]))
    else:  # the floor of `rounds` messages (here: the message count) over 2 (n - 1) links
        bench_net.reference(rounds, 2 * (n - 1), log, instant=flags["instant"])
        print(rounds)
"""

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def count(tree: Path, what: str, n: int, rounds: int, mode: str) -> tuple[int, int]:
    """(instructions, messages) of one child run under callgrind."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CHILD)
    try:
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, f.name,
                              str(tree), what, str(n), str(rounds), mode], env=env, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    found = _COLLECTED.search(out.stderr)
    if out.returncode != 0 or found is None:
        raise SystemExit(f"bench_instructions: the {what} run of {tree} failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    return int(found.group(1)), int(out.stdout.split()[-1])


def per_message(tree: Path, what: str, n: int, rounds: tuple[int, int], mode: str) -> tuple[float, list[int]]:
    """Instructions per message between the two runs, and the runs' messages."""
    (i1, m1), (i2, m2) = (count(tree, what, n, r, mode) for r in rounds)
    if m2 <= m1:
        raise SystemExit(f"bench_instructions: {rounds[1]} rounds sent no more messages than {rounds[0]} ({m2} vs {m1})")
    if m2 - m1 < 10_000:
        print(f"bench_instructions: only {m2 - m1} messages between the two {what} runs of {tree}: one-time costs (first "
              "uses, caches) weigh in; widen --rounds for 10,000 or more", file=sys.stderr)
    return (i2 - i1) / (m2 - m1), [m1, m2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs="+", type=Path, default=[ROOT], help="source trees, the first the reference (default: this one)")
    parser.add_argument("--clients", type=int, default=256, help="the star's nodes, server included (default 256)")
    parser.add_argument("--rounds", type=int, nargs=2, default=[70, 110], metavar=("R1", "R2"), help="the two round counts (default 70 110)")
    parser.add_argument("--mode", choices=("cohort", "instant", "actors"), default="cohort", help="bench_net's run (default cohort)")
    parser.add_argument("--no-floor", action="store_true", help="count the emulations only")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (apt-get install valgrind)")
    if args.clients < 2 or not 0 < args.rounds[0] < args.rounds[1]:
        parser.error(f"--clients must be ≥ 2 and --rounds two increasing positive counts, got {args.clients} and {args.rounds}")
    for tree in args.trees:  # all checked before the first count (minutes each)
        if not (tree / "netemu").is_dir() or not (tree / "tools" / "bench_net.py").is_file():
            parser.error(f"--trees: {tree} is not a netemu source tree (no netemu/ or tools/bench_net.py)")
    first: float | None = None
    for tree in args.trees:
        emulated, messages = per_message(tree.resolve(), "emulate", args.clients, tuple(args.rounds), args.mode)
        row: dict = {"tree": str(tree), "clients": args.clients, "mode": args.mode, "rounds": args.rounds, "messages": messages,
                     "instructions_per_msg": round(emulated)}
        if not args.no_floor:
            floor, _ = per_message(tree.resolve(), "floor", args.clients, (messages[0], messages[1]), args.mode)
            row |= {"floor_instructions_per_msg": round(floor), "ratio_to_floor": round(emulated / floor, 3)}
        first = emulated if first is None else first
        row["ratio_to_first_tree"] = round(emulated / first, 4)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
