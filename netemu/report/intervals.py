"""95 % Student-t confidence intervals of a mean over Monte Carlo runs.

For n runs with sample standard deviation s, the interval is mean ± t(0.975, n − 1) · s / √n
(scipy.special.stdtrit for the quantile, what scipy.stats.t.ppf computes).  A metric in dB is averaged in the linear domain (as
`mean_over` does), so its interval is the linear one converted to dB; when the linear lower
end is not positive the dB interval has no lower end (None).  Fewer than two runs: no interval.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["LEVEL", "final_intervals", "t_band", "t_interval"]

LEVEL = 0.95


def t_band(values: ArrayLike, metric: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Per column of `values` (runs × points; NaN where a run has no value): the interval's lower
    and upper ends, NaN where fewer than two runs have a value (or, in dB, no lower end)."""
    v = np.atleast_2d(np.asarray(values, dtype=float))
    db = metric.endswith("_db")
    x = 10 ** (v / 10) if db else v
    n = np.sum(np.isfinite(x), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(np.where(n >= 1, x, 0.0), axis=0)
        sd = np.nanstd(np.where(n >= 2, x, 0.0), axis=0, ddof=1) if v.shape[0] >= 2 else np.full(v.shape[1], np.nan)
        q = _t_quantile(np.maximum(n - 1, 1))
        half = np.where(n >= 2, q * sd / np.sqrt(np.maximum(n, 1)), np.nan)
        lo, hi = mean - half, mean + half
        if db:
            lo = np.where(lo > 0, 10 * np.log10(np.where(lo > 0, lo, 1.0)), np.nan)
            hi = 10 * np.log10(hi)
    return lo, hi


def _t_quantile(dof: ArrayLike) -> np.ndarray:
    """The Student-t quantile at 0.5 + LEVEL / 2 for `dof` degrees of freedom: scipy.special's
    `stdtrit`, which `scipy.stats.t.ppf` calls (the same values, checked for 1–1999 in
    tests/test_intervals.py), imported on first use — scipy.special costs ~0.3 s of CPU to import,
    scipy.stats ~1.4 s, paid by every `netemu run` that writes an interval."""
    from scipy.special import stdtrit

    return stdtrit(dof, 0.5 + LEVEL / 2)


@lru_cache(maxsize=256)
def _quantile(dof: int) -> float:
    return float(_t_quantile(dof))


def t_interval(values: ArrayLike, metric: str = "") -> tuple[float | None, float | None] | None:
    """The interval of the mean of `values` (NaN and infinities left out); None for fewer than two.
    (`t_band` for many columns at once; this one is called per curve point, so its quantile is cached.)"""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    n = len(v)
    if n < 2:
        return None
    db = metric.endswith("_db")
    x = 10 ** (v / 10) if db else v
    half = _quantile(n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    mean = float(x.mean())
    lo, hi = mean - half, mean + half
    if db:
        return (10 * math.log10(lo) if lo > 0 else None), (10 * math.log10(hi) if hi > 0 else None)
    return lo, hi


def final_intervals(rows: list[tuple]) -> dict[str, dict[str, dict]]:
    """Per algorithm and metric, from metrics.csv rows: the 95 % t-interval of the mean over runs of
    each run's last value (`lo`, `hi`: None with fewer than two runs) and `runs`."""
    last: dict[tuple[str, str, int], tuple[int, float]] = {}
    for alg, run, rnd, _t, name, value in rows:
        key = (alg, name, run)
        if key not in last or rnd >= last[key][0]:
            last[key] = (rnd, value)
    per: dict[str, dict[str, list[float]]] = {}
    for (alg, name, _run), (_rnd, value) in last.items():
        per.setdefault(alg, {}).setdefault(name, []).append(value)
    out: dict[str, dict[str, dict]] = {}
    for alg, metrics in per.items():
        out[alg] = {}
        for name, vals in sorted(metrics.items()):
            ci = t_interval(vals, name)
            out[alg][name] = {"lo": ci[0] if ci else None, "hi": ci[1] if ci else None, "runs": len(vals)}
    return out
