"""Run-folder outputs: metrics.csv (long format), summary.json and learning-curve PNGs.

Formats are documented in docs/formats.md.
"""

from __future__ import annotations

import csv
import json
import warnings
from collections import defaultdict
from pathlib import Path
from typing import overload

import numpy as np
from numpy.typing import ArrayLike

from netemu.errors import WRITE_ERRNOS, ReportError, WriteFailed

__all__ = [
    "METRIC_COLUMNS", "ReportError", "aggregate_metrics", "curves_time", "final_values", "plot_curves", "plot_runs",
    "plot_sweep",
    "read_metrics",
    "write_metrics", "write_privacy", "write_summary",
]

METRIC_COLUMNS = ("algorithm", "run", "round", "time", "metric", "value")


@overload
def mean_over(metric: str, values: ArrayLike, axis: None = None) -> float: ...
@overload
def mean_over(metric: str, values: ArrayLike, axis: int) -> np.ndarray: ...
def mean_over(metric: str, values: ArrayLike, axis: int | None = None) -> np.ndarray | float:
    """The mean of a metric's values; a `*_db` metric is averaged in the linear domain and
    converted back (the MSE is averaged over Monte Carlo runs before taking dB, eq. 4.36)."""
    values = np.asarray(values, dtype=float)
    if metric.endswith("_db"):
        return 10 * np.log10(np.mean(10 ** (values / 10), axis=axis))
    return np.mean(values, axis=axis)


def aggregate_metrics(algorithm: str, run: int, metrics: list[tuple]) -> list[tuple]:
    """World metrics (actor, round, time, metric, value) -> one row per (round, metric).

    When several actors report the same metric in a round (e.g. every peer its
    error), the row holds their mean and the time of the last report.
    """
    groups: dict[tuple[int, str], list] = defaultdict(list)
    for _actor, rnd, t, name, value in metrics:
        groups[(rnd, name)].append((t, value))
    rows = []
    for (rnd, name), items in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        rows.append((algorithm, run, rnd, max(t for t, _ in items), name, float(mean_over(name, [v for _, v in items]))))
    return rows


