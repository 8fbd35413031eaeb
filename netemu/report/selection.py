"""What `netemu report`'s options select, checked against the run folders collected before the page
is written: an option that selects nothing (`--algorithm`, `--run`, `--actors`, `--target`'s metric)
is refused in one line naming the option and what the folders hold, never an empty page."""

from __future__ import annotations

from netemu.errors import ReportError
from netemu.report.window import Window

__all__ = ["check_selection"]


def _listed(names: list) -> str:
    shown = ", ".join(map(str, names[:20]))
    return (shown + f" and {len(names) - 20} more" if len(names) > 20 else shown) or "none"


def check_selection(folders: list[dict], window: Window, actors: str | None, target: tuple | None) -> None:
    """Refuse an option of `netemu report` that selects nothing in `folders` (`collect`'s dicts)."""
    where = ", ".join(f["path"] for f in folders)
    algorithms = list(dict.fromkeys(a for f in folders for a in f.get("algorithms") or ()))
    if window.algorithm is not None and window.algorithm not in algorithms:
        raise ReportError(f"--algorithm {window.algorithm!r}: no such algorithm in {where} (it has: {_listed(algorithms)})")
    if window.run is not None:
        runs: set[int] = {int(r[1]) for f in folders for r in f.get("rows") or () if window.algorithm in (None, r[0])}
        for f in folders:  # runs that ended before a metric: their outcome in summary.json
            for label, outcomes in ((f.get("summary") or {}).get("outcome") or {}).items():
                if window.algorithm in (None, label) and isinstance(outcomes, list):
                    runs.update(o["run"] for o in outcomes if isinstance(o, dict) and isinstance(o.get("run"), int))
        if window.run not in runs:
            of = f" of {window.algorithm!r}" if window.algorithm is not None else ""
            raise ReportError(f"--run {window.run}: no such Monte Carlo run{of} in {where} (runs: {_listed(sorted(runs))})")
    if target is not None:
        metrics = list(dict.fromkeys(r[4] for f in folders for r in f.get("rows") or ()))
        if target[0] not in metrics:
            raise ReportError(f"--target {target[0]}={target[1]:g}: no metric {target[0]!r} in {where} (metrics: {_listed(metrics)})")
    logged = [f for f in folders if f.get("log") is None]  # folders with a message log: their actors are known
    if actors and logged and not any(view.get("actors") for f in logged for view in (f.get("actors") or {}).values()):
        raise ReportError(f"--actors {actors!r}: matches no actor in {where}")
