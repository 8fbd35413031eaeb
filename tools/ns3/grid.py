"""Run the ns-3 reference grid: bulk TCP transfer times from tools/ns3/transfers.cc.

The grid (``points()``) is a deterministic list of named points: for each
topology and direction a base point plus one-factor-at-a-time variations,
a few tree-only variations, and a seeded random sample of the cross product.
Each point is run through the compiled ns-3 program (two at a time) and the
results are written as a JSON list of {"point": {...}, "ns3": {...}}.

Another tool runs the same ``points()`` through netemu and compares; import
this file by path (it has no side effects on import).

Build the program first:  sh tools/ns3/build.sh
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import itertools
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

GRID_NAME = "ns3-ref-v1"
HERE = Path(__file__).resolve().parent
DEFAULT_BINARY = HERE / "build" / "transfers"

MBIT = 1_000_000

# The parameters of a point, in the program's command-line spelling, with the
# base values every variation starts from.
BASE = {
    "topology": "star",
    "clients": 8,
    "bytes": 1_000_000,
    "direction": "up",
    "access": 10 * MBIT,
    "accessDelay": 0.001,
    "server": 20 * MBIT,
    "serverDelay": 0.001,
    "apRate": 100 * MBIT,
    "apDelay": 0.001,
    "clientsPerAp": 4,
    "queue": 100,
    "window": 4_194_304,
    "seed": 1,
}

# One-factor-at-a-time values (each also enters the random sample).
FACTORS = {
    "clients": [1, 2, 4, 8, 16, 32, 64],
    "bytes": [10_000, 100_000, 1_000_000, 10_000_000],
    "access": [10 * MBIT, 100 * MBIT],
    # 1 Gbit/s: faster than the sum of the access links at every client count
    # up to 64 x 10 Mbit/s and (base 8 clients) 8 x 100 Mbit/s.
    "server": [20 * MBIT, 100 * MBIT, 1000 * MBIT],
    "accessDelay": [0.001, 0.010, 0.050],
    "serverDelay": [0.001, 0.010, 0.050],
    "queue": [10, 100],
}

# Tree-only variations: AP uplink rate and delay, clients per AP.
TREE_FACTORS = {
    "apRate": [20 * MBIT, 100 * MBIT],
    "apDelay": [0.001, 0.010],
    "clientsPerAp": [2, 4, 8],
}

TOPOLOGIES = ["star", "tree", "dumbbell"]
DIRECTIONS = ["up", "down"]
SAMPLE_SIZE = 90
SAMPLE_SEED = 20240601


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def points() -> list[dict]:
    """The grid: a list of point dicts, each with a unique "name" and every parameter."""
    out: list[dict] = []
    seen: set[tuple] = set()

    def add(name: str, point: dict) -> None:
        key = tuple(sorted(point.items()))
        if key in seen:
            return
        seen.add(key)
        out.append({"name": name, **point})

    for topology, direction in itertools.product(TOPOLOGIES, DIRECTIONS):
        base = {**BASE, "topology": topology, "direction": direction}
        add(f"{topology}-{direction}-base", base)
        factors = dict(FACTORS)
        if topology == "tree":
            factors.update(TREE_FACTORS)
        for factor, values in factors.items():
            for value in values:
                add(f"{topology}-{direction}-{factor}={_fmt(value)}", {**base, factor: value})

    rng = random.Random(SAMPLE_SEED)
    axes = {"topology": TOPOLOGIES, "direction": DIRECTIONS, **FACTORS}
    added = 0
    while added < SAMPLE_SIZE:
        point = {**BASE, **{axis: rng.choice(values) for axis, values in axes.items()}}
        before = len(out)
        add(f"sample-{added:03d}", point)
        added += len(out) > before
    return out


def command(binary: Path, point: dict) -> list[str]:
    return [str(binary)] + [f"--{k}={_fmt(v)}" for k, v in point.items() if k != "name"]


def run_point(binary: Path, point: dict) -> dict:
    """Run one point through the ns-3 program; returns its parsed JSON output."""
    cmd = command(binary, point)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{point['name']}: {' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}"
        )
    result = json.loads(proc.stdout)
    params = result["params"]
    for key, value in point.items():
        if key != "name" and params.get(key) != value:
            raise RuntimeError(
                f"{point['name']}: the program read {key}={params.get(key)!r}, not {value!r}"
            )
    return result


def select(all_points: list[dict], only: list[str] | None, limit: int | None) -> list[dict]:
    chosen = all_points
    if only:
        chosen = [p for p in chosen if any(fnmatch.fnmatchcase(p["name"], pat) for pat in only)]
    if limit is not None:
        chosen = chosen[:limit]
    return chosen


def run_grid(binary: Path, chosen: list[dict], workers: int, log) -> list[dict]:
    results: list[dict | None] = [None] * len(chosen)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run_point, binary, p): i for i, p in enumerate(chosen)}
        done = 0
        for future in concurrent.futures.as_completed(futures):
            i = futures[future]
            result = future.result()
            results[i] = {"point": chosen[i], "ns3": result}
            done += 1
            log(
                f"[{done}/{len(chosen)}] {chosen[i]['name']}: last={result['last']} s "
                f"drops={result['queue_drops']} wall={result['wall_s']:.2f} s"
            )
    return [r for r in results if r is not None]


def family_main(doc: str, family_points, compare_lines, argv: list[str] | None = None, ns3: str | None = None) -> int:
    """The command line of a family beside the grid (loss.py, streams.py, queues.py): `--out FILE` runs
    `family_points()` through ns-3 into FILE, `--compare FILE` prints `compare_lines(FILE)`; with `ns3`
    (its help) a `--ns3` switch too, and `compare_lines(FILE, ns3)` says whether it was given."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="run ns-3 and write its results here")
    ap.add_argument("--compare", type=Path, help="compare netemu with these ns-3 results")
    ap.add_argument("--workers", type=int, default=2)
    if ns3:
        ap.add_argument("--ns3", action="store_true", help=ns3)
    args = ap.parse_args(argv)
    if args.out:
        results = run_grid(DEFAULT_BINARY, family_points(), args.workers, lambda line: print(line, file=sys.stderr, flush=True))
        args.out.write_text("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in results) + "\n]\n")
    if args.compare:
        print("\n".join(compare_lines(args.compare, args.ns3) if ns3 else compare_lines(args.compare)))
    if not (args.out or args.compare):
        ap.error("--out or --compare")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(
            f"Run the ns-3 reference grid ({GRID_NAME}) of bulk TCP transfers through "
            "tools/ns3/transfers.cc and write a JSON list of "
            '{"point": {...}, "ns3": {...}}.'
        ),
        epilog="Build the program first with: sh tools/ns3/build.sh",
    )
    parser.add_argument("--out", type=Path, help="where to write the JSON results")
    parser.add_argument(
        "--binary",
        type=Path,
        default=DEFAULT_BINARY,
        help=f"the compiled ns-3 program (default: {DEFAULT_BINARY})",
    )
    parser.add_argument("--limit", type=int, help="run only the first N selected points")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only points whose name matches NAME (a shell-style pattern; repeatable)",
    )
    parser.add_argument("--workers", type=int, default=2, help="ns-3 runs at a time (default 2)")
    parser.add_argument("--spread", type=float, default=0.0,
                        help="start each transfer at a uniform time in [0, SPREAD) seconds instead of all at t=0 "
                             "(ns-3's own seeded draw; the starts are stored, and compare.py sends at the same instants)")
    parser.add_argument("--list", action="store_true", help="print the selected points' names and exit")
    args = parser.parse_args(argv)

    chosen = select(points(), args.only, args.limit)
    if args.list:
        for p in chosen:
            print(p["name"])
        return 0
    if args.out is None:
        parser.error("--out is required (unless --list)")
    if not chosen:
        parser.error("no point matches --only")
    binary = args.binary
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        print(
            f"grid.py: the ns-3 program {binary} is missing or not executable; build it with\n"
            f"  sh {HERE / 'build.sh'} {binary}\n"
            "(needs: apt-get install -y libns3-dev g++ pkg-config)",
            file=sys.stderr,
        )
        return 2

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.spread > 0:
        chosen = [{**p, "startSpread": args.spread} for p in chosen]
    start = time.monotonic()
    try:
        results = run_grid(binary, chosen, args.workers, log)
    except RuntimeError as exc:
        print(f"grid.py: {exc}", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - start
    ns3_total = sum(r["ns3"]["wall_s"] for r in results)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    with tmp.open("w") as f:
        f.write("[\n")
        f.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in results))
        f.write("\n]\n")
    tmp.replace(args.out)
    incomplete = sum(1 for r in results if r["ns3"]["last"] is None)
    log(
        f"{len(results)} points -> {args.out}; ns-3 run time {ns3_total:.1f} s summed, "
        f"{elapsed:.1f} s wall with {args.workers} workers; {incomplete} with incomplete transfers"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
