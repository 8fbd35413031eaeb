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


#: stdtrit(dof, 0.975) for dof = 1, 2, ..., 100 (runs = 2 ... 101), as scipy.special 1.17.1 computes it, written out so
#: that a run with at most 101 Monte Carlo runs does not import scipy.special (~0.3 s of CPU at every `netemu run`),
#: and writes the same bytes whichever scipy is installed (tests/test_intervals.py checks it against scipy's, to 2 ulp)
_T975 = np.array([
    12.706204736174694, 4.302652729749462, 3.1824463052837078, 2.7764451051977934, 2.5705818356363146, 2.4469118511449786,
    2.364624251592784, 2.306004135204166, 2.262157162798205, 2.228138851986274, 2.200985160091639, 2.1788128296672284,
    2.1603686564627913, 2.144786687917804, 2.131449545559776, 2.1199052992212546, 2.1098155778333156, 2.1009220402410382,
    2.0930240544083087, 2.085963447265864, 2.0796138447276795, 2.0738730679040254, 2.0686576104190486, 2.0638985616280245,
    2.0595385527532972, 2.0555294386428735, 2.0518305164802846, 2.0484071417952454, 2.045229642132703, 2.0422724563012378,
    2.039513446396408, 2.0369333434601016, 2.0345152974493383, 2.0322445093177186, 2.030107928250343, 2.0280940009804502,
    2.0261924630291093, 2.0243941639119694, 2.022690920036761, 2.021075390306273, 2.019540970441376, 2.0180817028184443,
    2.016692199227824, 2.0153675744437636, 2.014103388880846, 2.012895598919429, 2.0117405137297655, 2.010634757624232,
    2.0095752371292392, 2.008559112100761, 2.007583770315836, 2.006646805061688, 2.0057459953178687, 2.0048792881880564,
    2.0040447832891455, 2.003240718847872, 2.002465459291007, 2.0017174841452356, 2.000995378088267, 2.0002978220142604,
    1.999623584994939, 1.9989715170333788, 1.998340542520741, 1.997729654317693, 1.9971379083920038, 1.9965644189523117,
    1.996008354025296, 1.9954689314298435, 1.9949454151072374, 1.994437111771186, 1.9939433678456255, 1.9934635666618719,
    1.992997125889855, 1.992543495180932, 1.9921021540022417, 1.9916726096446642, 1.9912543953883846, 1.9908470688116906,
    1.9904502102301285, 1.990063421254446, 1.9896863234569029, 1.989318557136572, 1.9889597801751624, 1.9886096669757083,
    1.9882679074772216, 1.98793420623902, 1.9876082815890708, 1.9872898648311692, 1.986978699506281, 1.9866745407037683,
    1.9863771544186177, 1.98608631695113, 1.9858018143458227, 1.985523441866604, 1.9852510035054978, 1.984984311522457,
    1.9847231860139845, 1.9844674545084815, 1.9842169515864174, 1.9839715185235518,
])


def _t_quantile(dof: ArrayLike) -> np.ndarray:
    """The Student-t quantile at 0.5 + LEVEL / 2 for `dof` degrees of freedom: scipy.special's
    `stdtrit`, which `scipy.stats.t.ppf` calls — from `_T975` for whole dof of 1 to 100, else scipy.special imported
    on first use (scipy.stats would cost ~1.4 s of CPU, paid by every `netemu run` that writes an interval)."""
    d = np.asarray(dof)
    if d.dtype.kind in "iu" and d.size and d.min() >= 1 and d.max() <= len(_T975):
        return _T975[d - 1]
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
