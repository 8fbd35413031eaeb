"""Time to accuracy for `netemu report`: the virtual time and the bytes sent until a run's main
metric first reaches a target value.

The main metric is the one `--target METRIC=VALUE` names; without it, the first metric of
metrics.csv that is not bookkeeping (participants, staleness, privacy spent, unused messages). A metric whose
name says accuracy (acc, auc, f1, r2, score, reward) is better when higher, any other (mse,
loss, error) when lower. The default target is the best final value over the series compared,
relaxed by DEFAULT_FACTOR: × 1.1 for a lower-is-better metric, × 0.9 for a higher-is-better one
(in dB, the same factors as ± 10·log10 dB); with no positive best final value (and not in dB)
no default is set and the section says so.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

import numpy as np

from netemu.errors import ReportError
from netemu.report.intervals import t_interval

__all__ = ["DEFAULT_FACTOR", "Target", "higher_is_better", "main_metric", "parse_target", "time_to_target"]

DEFAULT_FACTOR = 0.1  # the default target is within 10 % of the best final value
_HIGHER = re.compile(r"acc|auc|f1|r2|score|reward|precision|recall", re.IGNORECASE)
_BOOKKEEPING = re.compile(r"^(participants|staleness|clients|rho|epsilon|privacy|unused_)", re.IGNORECASE)


class Target(NamedTuple):
    """`--target METRIC=VALUE[:K]`: reached at the first evaluation that ends K consecutive
    evaluations at or past VALUE (K = 1: the first evaluation there)."""

    metric: str
    value: float
    hold: int = 1


def parse_target(text: str) -> Target:
    """`METRIC=VALUE` or `METRIC=VALUE:K` (e.g. `accuracy=0.9`, `mse_db=-20`, `mse=0.01:3`)."""
    name, sep, rest = text.partition("=")
    value, colon, hold = rest.partition(":")
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    k = int(hold) if hold.strip().isdigit() else (1 if not colon else 0)
    if not sep or not name.strip() or not math.isfinite(v) or not 1 <= k <= 1_000_000:
        raise ReportError(f"--target {text!r}: expected METRIC=VALUE with a finite number, or METRIC=VALUE:K with K >= 1 "
                          "consecutive evaluations, e.g. --target mse=0.5 or --target mse=0.5:3")
    return Target(name.strip(), v, k)


def rule(higher: bool, hold: int) -> str:
    """The rule in words, as the page states it."""
    op = "≥" if higher else "≤"
    if hold == 1:
        return f"the first evaluation {op} the target"
    return f"the first evaluation that ends {hold} consecutive evaluations {op} the target"


def _hit(points: list[tuple], value: float, higher: bool, hold: int) -> tuple | None:
    """(round, time) of the evaluation that ends the first run of `hold` consecutive ones past `value`."""
    streak = 0
    for rnd, t, v in sorted(points):
        streak = streak + 1 if (v >= value if higher else v <= value) else 0
        if streak >= hold:
            return rnd, t
    return None


def higher_is_better(metric: str) -> bool:
    return bool(_HIGHER.search(metric))


def main_metric(folders: list[dict]) -> str | None:
    for f in folders:
        for row in f.get("rows") or ():
            if not _BOOKKEEPING.match(row[4]):
                return row[4]
    return None


def _finals(f: dict, alg: str, metric: str) -> float | None:
    """The mean over runs of each run's last value of the metric."""
    last: dict[int, tuple[int, float]] = {}
    for a, run, rnd, _t, name, v in f.get("rows") or ():
        if a == alg and name == metric and (run not in last or rnd >= last[run][0]):
            last[run] = (rnd, v)
    vals = [v for _, v in last.values() if math.isfinite(v)]
    return float(np.mean(vals)) if vals else None


def _default_target(folders: list[dict], series: list[dict], metric: str, higher: bool) -> float | None:
    finals = [x for s in series if (x := _finals(folders[s["folder"]], s["algorithm"], metric)) is not None]
    if not finals:
        return None
    best = max(finals) if higher else min(finals)
    if metric.endswith("_db"):  # the same relaxation, in dB
        return best + 10 * math.log10(1 - DEFAULT_FACTOR if higher else 1 + DEFAULT_FACTOR)
    if best <= 0:
        return None
    return best * (1 - DEFAULT_FACTOR if higher else 1 + DEFAULT_FACTOR)


def time_to_target(folders: list[dict], series: list[dict], target: Target | tuple[str, float] | None) -> dict:
    """Per series and run: the time and bytes sent when the metric reached the target (`Target`'s
    rule; a (metric, value) pair: reached once); per series their means over the runs that reached
    it, and the 95 % t-interval of the time."""
    if target is not None and not isinstance(target, Target):
        target = Target(*target)
    metric = target.metric if target else main_metric(folders)
    if metric is None:
        return {}
    higher = higher_is_better(metric)
    value = target.value if target else _default_target(folders, series, metric, higher)
    hold = target.hold if target else 1
    out: dict = {"metric": metric, "higher": higher, "given": target is not None, "factor": DEFAULT_FACTOR, "target": value,
                 "hold": hold, "rule": rule(higher, hold), "series": []}
    if value is None:
        return out
    for i, s in enumerate(series):
        f = folders[s["folder"]]
        per: dict[int, list] = {}
        for a, run, rnd, t, name, v in f.get("rows") or ():
            if a == s["algorithm"] and name == metric:
                per.setdefault(run, []).append((rnd, t, v))
        if not per:
            continue
        hits = []
        for run, pts in sorted(per.items()):
            hit = _hit(pts, value, higher, hold)
            b = f["bytes_at"].get((s["algorithm"], run, hit[0])) if hit else None
            hits.append({"run": run, "round": hit[0] if hit else None, "time": hit[1] if hit else None, "bytes": b})
        reached = [h for h in hits if h["time"] is not None]
        with_bytes = [h["bytes"] for h in reached if h["bytes"] is not None]
        out["series"].append({
            "series": i, "runs": len(hits), "reached": len(reached), "per_run": hits,
            "time": float(np.mean([h["time"] for h in reached])) if reached else None,
            "time_ci95": t_interval([h["time"] for h in reached if h["time"] is not None]),
            "bytes": float(np.mean(with_bytes)) if with_bytes else None,
            "round": float(np.mean([h["round"] for h in reached])) if reached else None,
        })
    return out
