"""Step-size calibration by equal initial convergence (thesis §4.4.1), reproducibly.

The thesis sets "the learning rates ... to yield identical initial convergence rates so
that steady-state values may be compared" but gives neither the baselines' rates nor how
the initial rate is measured.  netemu measures it as the *initial figure*: 10 log10 of the
test MSE (eq. 4.36: averaged over Monte Carlo runs) averaged over iterations 0 … W−1.
This tool runs the reference algorithm and the candidate at each value of one parameter
on the scenario's environment, for W iterations and the scenario's runs (or --runs), and
prints one line per value: the initial figure, its difference to the reference, and
(with --steady) the steady-state figure over the last 200 of the scenario's iterations.
(The mean of the dB values over the window is printed beside it: the docs quoted that
figure before this tool existed.)  The value whose initial figure is closest to the reference's is printed last.

    python tools/calibrate_step.py scenarios/paofed_fig4_3a.toml \
        --reference pao-fed-u1 --candidate online-fedsgd --param mu \
        --values 0.1,0.13,0.2,0.3,0.4 [--window 100] [--runs 10] [--seed 1] [--steady]

Everything is deterministic: the same arguments print the same numbers.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import tomllib
from collections import defaultdict
from pathlib import Path

import numpy as np

from netemu.errors import NetemuError
from netemu.run.runner import execute
from netemu.scenario.load import parse_scenario

QUIET = ["output.log=false", "output.trace=false", "output.plots=false"]


def db_of_mean(curves: np.ndarray) -> float:
    """10 log10 of the linear MSE averaged over all entries of `curves` (values in dB)."""
    return float(10 * np.log10(np.mean(10 ** (curves / 10))))


def mean_db(curves: np.ndarray) -> float:
    """The mean of the dB values (the figure the docs quoted before this tool existed)."""
    return float(np.mean(curves))


def run_labels(path: Path, labels: list[str], overrides: list[str]) -> dict[str, np.ndarray]:
    """Run only the algorithms `labels` of the scenario at `path` with `overrides`;
    per label, the `mse_db` curves as a runs × iterations array."""
    raw = tomllib.loads(path.read_text())
    entries = [a for a in raw["algorithm"] if a.get("label", a["name"]) in labels]
    missing = set(labels) - {a.get("label", a["name"]) for a in entries}
    if missing:
        have = ", ".join(a.get("label", a["name"]) for a in raw["algorithm"])
        raise SystemExit(f"calibrate_step: {path}: no algorithm labelled {sorted(missing)}; labels: {have}")
    raw["algorithm"] = entries
    sc = parse_scenario(raw, path, QUIET + overrides)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        execute(sc, out, quiet=True)
        by: dict[str, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
        with open(out / "metrics.csv") as f:
            for r in csv.DictReader(f):
                if r["metric"] == "mse_db":
                    by[r["algorithm"]][int(r["run"])][int(r["round"])] = float(r["value"])
    return {alg: np.array([[runs[r][n] for n in sorted(runs[r])] for r in sorted(runs)]) for alg, runs in by.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--reference", required=True, help="label of the algorithm whose initial rate is matched")
    parser.add_argument("--candidate", required=True, help="label of the algorithm whose parameter is calibrated")
    parser.add_argument("--param", default="mu", help="the candidate's parameter (mu; server_lr for signsgd)")
    parser.add_argument("--values", required=True, help="comma-separated values to try")
    parser.add_argument("--window", type=int, default=100, help="iterations of the initial figure (100)")
    parser.add_argument("--runs", type=int, help="Monte Carlo runs (the scenario's by default)")
    parser.add_argument("--seed", type=int, help="root seed (the scenario's by default)")
    parser.add_argument("--steady", action="store_true", help="also run all iterations and print the steady state")
    args = parser.parse_args(argv)
    values = [float(v) for v in args.values.split(",")]
    common = [f"run.runs={args.runs}"] if args.runs else []
    common += [f"run.seed={args.seed}"] if args.seed is not None else []
    last = 200
    try:
        rounds = tomllib.loads(args.scenario.read_text())["run"]["rounds"]
        length = [] if args.steady else [f"run.rounds={args.window}"]
        ref = run_labels(args.scenario, [args.reference], common + length)[args.reference]
        ref_init = db_of_mean(ref[:, : args.window])
        line = f"{args.reference} (reference): initial {ref_init:+.2f} dB (mean of dB {mean_db(ref[:, : args.window]):+.2f})"
        if args.steady:
            line += f", steady {db_of_mean(ref[:, rounds - last:]):+.2f} dB"
        print(f"{args.scenario.name}, {ref.shape[0]} runs, initial figure over iterations 0-{args.window - 1}", flush=True)
        print(line, flush=True)
        rows = []
        for v in values:
            cur = run_labels(args.scenario, [args.candidate], common + length + [f"algorithm.{args.candidate}.{args.param}={v}"])
            c = cur[args.candidate]
            init = db_of_mean(c[:, : args.window])
            line = f"{args.candidate} {args.param}={v:g}: initial {init:+.2f} dB ({init - ref_init:+.2f}; mean of dB {mean_db(c[:, : args.window]):+.2f})"
            if args.steady:
                line += f", steady {db_of_mean(c[:, rounds - last:]):+.2f} dB"
            print(line, flush=True)
            rows.append((v, init))
    except NetemuError as exc:
        print(f"calibrate_step: {exc}", file=sys.stderr)
        return exc.exit_code
    best = min(rows, key=lambda r: abs(r[1] - ref_init))[0]
    print(f"closest initial figure: {args.param} = {best:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