def write_metrics(path: Path, rows: list[tuple]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(METRIC_COLUMNS)
        for alg, run, rnd, t, name, value in rows:
            w.writerow((alg, run, rnd, repr(float(t)), name, repr(float(value))))


PRIVACY_COLUMNS = ("algorithm", "run", "client", "round", "rho", "rho_total")


def write_privacy(path: Path, rows: list[tuple]) -> None:
    """privacy.csv: the zCDP each client spent in each round with a release, and its running total."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(PRIVACY_COLUMNS)
        for alg, run, client, rnd, rho, total in rows:
            w.writerow((alg, run, client, rnd, repr(float(rho)), repr(float(total))))


def final_values(rows: list[tuple]) -> dict[str, dict[str, float]]:
    """Per algorithm and metric: the mean over Monte Carlo runs of the last value (`mean_over`)."""
    last: dict[tuple[str, str, int], tuple[int, float]] = {}
    for alg, run, rnd, _t, name, value in rows:
        key = (alg, name, run)
        if key not in last or rnd >= last[key][0]:
            last[key] = (rnd, value)
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (alg, name, _run), (_rnd, value) in last.items():
        out[alg][name].append(value)
    return {alg: {name: float(mean_over(name, v)) for name, v in sorted(m.items())} for alg, m in out.items()}


def _finite_or_null(x):
    """JSON has no NaN or infinity: such a number is written as null (summary.json's
    `warnings` says which final metric was NaN)."""
    if isinstance(x, float) and not np.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite_or_null(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite_or_null(v) for v in x]
    return x


def write_summary(path: Path, summary: dict) -> None:
    path.write_text(json.dumps(_finite_or_null(summary), indent=2, sort_keys=False, allow_nan=False) + "\n")


BANDS = ("auto", "ci", "minmax", "none")
_BAND_LABEL = {"ci": "band: 95 % t-interval of the mean over runs", "minmax": "band: min–max over runs"}


def _band(metric: str, values: np.ndarray, band: str) -> tuple[np.ndarray, np.ndarray]:
    """The band of a runs × points matrix: its 95 % t-interval (`ci`), its min and max (`minmax`), or none."""
    if band == "ci":
        from netemu.report.intervals import t_band

        return t_band(values, metric)
    if band == "none":
        m = mean_over(metric, values, axis=0)
        return m, m
    return values.min(0), values.max(0)


def resolve_band(band: str, runs: int) -> str:
    """`--band auto`: the t-interval when every series has at least 3 runs, else min–max."""
    if band not in BANDS:
        raise ReportError(f"--band {band!r}: accepted {', '.join(BANDS)}")
    return ("ci" if runs >= 3 else "minmax") if band == "auto" else band


def runs_per_series(rows: list[tuple], metric: str) -> int:
    """The fewest Monte Carlo runs any algorithm reported `metric` in (0 without rows)."""
    runs: dict[str, set] = defaultdict(set)
    for alg, run, _rnd, _t, name, _v in rows:
        if name == metric:
            runs[alg].add(run)
    return min((len(r) for r in runs.values()), default=0)


def curves(rows: list[tuple], metric: str, band: str = "minmax") -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per algorithm: rounds, mean, and the band's lower and upper ends over runs of `metric`
    (rounds all runs reached; `band`: minmax, ci or none, `_band`)."""
    by: dict[str, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for alg, run, rnd, _t, name, value in rows:
        if name == metric:
            by[alg][run][rnd] = value
    out = {}
    for alg, runs in by.items():
        common = sorted(set.intersection(*(set(r) for r in runs.values())))
        if common:
            values = np.array([[runs[run][k] for k in common] for run in sorted(runs)])
            out[alg] = (np.array(common), mean_over(metric, values, axis=0), *_band(metric, values, band))
    return out


def curves_time(rows: list[tuple], metric: str, band: str = "minmax") -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per algorithm: virtual times, mean and band (`curves`) over runs of `metric` against time.

    A run's value at time t is the last one it reported at or before t (a metric holds
    until its next report); the grid is every time any run reported, from the moment
    every run has reported once.  So runs whose rounds take different times are compared
    at equal virtual times, not at equal round numbers."""
    by: dict[str, dict[int, list[tuple[float, int, float]]]] = defaultdict(lambda: defaultdict(list))
    for alg, run, rnd, t, name, value in rows:
        if name == metric:
            by[alg][run].append((t, rnd, value))
    out = {}
    for alg, runs in by.items():
        series = [sorted(v) for _, v in sorted(runs.items())]
        start = max(s[0][0] for s in series)
        grid = np.array(sorted({t for s in series for t, _, _ in s if t >= start}))
        values = np.empty((len(series), len(grid)))
        for i, s in enumerate(series):
            times = np.array([t for t, _, _ in s])
            vals = np.array([v for _, _, v in s])
            values[i] = vals[np.searchsorted(times, grid, side="right") - 1]
        out[alg] = (grid, mean_over(metric, values, axis=0), *_band(metric, values, band))
    return out


def read_metrics(run_dir: Path) -> list[tuple]:
    path = Path(run_dir) / "metrics.csv"
    if path.exists() and not path.is_file():  # a FIFO would block open(): never opened
        raise ReportError(f"{path}: not a regular file (a device, FIFO or socket)")
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != METRIC_COLUMNS:
                raise ReportError(f"{path}: expected the columns {','.join(METRIC_COLUMNS)}")
            return [(r["algorithm"], int(r["run"]), int(r["round"]), float(r["time"]), r["metric"], float(r["value"])) for r in reader]
    except OSError:
        raise ReportError(f"{run_dir}: not a run folder (no readable metrics.csv)") from None
    except csv.Error as exc:  # e.g. a field over the csv module's limit (131,072 characters)
        raise ReportError(f"{path}: not a readable CSV file ({exc})") from None
    except ValueError as exc:
        if isinstance(exc, ReportError):
            raise
        raise ReportError(f"{path}: malformed row ({exc})") from None


def _figure(series: dict, metric: str, title: str, path: Path, xlabel: str | None = None, step: bool = False,
            band: str = "minmax") -> Path:
    """Mean curve per label with its band over runs (`band`, said in the legend); a log
    axis for values spanning decades; `step`: values hold until the next point."""
    from matplotlib.figure import Figure  # imported here: only runs that draw pay for it; no pyplot state
    from matplotlib.patches import Patch

    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.subplots()
    banded = False
    for label, (x, mean, lo, hi) in series.items():
        (line,) = ax.plot(x, mean, label=label, lw=1.5, marker="o" if len(x) <= 30 and not step else None, ms=4,
                          drawstyle="steps-post" if step else "default")
        if band != "none" and np.any(np.nan_to_num(hi) > np.nan_to_num(lo)):
            banded = True
            ax.fill_between(x, lo, hi, where=np.isfinite(lo) & np.isfinite(hi), color=line.get_color(), alpha=0.2, lw=0,
                            step="post" if step else None)
    values = np.concatenate([m for _, m, _, _ in series.values()]) if series else np.array([])
    if values.size and values.min() > 0 and values.max() / values.min() > 100:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel or ("iteration" if metric.endswith("_db") else "round"))
    ax.set_ylabel(metric[:-3].upper() + " (dB)" if metric.endswith("_db") else metric)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if series:
        handles, labels = ax.get_legend_handles_labels()
        if banded:
            handles.append(Patch(color="gray", alpha=0.3, lw=0))
            labels.append(_BAND_LABEL[band] if band in _BAND_LABEL else "band: min–max over runs")
        ax.legend(handles, labels, title="line: mean over runs" if banded else None, fontsize="small", title_fontsize="small")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110, metadata={"Software": None} if path.suffix == ".png" else None)
    except OSError as exc:
        if exc.errno in WRITE_ERRNOS:  # disk full, read-only, I/O error: exit 1, not bad input
            raise WriteFailed(path, exc) from None
        raise ReportError(f"{path}: cannot write the figure ({exc.strerror or exc})") from None
    except ValueError as exc:  # an image format matplotlib does not write (--out p.file)
        raise ReportError(f"--out {path}: {exc}") from None
    return path


def plot_curves(rows: list[tuple], out_dir: Path, title: str = "", fmt: str = "png") -> list[Path]:
    """One figure per metric in `out_dir`: the algorithms' mean over runs, with the 95 % t-interval
    from 3 runs on, else the min–max over runs."""
    out = []
    for metric in sorted({r[4] for r in rows}):
        band = resolve_band("auto", runs_per_series(rows, metric))
        out.append(_figure(curves(rows, metric, band), metric, title, out_dir / f"curves_{metric.replace('/', '_')}.{fmt}", band=band))
    return out


def plot_runs(run_dirs: list[Path], metric: str, out: Path | None = None, fmt: str = "png", x: str = "round",
              band: str = "auto") -> Path:
    """`metric` of every algorithm of every run folder in one figure, against rounds or
    (`x="time"`) virtual time; `band`: `BANDS` (auto: the t-interval from 3 runs on, else min–max)."""
    if x not in ("round", "time"):
        raise ReportError(f"--x {x!r}: with run folders, accepted 'round' or 'time' (a swept key needs a sweep folder)")
    resolve_band(band, 0)  # refuse an unknown band before reading anything
    tables = [(d, read_metrics(d)) for d in run_dirs]
    band = resolve_band(band, min(runs_per_series(rows, metric) for _, rows in tables) if tables else 0)
    series = {}
    for d, rows in tables:
        found = curves(rows, metric, band) if x == "round" else curves_time(rows, metric, band)
        if not found:
            known = ", ".join(sorted({r[4] for r in rows}))
            raise ReportError(f"{d}: no metric {metric!r} in metrics.csv (it has: {known})")
        for alg, c in found.items():
            series[alg if len(run_dirs) == 1 else f"{Path(d).name}: {alg}"] = c
    out = Path(out) if out is not None else Path(f"{metric.replace('/', '_')}.{fmt}")
    if x == "time":
        return _figure(series, metric, "", out, xlabel="virtual time (s)", step=True, band=band)
    return _figure(series, metric, "", out, band=band)


def plot_sweep(sweep_dir: Path, metric: str, x: str, out: Path | None = None, fmt: str = "png", band: str = "auto") -> Path:
    """The final `metric` against the swept parameter `x`, per algorithm: the mean over
    the other grid dimensions (e.g. seeds) with a band (`plot_runs`; e.g. NMSD vs τ)."""
    resolve_band(band, 0)
    path = Path(sweep_dir) / "sweep.csv"
    if path.exists() and not path.is_file():  # a FIFO would block open(): never opened
        raise ReportError(f"{path}: not a regular file (a device, FIFO or socket)")
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError:
        raise ReportError(f"{sweep_dir}: not a sweep folder (no readable sweep.csv)") from None
    keys = [k for k in (rows[0] if rows else ()) if k not in ("folder", "status", "error", "algorithm", "metric", "value")]
    if rows and x not in keys:
        raise ReportError(f"{path}: {x!r} was not swept; swept: {', '.join(keys)}")
    values: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    skipped = 0
    for r in rows:
        if r.get("status", "complete") != "complete":  # a failed or early-ended point's values are partial
            skipped += r["metric"] == metric
        elif r["metric"] == metric:
            try:
                values[r["algorithm"]][float(r[x])].append(float(r["value"]))
            except (TypeError, ValueError):
                raise ReportError(f"{path}: folder {r.get('folder')!r}: {x} = {r.get(x)!r}, value = {r.get('value')!r}: expected numbers") from None
    if not values:
        raise ReportError(f"{path}: no final values of metric {metric!r} from complete points ({skipped} from other points)")
    if skipped:
        warnings.warn(f"{path}: {skipped} value(s) of {metric!r} from failed or incomplete points are left out of the plot", stacklevel=2)
    band = resolve_band(band, min(len(a) for by_x in values.values() for a in by_x.values()))
    series = {}
    for alg, by_x in values.items():
        xs = np.array(sorted(by_x))
        v = [np.array(by_x[k]) for k in xs]
        ends = [_band(metric, a[:, None], band) for a in v]
        series[alg] = (xs, np.array([mean_over(metric, a) for a in v]), np.array([lo[0] for lo, _ in ends]), np.array([hi[0] for _, hi in ends]))
    out = Path(out) if out is not None else Path(f"{metric.replace('/', '_')}_vs_{x.split('.')[-1]}.{fmt}")
    return _figure(series, metric, f"final {metric} (mean over the other grid values)", out, xlabel=x, band=band)
