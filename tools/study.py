"""The answer to a time-to-accuracy study, from one run folder of several Monte Carlo runs.

    python3 tools/study.py RUN_DIR --target accuracy=0.85:2 [--out DIR]

For each algorithm and run: the virtual time at which the metric first reaches the target and
holds it for k consecutive evaluations (`:k`, default 1; the time is that of the first of them),
the bytes sent on every link until then (message log `send` records, headers included), and the
final value.  Each is reported as the mean over runs with a 95 % Student-t interval
(mean ± t_{0.975, n−1} · s / √n); a run that never reaches the target counts as "not reached"
and is left out of the time and bytes means (the table says in how many runs it was reached).
Writes `curves.png` (the metric against virtual time and against gigabytes sent: mean over runs,
95 % band) into --out (default: RUN_DIR) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import csv
import math
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
from scipy import stats

from netemu.logarrow import is_arrow
from netemu.report.logtools import log_path, read


def interval(values: list[float]) -> tuple[float, float]:
    """(mean, half-width of the 95 % t-interval); the half-width is nan for fewer than 2 values."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return math.nan, math.nan
    if a.size == 1:
        return float(a[0]), math.nan
    return float(a.mean()), float(stats.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size))


def curves(folder: Path, metric: str) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """(algorithm, run) -> [(time, value)] of `metric`, in time order."""
    out: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    with open(folder / "metrics.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["metric"] == metric:
                out[(row["algorithm"], int(row["run"]))].append((float(row["time"]), float(row["value"])))
    return out


def _sends(path: Path) -> Iterator[dict]:
    """The send records of a message log, either format; of JSON lines only the sends are parsed."""
    if is_arrow(path):  # output.log_format = "arrow"
        yield from (r for r in read(path) if r["event"] == "send")
        return
    with open(path, "rb") as f:
        for line in f:
            if b'"event":"send"' in line:
                yield orjson.loads(line)


def sends(folder: Path) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """(algorithm, run) -> (send times, cumulative bytes sent), from the message log."""
    times: dict[tuple[str, int], list[float]] = defaultdict(list)
    sizes: dict[tuple[str, int], list[int]] = defaultdict(list)
    path = log_path(folder)
    for r in _sends(path):
        key = (r["algorithm"], r["run"])
        times[key].append(r["t"])
        sizes[key].append(r["bytes"])
    return {k: (np.asarray(times[k]), np.cumsum(sizes[k])) for k in times}


def reached(points: list[tuple[float, float]], target: float, hold: int, higher: bool) -> float | None:
    """The time of the first of `hold` consecutive evaluations at or past `target`, or None."""
    run = 0
    for i, (_, v) in enumerate(points):
        run = run + 1 if (v >= target if higher else v <= target) else 0
        if run == hold:
            return points[i - hold + 1][0]
    return None


def bytes_by(log: tuple[np.ndarray, np.ndarray], t: float) -> float:
    times, total = log
    i = int(np.searchsorted(times, t, side="right"))
    return float(total[i - 1]) if i else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--target", required=True, help="METRIC=VALUE[:K], e.g. accuracy=0.85:2 (K consecutive evaluations)")
    ap.add_argument("--lower", action="store_true", help="the target is reached at or below VALUE (a loss, an MSE)")
    ap.add_argument("--out", type=Path, help="folder for curves.png (default: the run folder)")
    args = ap.parse_args()
    metric, _, rest = args.target.partition("=")
    value, _, k = rest.partition(":")
    target, hold = float(value), int(k or 1)
    cur, log = curves(args.run_dir, metric), sends(args.run_dir)
    if not cur:
        raise SystemExit(f"{args.run_dir}/metrics.csv has no metric {metric!r}")
    algorithms = list(dict.fromkeys(a for a, _ in cur))
    print(f"target: {metric} {'<=' if args.lower else '>='} {target}, held for {hold} consecutive evaluation(s); "
          "mean ± 95 % t-interval over the runs that reached it\n")
    print(f"| algorithm | reached | time to target (s) | bytes to target (MB) | final {metric} |")
    print("| --- | --- | --- | --- | --- |")
    for alg in algorithms:
        runs = sorted(r for a, r in cur if a == alg)
        times = [reached(cur[(alg, r)], target, hold, not args.lower) for r in runs]
        hit = [(r, t) for r, t in zip(runs, times) if t is not None]
        tm, th = interval([t for _, t in hit])
        bm, bh = interval([bytes_by(log[(alg, r)], t) / 1e6 for r, t in hit])
        fm, fh = interval([cur[(alg, r)][-1][1] for r in runs])
        print(f"| {alg} | {len(hit)} of {len(runs)} | {tm:.1f} ± {th:.1f} | {bm:.0f} ± {bh:.0f} | {fm:.4f} ± {fh:.4f} |")
    plot(cur, log, algorithms, metric, args.out or args.run_dir)


def plot(cur, log, algorithms, metric: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for alg in algorithms:
        runs = sorted(r for a, r in cur if a == alg)
        n = min(len(cur[(alg, r)]) for r in runs)
        values = np.array([[v for _, v in cur[(alg, r)][:n]] for r in runs])
        t = np.array([[t for t, _ in cur[(alg, r)][:n]] for r in runs]).mean(axis=0)
        gb = np.array([[bytes_by(log[(alg, r)], s) / 1e9 for s, _ in cur[(alg, r)][:n]] for r in runs]).mean(axis=0)
        mean = values.mean(axis=0)
        half = stats.t.ppf(0.975, len(runs) - 1) * values.std(axis=0, ddof=1) / math.sqrt(len(runs)) if len(runs) > 1 else 0 * mean
        for ax, x in zip(axes, (t, gb)):
            (line,) = ax.plot(x, mean, label=alg)
            ax.fill_between(x, mean - half, mean + half, color=line.get_color(), alpha=0.2)
    axes[0].set_xlabel("virtual time (s)")
    axes[1].set_xlabel("gigabytes sent (all links)")
    for ax in axes:
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    axes[0].legend()
    runs = {r for _, r in cur}
    fig.suptitle(f"{metric}: mean over {len(runs)} runs, 95 % t-interval band" if len(runs) > 1 else f"{metric}: one run (no interval)")
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "curves.png", dpi=110)
    print(f"\ncurves: {out / 'curves.png'}")


if __name__ == "__main__":
    main()
