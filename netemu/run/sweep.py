"""Parameter sweeps: every combination of a grid, each in its own run folder.

    netemu sweep S.toml --grid algorithm.mu=0.1,0.2,0.4 --grid run.seed=1..20

A grid value list is comma-separated TOML values, or an integer range `a..b` (both ends
included); a grid of more than `max_points` combinations (default `MAX_POINTS`) is
refused before anything is allocated.  Combination i runs with the overrides of its
grid point into `OUT/<key=value>__<key=value>/`.  Execution is local (one process per point,
at most `workers` at a time, so a point whose process dies fails alone) or on dask.distributed (a LocalCluster, or the scheduler at `--address`,
TLS included), with the same command (netemu/run/executors.py); paths are made absolute before anything is sent.

Every point ends in a row of `OUT/sweep.csv` (long format: folder, the grid keys,
status, error, algorithm, metric, value, runs, ci95_low, ci95_high — the mean over the
point's runs and its 95 % t-interval, as in summary.json): `complete`, `incomplete` (the run ended
early; `error` says why) or `failed` (it raised; `error` is the one-line reason, and the
other points still run).  Running the sweep again resumes: a folder whose summary.json
says complete is kept if it was run with the same resolved scenario (its scenario.toml),
and refused as stale otherwise unless `rerun_stale`; everything else runs again.
Ctrl-C (or SIGTERM) cancels the pending points, stops the workers, writes sweep.csv
with what finished and raises `SweepInterrupted`.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
import shutil
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from netemu.errors import EXIT_INTERRUPTED, InputError, NetemuError, SweepError, writing
from netemu.run.executors import TLS, PointResult, read_summary, run_point
from netemu.run.executors import execute as _execute
from netemu.scenario import load_scenario
from netemu.scenario.overrides import parse_value
from netemu.scenario.schema import Issue, ScenarioError

__all__ = [
    "MAX_POINTS",
    "POINTS_CEILING",
    "TLS",
    "PointResult",
    "SweepError",
    "SweepInterrupted",
    "SweepResult",
    "grid_points",
    "parse_grid",
    "run_point",
    "sweep",
]

MAX_POINTS = 10_000  # grid points per sweep unless --max-points says otherwise (validation alone is ~2-10 ms each)
POINTS_CEILING = 1_000_000  # --max-points at most: a million points' folders, overrides and resolved scenarios are ~5 GB
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")


class SweepInterrupted(NetemuError):
    """Ctrl-C or SIGTERM stopped a sweep; sweep.csv holds the points that finished."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


@dataclass
class SweepResult:
    path: Path  # OUT/sweep.csv
    points: dict[str, PointResult]  # folder name -> result, in grid order

    def count(self, status: str) -> int:
        return sum(1 for p in self.points.values() if p.status == status)


def parse_grid(specs: list[str], max_points: int = MAX_POINTS) -> dict[str, list]:
    """`["algorithm.tau=0,0.1", "run.seed=1..3"]` -> {"algorithm.tau": [0, 0.1], "run.seed": [1, 2, 3]}.

    The number of combinations is counted before any range is expanded; more than
    `max_points` is a SweepError naming the count.
    """
    if not 1 <= max_points <= POINTS_CEILING:
        raise SweepError(f"--max-points {max_points}: expected 1 to {POINTS_CEILING:,} (each point is validated and "
                         f"kept in memory before the sweep starts; split a larger sweep)")
    parsed: dict[str, tuple[int, int] | list] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise SweepError(f"--grid {spec!r}: expected KEY=V1,V2,... or KEY=A..B, e.g. run.seed=1..20")
        if key in parsed:
            raise SweepError(f"--grid {key} is given twice")
        m = _RANGE.match(values.strip())
        if m and max(len(m.group(1)), len(m.group(2))) > 30:  # int() of thousands of digits raises; no grid is that long
            raise SweepError(f"--grid {key}: the range {values.strip()[:40]}... has bounds of more than 30 digits")
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise SweepError(f"--grid {spec!r}: the range {lo}..{hi} is empty")
            parsed[key] = (lo, hi)
        else:
            try:
                parsed[key] = [parse_value(v.strip()) for v in values.split(",")]
            except InputError as exc:  # an integer longer than Python converts
                raise SweepError(f"--grid {key}: {exc}") from None
    sizes = {k: v[1] - v[0] + 1 if isinstance(v, tuple) else len(v) for k, v in parsed.items()}
    total = math.prod(sizes.values())
    if total > max_points:
        shape = " x ".join(f"{n} ({k})" for k, n in sizes.items())
        raise SweepError(
            f"--grid: {total} points ({shape}) is more than the limit of {max_points} points per sweep; "
            f"split the sweep or raise the limit with --max-points"
        )
    return {k: list(range(v[0], v[1] + 1)) if isinstance(v, tuple) else v for k, v in parsed.items()}


def _folder(point: dict) -> str:
    text = "__".join(f"{k.split('.')[-1]}={v}" for k, v in point.items())
    return re.sub(r"[^\w.=+-]", "_", text)


def grid_points(grid: dict[str, list]) -> Iterator[tuple[str, dict]]:
    """(folder name, point) for every combination; two points that would share a folder are refused."""
    keys = list(grid)
    seen: dict[str, dict] = {}
    for values in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, values))
        name = _folder(point)
        if name in seen:
            raise SweepError(f"--grid: the points {seen[name]} and {point} would both run in the folder {name!r}; "
                             "give each value once (e.g. 0.1 and 0.10 are one value)")
        seen[name] = point
        yield name, point


