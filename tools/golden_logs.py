"""Run a fixed set of shipped scenarios (few rounds) into DIR, for byte-for-byte
comparison of message logs and traces before and after an engine change.

    python tools/golden_logs.py DIR            # write DIR/<scenario>/...
    python tools/golden_logs.py DIR --compare OTHER_DIR

The compared files are every algorithm/run's messages log and the trace; a change
of the engine that keeps fates, records and ids leaves them identical.
"""

from __future__ import annotations

import argparse
import filecmp
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "quickstart": ["run.rounds=8", "run.runs=2"],
    "quickstart_scripted": ["run.rounds=8", "run.runs=1"],
    "paofed_fig4_2a": ["run.rounds=150", "run.runs=1"],
    "pgfl_faults": ["run.rounds=4", "run.runs=1"],
    "zcdpnfl_stragglers": ["run.rounds=4", "run.runs=1"],
    "npflrl_stragglers": ["run.rounds=4", "run.runs=1"],
    "graphfl_stragglers": ["run.rounds=3", "run.runs=1"],
}


def produce(out: Path) -> None:
    for name, sets in CASES.items():
        args = [sys.executable, "-c", "from netemu.cli import main; raise SystemExit(main())", "run", str(ROOT / "scenarios" / f"{name}.toml"), "--quiet",
                "--out", str(out / name), "--set", "output.plots=false"]
        for s in sets:
            args += ["--set", s]
        subprocess.run(args, check=True)


def compare(a: Path, b: Path) -> int:
    bad = 0
    n = 0
    for fa in sorted(a.rglob("*")):
        if not fa.is_file() or not (fa.suffix in (".jsonl", ".msgpack", ".csv") or fa.name.startswith("messages")):
            continue
        fb = b / fa.relative_to(a)
        n += 1
        if not fb.exists() or not filecmp.cmp(fa, fb, shallow=False):
            print("DIFFERS:", fa.relative_to(a))
            bad += 1
    print(f"{n} files compared, {bad} differ")
    return bad


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", type=Path)
    p.add_argument("--compare", type=Path)
    args = p.parse_args()
    if args.compare:
        sys.exit(1 if compare(args.compare, args.dir) else 0)
    produce(args.dir)


if __name__ == "__main__":
    main()
