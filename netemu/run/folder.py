"""A run folder's own files and name: the resolved scenario with absolute paths
(scenario.toml, so the folder replays from anywhere) and its hash for the trace header,
the default folder name, and the results written when a run ends (metrics, privacy,
summary, plots).  The message log and the trace are written while it runs (`netemu.run.runner`).
A write the machine refuses (disk full, read-only, I/O error) is `WriteFailed` naming the file:
the outputs still open are closed, and summary.json, when it can be written, says complete = false.
"""

from __future__ import annotations

import copy
import hashlib
from contextlib import ExitStack
from pathlib import Path

import tomli_w

from netemu.version import __version__
from netemu.errors import WRITE_ERRNOS, WriteFailed, writing
from netemu.run.outcome import Results, stop_reason
from netemu.report import plot_curves, write_metrics, write_privacy, write_summary
from netemu.scenario.load import Scenario

__all__ = ["close_outputs", "default_out_dir", "refused_write", "resolved_toml", "scenario_hash", "write_results"]


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


def refused_write(exc: BaseException, out: Path) -> BaseException:
    """`exc`, or, for an OSError of a write the machine refused, `WriteFailed` naming its file (or the folder `out`)."""
    if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
        return WriteFailed(exc.filename if exc.filename is not None else out, exc)
    return exc


def close_outputs(stack: ExitStack, trace, complete: bool, out: Path) -> WriteFailed | None:
    """End the trace (`trace`: a TraceWriter or None) and close what `stack` holds (the run's files);
    the first write refused meanwhile, if any (the others are the same full disk, said once)."""
    refused: WriteFailed | None = None
    for close in ((lambda: trace.close(complete)) if trace is not None else None, stack.close):
        if close is None:
            continue
        try:
            close()
        except (WriteFailed, OSError) as exc:
            failure = refused_write(exc, out)
            if not isinstance(failure, WriteFailed):
                raise
            refused = refused or failure
    return refused


def write_results(out: Path, results: Results, summary: dict, *, plots: bool, title: str) -> WriteFailed | None:
    """metrics.csv, privacy.csv (when something was released), when there are metrics and `plots`
    the curves, and summary.json: the files a run folder gets when its run ends, however.

    A write refused is returned (the first), not raised, so that the caller reports it after
    what stopped the run; summary.json then says complete = false, and a summary.json that
    could not be written whole is removed rather than left truncated."""
    refused: WriteFailed | None = None
    for path, write in ((out / "metrics.csv", lambda: write_metrics(out / "metrics.csv", results.rows)),
                        (out / "privacy.csv", lambda: write_privacy(out / "privacy.csv", results.releases) if results.releases else None),
                        (out, lambda: plot_curves(results.rows, out, title=title) if results.rows and plots else None)):
        try:
            with writing(path):
                write()
        except WriteFailed as exc:
            refused = refused or exc
    if refused is not None and summary["complete"]:
        summary.update(complete=False, stopped_by=stop_reason(refused))
    try:
        with writing(out / "summary.json"):
            write_summary(out / "summary.json", summary)
    except WriteFailed as exc:
        (out / "summary.json").unlink(missing_ok=True)
        refused = refused or exc
    return refused
