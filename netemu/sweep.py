"""Parameter sweeps: every combination of a grid, each in its own run folder.

    netemu sweep S.toml --grid algorithm.mu=0.1,0.2,0.4 --grid run.seed=1..20

A grid value list is comma-separated TOML values, or an integer range `a..b` (both ends
included).  Combination i runs with the overrides of its grid point into
`OUT/<key=value>__<key=value>/`; a folder whose summary.json says complete is skipped
when the sweep is run again (resume).  Execution is local (a process pool on this
machine) or on dask.distributed (a LocalCluster, or the scheduler at `--address`), with
the same command.  `OUT/sweep.csv` lists, per run folder, the grid values and the final
metrics of every algorithm (long format: folder, the grid keys, algorithm, metric, value).
"""

from __future__ import annotations

import csv
import itertools
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from netemu.errors import SweepError
from netemu.scenario import load_scenario
from netemu.scenario.overrides import parse_value
from netemu.scenario.schema import Issue, ScenarioError

__all__ = ["SweepError", "grid_points", "parse_grid", "run_point", "sweep"]

_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")


def parse_grid(specs: list[str]) -> dict[str, list]:
    """`["algorithm.tau=0,0.1", "run.seed=1..3"]` -> {"algorithm.tau": [0, 0.1], "run.seed": [1, 2, 3]}."""
    grid: dict[str, list] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise SweepError(f"--grid {spec!r}: expected KEY=V1,V2,... or KEY=A..B, e.g. run.seed=1..20")
        if key in grid:
            raise SweepError(f"--grid {key} is given twice")
        m = _RANGE.match(values.strip())
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise SweepError(f"--grid {spec!r}: the range {lo}..{hi} is empty")
            grid[key] = list(range(lo, hi + 1))
        else:
            grid[key] = [parse_value(v.strip()) for v in values.split(",")]
    return grid


def _folder(point: dict) -> str:
    text = "__".join(f"{k.split('.')[-1]}={v}" for k, v in point.items())
    return re.sub(r"[^\w.=+-]", "_", text)


def grid_points(grid: dict[str, list]) -> Iterator[tuple[str, dict]]:
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, values))
        yield _folder(point), point


def _toml(value) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else repr(value)


def run_point(scenario: str, overrides: list[str], out: str) -> dict:
    """Run one grid point (in a worker process); returns its summary's final values."""
    from netemu.runner import execute

    sc = load_scenario(scenario, overrides)
    summary = execute(sc, Path(out), quiet=True)
    return summary["final"]


def _complete(folder: Path) -> dict | None:
    try:
        s = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return s["final"] if s.get("complete") else None


def sweep(
    scenario: Path,
    grid: dict[str, list],
    out: Path,
    *,
    base_overrides: list[str] = (),
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Run every grid point not already complete; write OUT/sweep.csv; return its path."""
    points = list(grid_points(grid))
    overrides_of = {name: [*base_overrides, *(f"{k}={_toml(v)}" for k, v in point.items())] for name, point in points}
    for name, point in points:  # validate every point before anything runs
        try:
            load_scenario(scenario, overrides_of[name])
        except ScenarioError as exc:
            raise ScenarioError([Issue(i.file, i.key, i.value, f"{i.accepts} (grid point {point})") for i in exc.issues]) from None
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    todo = []
    for name, _point in points:
        folder = out / name
        done = _complete(folder)
        if done is not None:
            results[name] = done
            continue
        if folder.exists():  # an interrupted earlier attempt: start it again
            shutil.rmtree(folder)
        todo.append((name, str(scenario), overrides_of[name], str(folder)))
    if progress:
        progress(len(results), len(points))
    for name, final in _execute(todo, executor, workers, address):
        results[name] = final
        if progress:
            progress(len(results), len(points))
    return _write_csv(out, grid, points, results)


def _execute(todo: list[tuple], executor: str, workers: int | None, address: str | None) -> Iterator[tuple[str, dict]]:
    if not todo:
        return
    if executor == "local":
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(run_point, s, o, f): name for name, s, o, f in todo}
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
    elif executor == "dask":
        try:
            from distributed import Client, LocalCluster, as_completed
        except ImportError:
            raise SweepError("--executor dask needs dask.distributed: pip install 'netemu[dask]'") from None

        cluster = None if address else LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None)
        with Client(address or cluster) as client:
            futures = {client.submit(run_point, s, o, f, key=f"netemu-{name}", pure=False): name for name, s, o, f in todo}
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        if cluster is not None:
            cluster.close()
    else:
        raise SweepError(f"--executor {executor!r}: expected local or dask")


def _write_csv(out: Path, grid: dict, points: list, results: dict) -> Path:
    path = out / "sweep.csv"
    keys = list(grid)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["folder", *keys, "algorithm", "metric", "value"])
        for name, point in points:
            for alg, metrics in results.get(name, {}).items():
                for metric, value in metrics.items():
                    w.writerow([name, *(point[k] for k in keys), alg, metric, repr(value)])
    return path
