"""The run folders a report is about: a run folder as given, a sweep folder (`netemu sweep`'s
OUT, with sweep.csv) as the run folders of its points, in grid order, as `netemu plot` reads it."""

from __future__ import annotations

import csv
from pathlib import Path

from netemu.errors import ReportError

__all__ = ["run_folders"]


def _is_run(d: Path) -> bool:
    return (d / "summary.json").is_file() or (d / "metrics.csv").is_file()


def _points(sweep: Path) -> list[Path]:
    path = sweep / "sweep.csv"
    try:
        with open(path, newline="") as f:
            names = [r.get("folder") for r in csv.DictReader(f)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ReportError(f"{path}: not readable ({exc})") from None
    out = []
    for name in dict.fromkeys(n for n in names if isinstance(n, str) and n):
        d = sweep / name
        if Path(name).name == name and d.is_dir() and _is_run(d):  # a point's folder, inside the sweep folder
            out.append(d)
    if not out:
        raise ReportError(f"{sweep}: a sweep folder without a point that ran (sweep.csv names no run folder here)")
    return out


def run_folders(paths: list[Path]) -> list[Path]:
    """`paths` with every sweep folder (sweep.csv and no run of its own) replaced by its points' run folders."""
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(_points(p) if p.is_dir() and not _is_run(p) and (p / "sweep.csv").is_file() else [p])
    return out
