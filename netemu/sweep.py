"""Parameter sweeps: every combination of a grid, each in its own run folder.

    netemu sweep S.toml --grid algorithm.mu=0.1,0.2,0.4 --grid run.seed=1..20

A grid value list is comma-separated TOML values, or an integer range `a..b` (both ends
included); a grid of more than `max_points` combinations (default `MAX_POINTS`) is
refused before anything is allocated.  Combination i runs with the overrides of its
grid point into `OUT/<key=value>__<key=value>/`.  Execution is local (one process per point,
at most `workers` at a time, so a point whose process dies fails alone) or on dask.distributed (a LocalCluster, or the scheduler at `--address`,
TLS included), with the same command; paths are made absolute before anything is sent.

Every point ends in a row of `OUT/sweep.csv` (long format: folder, the grid keys,
status, error, algorithm, metric, value): `complete`, `incomplete` (the run ended
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
import os
import re
import shutil
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netemu.errors import EXIT_INTERRUPTED, NetemuError, SweepError
from netemu.scenario import load_scenario
from netemu.scenario.overrides import parse_value
from netemu.scenario.schema import Issue, ScenarioError

__all__ = [
    "MAX_POINTS",
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
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")


class SweepInterrupted(NetemuError):
    """Ctrl-C or SIGTERM stopped a sweep; sweep.csv holds the points that finished."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


@dataclass(frozen=True)
class TLS:
    """Client certificates for a TLS-secured dask scheduler (files in PEM format)."""

    ca_file: str
    cert: str
    key: str | None = None


@dataclass
class PointResult:
    status: str  # complete | incomplete | failed
    final: dict = field(default_factory=dict)  # algorithm -> metric -> final value
    error: str = ""


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
    parsed: dict[str, tuple[int, int] | list] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise SweepError(f"--grid {spec!r}: expected KEY=V1,V2,... or KEY=A..B, e.g. run.seed=1..20")
        if key in parsed:
            raise SweepError(f"--grid {key} is given twice")
        m = _RANGE.match(values.strip())
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise SweepError(f"--grid {spec!r}: the range {lo}..{hi} is empty")
            parsed[key] = (lo, hi)
        else:
            parsed[key] = [parse_value(v.strip()) for v in values.split(",")]
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


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return first if isinstance(exc, NetemuError) else f"{type(exc).__name__}: {first}"


def _read_summary(folder: Path) -> dict | None:
    try:
        s = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return s if isinstance(s, dict) else None


def run_point(scenario: str, overrides: list[str], out: str) -> dict:
    """Run one grid point (in a worker process).  Never raises for a failing point:
    returns {"status", "final", "error"} (see `PointResult`)."""
    from netemu.runner import execute

    try:
        summary = execute(load_scenario(scenario, overrides), Path(out), quiet=True)
    except (Exception, SystemExit) as exc:  # the point failed (a script may even exit); the sweep goes on
        partial = _read_summary(Path(out)) or {}
        return {"status": "failed", "final": partial.get("final") or {}, "error": _one_line(exc)}
    complete = bool(summary.get("complete"))
    return {
        "status": "complete" if complete else "incomplete",
        "final": summary.get("final") or {},
        "error": "" if complete else str(summary.get("stopped_by") or "ended early"),
    }


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
    from netemu.runner import resolved_toml

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
        summary = _read_summary(folder)
        if summary is not None and summary.get("complete"):
            try:
                then = (folder / "scenario.toml").read_text()
            except OSError:
                then = ""
            if then == resolved[name]:
                results[name] = PointResult("complete", summary.get("final") or {})
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


def _result(raw: dict) -> PointResult:
    return PointResult(raw["status"], raw.get("final") or {}, raw.get("error") or "")


