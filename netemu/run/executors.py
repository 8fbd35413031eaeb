"""Where sweep points run: one process per point on this machine, or dask.distributed.

`run_point` runs one grid point and never raises (a failing point is a result); `execute`
hands a list of points to the local executor (at most `workers` processes at a time, so a
point whose process dies fails alone) or to dask (a LocalCluster, or the scheduler at
`address`, TLS included), calling `done(name, PointResult)` as each one finishes.  Ctrl-C
(or SIGTERM) stops the running points and leaves the queued ones unstarted.  `netemu.run.sweep`
decides which points run and writes sweep.csv.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netemu.errors import NetemuError, SweepError
from netemu.scenario import load_scenario

__all__ = ["TLS", "PointResult", "execute", "read_summary", "run_point"]


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
    ci95: dict = field(default_factory=dict)  # algorithm -> metric -> {"lo", "hi", "runs"} (summary's final_ci95)



def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return first if isinstance(exc, NetemuError) else f"{type(exc).__name__}: {first}"


def read_summary(folder: Path) -> dict | None:
    try:
        s = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return s if isinstance(s, dict) else None


def run_point(scenario: str, overrides: list[str], out: str) -> dict:
    """Run one grid point (in a worker process).  Never raises for a failing point:
    returns {"status", "final", "error", "ci95"} (see `PointResult`)."""
    from netemu.run.runner import execute

    try:
        summary = execute(load_scenario(scenario, overrides), Path(out), quiet=True, overrides=overrides)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the point failed (a script may even exit); the sweep goes on
        partial = read_summary(Path(out)) or {}
        return {"status": "failed", "final": partial.get("final") or {}, "error": _one_line(exc),
                "ci95": partial.get("final_ci95") or {}}
    complete = bool(summary.get("complete"))
    return {
        "status": "complete" if complete else "incomplete",
        "final": summary.get("final") or {},
        "error": "" if complete else str(summary.get("stopped_by") or "ended early"),
        "ci95": summary.get("final_ci95") or {},
    }



def _result(raw: dict) -> PointResult:
    return PointResult(raw["status"], raw.get("final") or {}, raw.get("error") or "", raw.get("ci95") or {})


def _ignore_sigint() -> None:
    """Worker processes leave Ctrl-C to the parent, which stops them (no tracebacks) with
    SIGTERM: that closes the point's run folder like an interrupted run's (`_point_process`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def execute(todo: list[tuple], executor: str, workers: int | None, address: str | None, tls: TLS | None,
             connect_timeout: float, done: Callable[[str, PointResult], None]) -> None:
    if executor == "local":
        _execute_local(todo, workers, done)
    else:
        _execute_dask(todo, workers, address, tls, connect_timeout, done)


def _point_process(conn, scenario: str, overrides: list[str], out: str) -> None:
    """Body of the process that runs one point locally: the result goes back through `conn`."""
    from netemu.run.signals import stop_on_signals

    _ignore_sigint()
    try:
        with stop_on_signals():  # SIGTERM from the parent: summary.json says complete = false, the trace gets its end marker
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
            r.process.join(10)  # time to close its run folder (summary.json, trace end marker, plots)
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
            except Exception as exc:  # noqa: BLE001 - the worker died or the task could not run
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
