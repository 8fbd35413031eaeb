"""A run folder's own files and name: the resolved scenario with absolute paths
(scenario.toml, so the folder replays from anywhere) and its hash for the trace header,
the default folder name, and the results written when a run ends (metrics, privacy,
summary, plots).  The message log and the trace are written while it runs (`netemu.run.runner`).
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import tomli_w

from netemu.version import __version__
from netemu.run.outcome import Results
from netemu.report import plot_curves, write_metrics, write_privacy, write_summary
from netemu.scenario.load import Scenario

__all__ = ["default_out_dir", "resolved_toml", "scenario_hash", "write_results"]


def default_out_dir(sc: Scenario, root: Path = Path("runs")) -> Path:
    """runs/NAME, or runs/NAME-2, -3, ... if taken."""
    out, n = root / sc.name, 1
    while out.exists():
        n += 1
        out = root / f"{sc.name}-{n}"
    return out


def _without_none(x):
    if isinstance(x, dict):
        return {k: _without_none(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [_without_none(v) for v in x]
    return x


def resolved_toml(sc: Scenario) -> str:
    """The resolved scenario with absolute paths, so the run folder replays from anywhere."""
    table = copy.deepcopy(sc.table)  # the file is written from the nested table; what the params resolve comes from the settings
    if table["script"]:
        table["script"] = str(sc.resolve(table["script"]).resolve())
    if table["topology"].get("file"):
        table["topology"]["file"] = str(sc.resolve(table["topology"]["file"]).resolve())
    if table["devices"].get("file"):
        table["devices"]["file"] = str(sc.resolve(table["devices"]["file"]).resolve())
    shared = [t for k, t in table["topology"].items() if k in ("server_link", "access_points") and isinstance(t, dict)]
    shared += [g for g in table["topology"].get("access_points") or [] if isinstance(g, dict)]
    for link in [*shared, *table["links"].values(), *table["link"]]:
        if (link.get("latency") or {}).get("file"):
            link["latency"]["file"] = str(sc.resolve(link["latency"]["file"]).resolve())
    absolute = lambda p: str(sc.resolve(p).resolve())
    for i, entry in enumerate(table["algorithm"]):  # paths the params resolve themselves (a Flower app_dir)
        _take_paths(entry, sc.algorithm_params(i, absolute))
    if table["data"]:  # a digits `source` file, an online `csv`
        _take_paths(table["data"], sc.data_params(absolute))
    table["netemu"] = {"version": __version__}
    return tomli_w.dumps(_without_none(table))


def _take_paths(entry: dict, params) -> None:
    """Write into the scenario `entry` the string values `with_paths` changed (made absolute)."""
    for key, value in entry.items():
        resolved = getattr(params, key, value)
        if isinstance(value, str) and isinstance(resolved, str) and resolved != value:
            entry[key] = resolved


def scenario_hash(text: str) -> str:
    """The trace header's `scenario_hash`: a short hash of the resolved scenario.toml."""
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def write_results(out: Path, results: Results, summary: dict, *, plots: bool, title: str) -> None:
    """metrics.csv, privacy.csv (when something was released), summary.json and, when there are
    metrics and `plots`, the curves: the files a run folder gets when its run ends, however."""
    write_metrics(out / "metrics.csv", results.rows)
    if results.releases:
        write_privacy(out / "privacy.csv", results.releases)
    write_summary(out / "summary.json", summary)
    if results.rows and plots:
        plot_curves(results.rows, out, title=title)