def _ignore_sigint() -> None:
    """Worker processes leave Ctrl-C to the parent, which stops them (no tracebacks);
    SIGTERM (how the parent stops them) kills them, whatever handler they inherited."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _execute(todo: list[tuple], executor: str, workers: int | None, address: str | None, tls: TLS | None,
             connect_timeout: float, done: Callable[[str, PointResult], None]) -> None:
    if executor == "local":
        _execute_local(todo, workers, done)
    else:
        _execute_dask(todo, workers, address, tls, connect_timeout, done)


def _point_process(conn, scenario: str, overrides: list[str], out: str) -> None:
    """Body of the process that runs one point locally: the result goes back through `conn`."""
    _ignore_sigint()
    try:
        result = run_point(scenario, overrides, out)
    except BaseException as exc:  # noqa: BLE001 — whatever happens, the parent gets one line
        result = {"status": "failed", "final": {}, "error": _one_line(exc)}
    conn.send(result)
    conn.close()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        import signal

        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (the out-of-memory killer sends it)" if name == "SIGKILL" else ""
        return f"the process running this point was killed by {name}{hint}"
    return f"the process running this point exited with code {exitcode} before reporting a result"


@dataclass
class _Running:
    name: str
    process: Any
    conn: Any
    result: dict | None = None


def _execute_local(todo: list[tuple], workers: int | None, done: Callable[[str, PointResult], None]) -> None:
    """One process per point, at most `workers` at a time: a point whose process dies
    (killed, out of memory) fails alone, and Ctrl-C terminates exactly the running ones."""
    import multiprocessing as mp
    from collections import deque
    from multiprocessing.connection import wait

    ctx = mp.get_context()
    limit = workers or os.cpu_count() or 1
    pending = deque(todo)
    running: list[_Running] = []
    try:
        while pending or running:
            while pending and len(running) < limit:
                name, scenario, overrides, folder = pending.popleft()
                receive, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_point_process, args=(send, scenario, overrides, folder), name=f"netemu-{name}")
                proc.start()
                send.close()
                running.append(_Running(name, proc, receive))
            ready = set(wait([x for r in running for x in (r.process.sentinel, r.conn) if x is not None]))
            for r in list(running):
                if r.conn is not None and r.conn in ready:
                    try:
                        r.result = r.conn.recv()
                    except (EOFError, OSError):  # the process died before sending
                        pass
                    r.conn.close()
                    r.conn = None
                if r.process.sentinel in ready and r.conn is None:
                    r.process.join()
                    running.remove(r)
                    outcome = _result(r.result) if r.result is not None else PointResult("failed", error=_death(r.process.exitcode))
                    done(r.name, outcome)
                elif r.process.sentinel in ready and r.conn is not None and not r.conn.poll():
                    r.conn.close()  # exited without a result: nothing more will come
                    r.conn = None
                    r.process.join()
                    running.remove(r)
                    done(r.name, PointResult("failed", error=_death(r.process.exitcode)))
    except BaseException:
        # Ctrl-C (or SIGTERM): the queued points never start, the running ones stop now
        for r in running:
            r.process.terminate()
        for r in running:
            r.process.join(5)
            if r.process.is_alive():  # deaf to SIGTERM: it must not outlive the sweep
                r.process.kill()
                r.process.join()
        raise


def _security(tls: TLS | None):
    from distributed.security import Security

    if tls is None:
        return Security()  # dask's configuration: distributed.comm.tls.* (ca-file, client.cert, client.key)
    for what, path in (("--tls-ca-file", tls.ca_file), ("--tls-cert", tls.cert), ("--tls-key", tls.key)):
        if path is not None and not Path(path).is_file():
            raise SweepError(f"{what} {path}: no such file")
    return Security(tls_ca_file=tls.ca_file, tls_client_cert=tls.cert, tls_client_key=tls.key, require_encryption=True)


def _execute_dask(todo: list[tuple], workers: int | None, address: str | None, tls: TLS | None,
                  connect_timeout: float, done: Callable[[str, PointResult], None]) -> None:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise SweepError("--executor dask needs dask.distributed: pip install 'netemu[dask]'") from None
    import logging

    cluster = None
    target: Any
    if address is None:
        # Ctrl-C in a terminal reaches the LocalCluster's processes too; multiprocessing's
        # resource tracker then cleans up their semaphores and warns about it on stderr
        # (inherited through the environment by the tracker process): the cleanup is
        # done, the warning is noise after the one-line interruption message
        _quiet_tracker = "ignore::UserWarning:multiprocessing.resource_tracker"
        if _quiet_tracker not in os.environ.get("PYTHONWARNINGS", ""):
            os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (os.environ.get("PYTHONWARNINGS"), _quiet_tracker)))
        if tls is not None:
            raise SweepError("--tls-ca-file/--tls-cert/--tls-key need --address (a LocalCluster on this machine is not encrypted)")
        cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR)
        target, security = cluster, None
    else:
        target, security = address, _security(tls)
    try:
        client = Client(target, timeout=connect_timeout, security=security) if security is not None else Client(target)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        if cluster is not None:
            cluster.close()
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SweepError(
            f"--address {address}: cannot connect to the dask scheduler within {connect_timeout:g} s ({reason}); "
            f"check the address, that the scheduler runs, and its TLS settings"
        ) from None
    futures = {}
    try:
        futures = {client.submit(run_point, s, o, f, key=f"netemu-{name}", pure=False): name for name, s, o, f in todo}
        for fut in as_completed(futures):
            try:
                result = _result(fut.result())
            except Exception as exc:  # the worker died or the task could not run
                result = PointResult("failed", error=_one_line(exc))
            done(futures[fut], result)
    except BaseException:
        # Ctrl-C: pending points never start; a LocalCluster is closed below.  Its processes
        # got the terminal's Ctrl-C too: what dask logs while they go down is expected noise
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        client.cancel(list(futures), force=True)
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _write_csv(out: Path, grid: dict, points: list, results: dict[str, PointResult]) -> Path:
    path = out / "sweep.csv"
    keys = list(grid)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["folder", *keys, "status", "error", "algorithm", "metric", "value"])
        for name, point in points:
            r = results.get(name)
            if r is None:
                continue
            values = [(alg, metric, "nan" if value is None else repr(value))  # summary.json writes a NaN as null
                      for alg, metrics in r.final.items() for metric, value in metrics.items()]
            for alg, metric, value in values or [("", "", "")]:
                w.writerow([name, *(point[k] for k in keys), r.status, r.error, alg, metric, value])
    return path
