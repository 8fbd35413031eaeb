"""Start-up cost: `import netemu` and the whole command `netemu run
scenarios/quickstart.toml --quiet` (plots on, as by default, and with plots off), each
in a fresh interpreter, against the floor of starting a bare interpreter
(`python -c pass`) measured in the same invocation.  Wall and CPU time (children's
rusage) of the child process, min of --reps after one warm-up run that writes the
bytecode caches (PYTHONDONTWRITEBYTECODE is ignored: an installed package has them);
plus which heavy modules each loaded.

    python tools/bench_startup.py [--reps 3] [--tree DIR]   # DIR: another source tree to measure

A command that fails stops the measurement: an older tree run with the installed netemu's entry
points is refused at validation (exit 2, ~0.6 s, nothing plotted), which is no start-up figure; give
it its own entry points (a netemu-*.dist-info with its pyproject's, on PYTHONPATH: docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("matplotlib", "scipy", "sklearn", "tqdm", "dask", "pandas", "structlog", "networkx", "importlib.metadata")

REPORT = f"import sys; print(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"


def child(code: str, cwd: Path) -> tuple[float, float, str]:
    # as an installed package starts: from the bytecode cached by the first (discarded) run, whatever
    # PYTHONDONTWRITEBYTECODE this shell sets (else every module is compiled again, ~0.4 s)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"bench_startup: the measured command failed (exit {out.returncode}) in {cwd}:\n{out.stderr.strip()[-2000:]}")
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""


def best(code: str, cwd: Path, reps: int) -> dict:
    child(code, cwd)  # warm-up: writes the bytecode caches
    runs = [child(code, cwd) for _ in range(reps)]
    return {"cpu_s": round(min(r[0] for r in runs), 3), "wall_s": round(min(r[1] for r in runs), 3), "loaded": runs[-1][2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=ROOT, help="source tree whose netemu to measure (run from there)")
    args = parser.parse_args()
    tree = args.tree.resolve()
    floor = best("pass", tree, args.reps)
    out = {"floor_python_start": floor}
    with tempfile.TemporaryDirectory() as tmp:
        cases = {
            "import_netemu": "import netemu; " + REPORT,
            "run_quickstart": None,
            "run_quickstart_no_plots": None,
        }
        for name, code in cases.items():
            if code is None:
                extra = ", '--set', 'output.plots=false'" if name.endswith("no_plots") else ""
                code = ("import os, sys, tempfile; from netemu.cli import main\n"
                        f"d = tempfile.mkdtemp(dir={tmp!r})\n"
                        f"code = main(['run', {str(tree / 'scenarios' / 'quickstart.toml')!r}, '--quiet', '--out', os.path.join(d, 'r'){extra}])\n"
                        + REPORT + "\nsys.exit(code)")  # a run that fails (exit 2: refused at validation) is no measurement
            r = best(code, tree, args.reps)
            r["ratio_wall"] = round(r["wall_s"] / floor["wall_s"], 1)
            out[name] = r
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