def _toml(value) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else repr(value)


def _toml_keys(text: str) -> dict:
    def flat(x, prefix=""):
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                out.update(flat(v, f"{prefix}.{k}" if prefix else k))
            return out
        return {prefix: x}

    try:
        return flat(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return {}


def _difference(then: str, now: str) -> str:
    """The first keys in which two resolved scenarios differ, e.g. 'run.rounds: 3 then, 5 now'."""
    a, b = _toml_keys(then), _toml_keys(now)
    keys = [k for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
    shown = ", ".join(f"{k}: {a.get(k, '(absent)')!r} then, {b.get(k, '(absent)')!r} now" for k in keys[:2])
    return shown or "the scenario text differs"


def sweep(
    scenario: Path,
    grid: dict[str, list],
    out: Path,
    *,
    base_overrides: Sequence[str] = (),
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    tls: TLS | None = None,
    connect_timeout: float = 10.0,
    rerun_stale: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Run every grid point not already complete; write OUT/sweep.csv; return the outcome."""
    from netemu.run.runner import resolved_toml

    if workers is not None and workers < 1:
        raise SweepError(f"--workers {workers}: expected a number of worker processes >= 1")
    if executor not in ("local", "dask"):
        raise SweepError(f"--executor {executor!r}: expected local or dask")
    scenario, out = Path(scenario).resolve(), Path(out).resolve()  # workers may run elsewhere
    points = list(grid_points(grid))
    overrides_of = {name: [*base_overrides, *(f"{k}={_toml(v)}" for k, v in point.items())] for name, point in points}
    resolved: dict[str, str] = {}
    for name, point in points:  # validate every point before anything runs
        try:
            resolved[name] = resolved_toml(load_scenario(scenario, overrides_of[name]))
        except ScenarioError as exc:
            raise ScenarioError([Issue(i.file, i.key, i.value, f"{i.accepts} (grid point {point})") for i in exc.issues]) from None
    results: dict[str, PointResult] = {}
    todo, stale = [], []
    for name, _point in points:
        folder = out / name
        summary = read_summary(folder)
        if summary is not None and summary.get("complete"):
            try:
                then = (folder / "scenario.toml").read_text()
            except OSError:
                then = ""
            if then == resolved[name]:
                results[name] = PointResult("complete", summary.get("final") or {}, ci95=summary.get("final_ci95") or {})
                continue
            stale.append((name, _difference(then, resolved[name])))
            if not rerun_stale:
                continue
        todo.append((name, str(scenario), overrides_of[name], str(folder)))
    if stale and not rerun_stale:
        first = "; ".join(f"{name} ({diff})" for name, diff in stale[:3])
        raise SweepError(
            f"{out}: {len(stale)} finished point(s) were run with another scenario than {scenario} with their grid "
            f"values now: {first}{' ...' if len(stale) > 3 else ''}. Run with --rerun-stale to run them again, "
            f"or choose another --out"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SweepError(f"{out}: cannot create the sweep folder: {exc.strerror}") from None
    for _name, _s, _o, old in todo:
        if Path(old).exists():  # an unfinished, failed or stale earlier attempt: start it again
            try:
                shutil.rmtree(old)
            except OSError as exc:
                raise SweepError(f"{old}: cannot remove this unfinished point's folder to run it again: {exc.strerror}") from None
    if progress:
        progress(len(results), len(points))

    def done(name: str, result: PointResult) -> None:
        results[name] = result
        if progress:
            progress(len(results), len(points))

    try:
        if todo:
            _execute(todo, executor, workers, address, tls, connect_timeout, done)
    except KeyboardInterrupt:
        path = _write_csv(out, grid, points, results)
        raise SweepInterrupted(
            f"sweep interrupted: {len(results)} of {len(points)} points finished, the others were stopped; "
            f"{path} lists the finished ones; run the same command again to resume"
        ) from None
    return SweepResult(_write_csv(out, grid, points, results), {name: results[name] for name, _ in points})


def _number(value) -> str:
    return "nan" if value is None else repr(value)  # summary.json writes a NaN as null


def _interval(ci: dict | None) -> tuple[str, str, str]:
    """runs, ci95_low, ci95_high of one final value: empty where the summary has no interval
    (fewer than two runs: the ends are empty; an end that does not exist, e.g. dB ≤ 0: nan)."""
    if not ci:
        return "", "", ""
    runs = ci.get("runs")
    if ci.get("lo") is None and ci.get("hi") is None:
        return str(runs or ""), "", ""
    return str(runs or ""), _number(ci.get("lo")), _number(ci.get("hi"))


def _write_csv(out: Path, grid: dict, points: list, results: dict[str, PointResult]) -> Path:
    path = out / "sweep.csv"
    keys = list(grid)
    with writing(path), open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["folder", *keys, "status", "error", "algorithm", "metric", "value", "runs", "ci95_low", "ci95_high"])
        for name, point in points:
            r = results.get(name)
            if r is None:
                continue
            values = [(alg, metric, _number(value), *_interval(r.ci95.get(alg, {}).get(metric)))
                      for alg, metrics in r.final.items() for metric, value in metrics.items()]
            for row in values or [("", "", "", "", "", "")]:
                w.writerow([name, *(point[k] for k in keys), r.status, r.error, *row])
    return path
