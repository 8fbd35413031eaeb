"""Time to accuracy for `netemu report`: the virtual time and the bytes sent until a run's main
metric first reaches a target value.

The main metric is the one `--target METRIC=VALUE` names; without it, the first metric of
metrics.csv that is not bookkeeping (participants, staleness, privacy spent). A metric whose
name says accuracy (acc, auc, f1, r2, score, reward) is better when higher, any other (mse,
loss, error) when lower. The default target is the best final value over the series compared,
relaxed by DEFAULT_FACTOR: × 1.1 for a lower-is-better metric, × 0.9 for a higher-is-better one
(in dB, the same factors as ± 10·log10 dB); with no positive best final value (and not in dB)
no default is set and the section says so.
"""

from __future__ import annotations

import math
import re

import numpy as np

from netemu.errors import ReportError

__all__ = ["DEFAULT_FACTOR", "higher_is_better", "main_metric", "parse_target", "time_to_target"]

DEFAULT_FACTOR = 0.1  # the default target is within 10 % of the best final value
_HIGHER = re.compile(r"acc|auc|f1|r2|score|reward|precision|recall", re.IGNORECASE)
_BOOKKEEPING = re.compile(r"^(participants|staleness|clients|rho|epsilon|privacy)", re.IGNORECASE)


def parse_target(text: str) -> tuple[str, float]:
    """`METRIC=VALUE` (e.g. `accuracy=0.9`, `mse_db=-20`)."""
    name, sep, value = text.partition("=")
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    if not sep or not name.strip() or not math.isfinite(v):
        raise ReportError(f"--target {text!r}: expected METRIC=VALUE with a finite number, e.g. --target mse=0.5")
    return name.strip(), v


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


def time_to_target(folders: list[dict], series: list[dict], target: tuple[str, float] | None) -> dict:
    """Per series and run: the time and bytes sent when the metric first reached the target."""
    metric = target[0] if target else main_metric(folders)
    if metric is None:
        return {}
    higher = higher_is_better(metric)
    value = target[1] if target else _default_target(folders, series, metric, higher)
    out: dict = {"metric": metric, "higher": higher, "given": target is not None, "factor": DEFAULT_FACTOR, "target": value, "series": []}
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
            hit = next(((rnd, t) for rnd, t, v in sorted(pts) if (v >= value if higher else v <= value)), None)
            b = f["bytes_at"].get((s["algorithm"], run, hit[0])) if hit else None
            hits.append({"run": run, "round": hit[0] if hit else None, "time": hit[1] if hit else None, "bytes": b})
        reached = [h for h in hits if h["time"] is not None]
        with_bytes = [h["bytes"] for h in reached if h["bytes"] is not None]
        out["series"].append({
            "series": i, "runs": len(hits), "reached": len(reached), "per_run": hits,
            "time": float(np.mean([h["time"] for h in reached])) if reached else None,
            "bytes": float(np.mean(with_bytes)) if with_bytes else None,
            "round": float(np.mean([h["round"] for h in reached])) if reached else None,
        })
    return out
