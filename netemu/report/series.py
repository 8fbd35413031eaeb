"""The series a report draws from metrics.csv and privacy.csv: per algorithm and metric the mean
over the runs that reached each round with its min–max and 95 % t-interval (`curve_data`), the
zCDP spent per round (`privacy_curves`), round marks, and the bytes sent at each report.  Used
by netemu/report/html.py."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from netemu.errors import ReportError
from netemu.report import mean_over
from netemu.report.intervals import t_interval

__all__ = ["MAX_CURVE_POINTS", "add_bytes", "thin", "curve_data", "privacy_curves", "report_rounds", "thin_marks"]

MAX_CURVE_POINTS = 1500     # per curve; longer curves are thinned (every k-th round, the last kept)
MAX_ROUND_MARKS = 500       # round starts kept per algorithm (for markers on time axes)


def thin(n: int, most: int = MAX_CURVE_POINTS) -> list[int]:
    if n <= most:
        return list(range(n))
    step = math.ceil(n / most)
    keep = list(range(0, n, step))
    return keep if keep[-1] == n - 1 else [*keep, n - 1]


def curve_data(rows: list[tuple]) -> dict[str, dict[str, dict]]:
    """Per algorithm and metric, per round: mean over the runs that reached it (`mean_over`,
    dB-aware), min and max over runs, the 95 % t-interval of the mean (None below two runs), and
    the mean virtual time of the report."""
    by: dict[tuple[str, str], dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for alg, _run, rnd, t, name, value in rows:
        by[(alg, name)][rnd].append((t, value))
    out: dict[str, dict[str, dict]] = defaultdict(dict)
    for (alg, name), rounds in by.items():
        ks = sorted(rounds)
        keep = thin(len(ks))
        ks = [ks[i] for i in keep]
        vals = [np.array([v for _, v in rounds[k]]) for k in ks]
        cis = [t_interval(v, name) for v in vals]
        out[alg][name] = {
            "round": ks,
            "time": [float(np.mean([t for t, _ in rounds[k]])) for k in ks],
            "mean": [float(mean_over(name, v)) for v in vals],
            "lo": [float(v.min()) for v in vals],
            "hi": [float(v.max()) for v in vals],
            "ci_lo": [x[0] if x else None for x in cis],  # 95 % t-interval of the mean
            "ci_hi": [x[1] if x else None for x in cis],
            "runs": [len(v) for v in vals],
            "step": keep[1] - keep[0] if len(keep) > 1 else 1,  # > 1: thinned to every step-th round
        }
    return out


def privacy_curves(path: Path) -> dict[str, dict]:
    """From privacy.csv, per algorithm and round: the mean and the max over (run, client) of
    the zCDP spent so far (clients that have not released yet count 0)."""
    if not path.is_file():
        return {}
    per: dict[str, list] = defaultdict(list)
    try:
        with open(path, newline="") as f:
            for n, r in enumerate(csv.DictReader(f), 2):
                try:
                    per[r["algorithm"]].append((int(r["round"]), (int(r["run"]), r["client"]), float(r["rho_total"])))
                except (KeyError, TypeError, ValueError) as exc:
                    raise ReportError(f"{path}:{n}: malformed privacy row ({exc}); expected algorithm,run,client,round,rho,rho_total") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:  # csv.Error: e.g. a field over the csv module's limit
        raise ReportError(f"{path}: not readable ({exc})") from None
    out = {}
    for alg, items in per.items():
        keys = {k for _, k, _ in items}
        idx = {k: i for i, k in enumerate(sorted(keys))}
        current = np.zeros(len(idx))
        items.sort(key=lambda x: x[0])
        rounds, means, maxes = [], [], []
        total, top, i = 0.0, 0.0, 0
        while i < len(items):
            rnd = items[i][0]
            while i < len(items) and items[i][0] == rnd:
                _, k, v = items[i]
                j = idx[k]
                total += v - current[j]
                current[j] = v
                top = max(top, v)
                i += 1
            rounds.append(rnd)
            means.append(total / len(idx))
            maxes.append(top)
        keep = thin(len(rounds))
        out[alg] = {"round": [rounds[k] for k in keep], "mean": [means[k] for k in keep], "max": [maxes[k] for k in keep],
                    "clients": len({k[1] for k in keys})}
    return out


def report_rounds(rows: list[tuple]) -> dict[str, list]:
    """Without a log, the round marks are the times of each round's first report (first run)."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    first: dict[str, int] = {}
    for alg, run, rnd, t, _name, _v in rows:
        if first.setdefault(alg, run) == run and rnd not in out[alg]:
            out[alg][rnd] = t
    return {alg: thin_marks(sorted(x.items())) for alg, x in out.items()}


def thin_marks(items: list) -> list:
    return [items[i] for i in thin(len(items), MAX_ROUND_MARKS)]


def add_bytes(curves: dict, rows: list[tuple], bytes_at: dict) -> None:
    """Per curve point: the mean over runs of the bytes sent when that round's metrics were logged."""
    per: dict[tuple[str, int], list] = defaultdict(list)
    seen = set()
    for alg, run, rnd, _t, _name, _v in rows:
        if (alg, run, rnd) not in seen and (alg, run, rnd) in bytes_at:
            seen.add((alg, run, rnd))
            per[(alg, rnd)].append(bytes_at[(alg, run, rnd)])
    for alg, by in curves.items():
        for c in by.values():
            c["bytes"] = [float(np.mean(per[(alg, k)])) if per.get((alg, k)) else None for k in c["round"]]
