"""Run a scenario into a run folder: every Monte Carlo run × every algorithm.

Runs are the outer loop, algorithms the inner one; all algorithms of a run share one
environment realization.  The folder (docs/formats.md) holds scenario.toml,
messages.jsonl (or messages.arrows), trace.msgpack, metrics.csv, summary.json and curves_*.png.  Whatever
stops the run — the end, Ctrl-C, a failing actor, a deadlock — the folder is written
with what was done, and summary.json says whether it is complete: per algorithm and
run, the rounds planned and done and what stopped it (`run_outcome`).  A run's lifecycle
(started, each world started and ended, ended) is told as diagnostics events
(netemu.diagnostics: `netemu --log-format json` prints them).

This module runs; the rest is beside it: `folder` (the resolved scenario.toml, the folder's
name, its metrics, privacy, summary and plot files), `outcome` (what summary.json says of the
outcome, messages and privacy) and `signals` (Ctrl-C and SIGTERM during a run).
"""

from __future__ import annotations

import csv
import math
import sys
import time
import traceback
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from netemu.version import __version__
from netemu.diagnostics import event
from netemu.errors import InputError, NetemuError, RunStopped, WriteFailed, writing
from netemu.log import MessageLog
from netemu.logarrow import FILE_NAME as ARROW_LOG
from netemu.logarrow import ArrowSink, pyarrow
from netemu.engine.net.network import draw_now
from netemu.run.outcome import Results, run_outcome, stop_reason
from netemu.engine.rng import Streams
from netemu.run.folder import close_outputs, default_out_dir, refused_write, resolved_toml, scenario_hash, write_results
from netemu.run.calibration import REPETITIONS, calibrate
from netemu.scenario.fields import LOG_FORMATS
from netemu.scenario.build import build_world, load_script, run_horizon, run_seed
from netemu.scenario.graph import build_graph, release
from netemu.scenario.load import Scenario
from netemu.scenario.settings import network_model
from netemu.run.signals import Terminated, raise_pending, stop_on_signals
from netemu.trace import Trace, TraceWriter, header, topology_fingerprint
from netemu.engine.world import World

__all__ = ["Terminated", "default_out_dir", "execute", "resolved_toml", "run_outcome", "stop_on_signals", "write_run_folder"]


class BuildFailed(RunStopped):
    """An algorithm's build (a plug-in's code, typically) raised something that is not a NetemuError:
    the run stops with the algorithm, the place and the error; `details` keeps the traceback."""

    def __init__(self, label: str, run: int, exc: Exception) -> None:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" ({frames[-1].filename}:{frames[-1].lineno}, in {frames[-1].name})" if frames else ""
        super().__init__(f"building {label!r} for run {run} failed{where}: {type(exc).__name__}: {exc}")
        self.details = "".join(traceback.format_exception(exc))


def _build(sc: Scenario, a: int, r: int, label: str, **kwargs) -> World:
    try:
        return build_world(sc, a, r, **kwargs)
    except NetemuError:
        raise
    except Exception as exc:  # noqa: BLE001 - a plug-in's own failure, reported with its place, never a bare traceback
        raise BuildFailed(label, r, exc) from exc


def blas_threads():
    """BLAS on one thread while a run computes (or `NETEMU_BLAS_THREADS`): the clients' models are
    small matrices, one at a time, where a second BLAS thread only waits — measured 20x the CPU of
    one thread for an MLP step on a busy 2-core machine.  Parallelism is across runs (`netemu sweep`)."""
    import os

    from threadpoolctl import threadpool_limits

    text = os.environ.get("NETEMU_BLAS_THREADS", "").strip()
    if text and not (text.isdigit() and int(text) >= 1):
        raise InputError(f"NETEMU_BLAS_THREADS = {text!r}: expected a whole number of threads >= 1")
    return threadpool_limits(int(text) if text else 1, user_api="blas")


def _progress(total: int, quiet: bool, label: str):
    from netemu.run.progress import progress  # a bar on a terminal, a plain line now and then elsewhere

    return progress(total, quiet=quiet, label=label, unit="round", stream=sys.stderr)


def execute(
    sc: Scenario,
    out: Path,
    *,
    quiet: bool = False,
    replay: Trace | None = None,
    replay_source: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
) -> dict:
    """Run `sc` into the folder `out` (created); returns the summary.  Re-raises what stopped it.
    `overrides`: the `--set` values `sc` was loaded with, kept in summary.json (`overrides`).

    summary["complete"] is true only when every run of every algorithm did all its
    rounds; summary["outcome"] has, per algorithm, one entry per run (`run_outcome`)."""
    s = sc.settings
    if replay is not None:
        replay.check_scenario(network_model(s))  # before anything is written
    elif (s.network or {}).get("engine") == "ns3":  # ns-3 and g++ are there, the engine built (cached): before anything runs
        from netemu.ns3.build import binary

        binary()
    raise_pending()  # a signal while the scenario was read: no folder yet
    try:
        out.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise InputError(f"the run folder {out} already exists; choose another --out or remove it") from None
    except OSError as exc:
        raise InputError(f"cannot create the run folder {out}: {exc.strerror or exc}") from None
    labels, planned, until, horizon = s.labels, s.run.rounds, s.run.until, run_horizon(sc)
    results = Results(labels)
    head: dict[str, Any] = {"overrides": list(overrides)}
    complete, stopped_by = False, None  # head: summary.json's `overrides`, `compute`, `failure`
    wall_time_start = time.perf_counter()  # reported as wall_time_s, never used in the emulation
    event("run.started", scenario=sc.name, folder=str(out), seed=s.run.seed, runs=s.run.runs, rounds=planned, algorithms=labels,
          replay=str(replay.path) if replay is not None else None)
    writer = None
    with ExitStack() as stack:
        stack.enter_context(blas_threads())
        try:
            text = resolved_toml(sc)
            with writing(out / "scenario.toml"):
                (out / "scenario.toml").write_text(text)
            fingerprints = []  # one topology at a time: a kept graph per run costs ~1 kB per node
            first: Any = None  # with one run, its graph, kept for its first world: the topology is built once
            for r in range(s.run.runs):
                g = build_graph(sc, Streams(run_seed(s.run.seed, r)))
                if replay is not None:
                    replay.check_topology(r, g)
                fingerprints.append(topology_fingerprint(g))
                if s.run.runs == 1:
                    first = g
                else:
                    release(g)  # freed now, not at a full garbage collection (a networkx graph is a reference cycle)
                raise_pending()  # safe points (netemu.run.signals): between graphs, worlds and runs
            del g
            setup = load_script(sc.resolve(s.script)) if s.script else None
            raise_pending()
            calibration: dict[str, float] = {}
            if s.nodes.compute == "measured":  # seconds per work unit: timed now, or the replayed trace's
                recorded = replay.header.get("calibration") if replay is not None else None
                calibration = calibrate(sc, recorded if isinstance(recorded, dict) else None)
                head["compute"] = {"mode": "measured", "seconds_per_work_unit": calibration, "repetitions": REPETITIONS,
                                   "replayed": sorted(k for k in calibration if isinstance(recorded, dict) and k in recorded)}
                raise_pending()
            trace_header = header(version=__version__, scenario=sc.name, scenario_hash=scenario_hash(text), seed=s.run.seed,
                                  algorithms=labels, runs=[(run_seed(s.run.seed, r), f) for r, f in enumerate(fingerprints)],
                                  network=network_model(s), calibration=calibration)
            arrow = s.output.log_format == "arrow"  # messages.arrows: Arrow record batches (netemu.logarrow)
            log_file = stack.enter_context(open(out / (ARROW_LOG if arrow else "messages.jsonl"), "wb")) if s.output.log else None
            base_log = MessageLog(ArrowSink(log_file) if arrow and log_file is not None else log_file)
            stack.callback(base_log.close)  # on every exit path: what is held is written, an Arrow stream ended
            writer = TraceWriter(stack.enter_context(open(out / "trace.msgpack", "wb")), trace_header) if s.output.trace else None
            population = csv.writer(stack.enter_context(open(out / "nodes.csv", "w", newline=""))) if s.nodes.population else None
            if population is not None:
                population.writerow(("run", "node", "role", "speed", "participation"))
            bar = stack.enter_context(_progress(s.run.runs * len(labels) * planned, quiet, sc.name))
            for r in range(s.run.runs):
                for a, label in enumerate(labels):
                    raise_pending()  # a signal the last world's loop ended too soon to raise
                    inner = replay.fates(replay.source_for(label, replay_source), r) if replay is not None else None
                    fates = writer.fates(label, r, inner) if writer is not None else (inner or draw_now)
                    graph, first = first, None  # the kept graph goes to the first world only (which empties it)
                    world = _build(sc, a, r, label, log=base_log.bind(algorithm=label, run=r), fates=fates, setup=setup,
                                   work_seconds=calibration.get(label, 1.0), graph=graph)
                    del graph
                    if population is not None and a == 0:  # the same for every algorithm of the run (common random numbers)
                        population.writerows((r, n.name, n.role, repr(n.speed), repr(n.participation)) for n in world.network.nodes.values())
                    raise_pending()  # a signal while the world was built (its loop, its actors)
                    bar.set_postfix_str(f"{label} run {r}")
                    event("run.algorithm_started", algorithm=label, run=r)
                    world.on_round = lambda _round, bar=bar: bar.update(1)
                    failure: BaseException | None = None
                    try:
                        world.run(until or None, max_time=horizon)
                    except BaseException as exc:
                        failure = exc
                        raise
                    finally:
                        outcome = run_outcome(world, r, planned, until, horizon, failure)
                        results.add(label, r, world, outcome)
                        event("run.algorithm_ended", algorithm=label, **outcome)
            raise_pending()  # a signal after the last world's loop, or while its results were gathered: not complete
            early = results.early()
            complete = not early
            if early:
                label, o = early[0]
                stopped_by = f"{label} run {o['run']}: {o['stopped_by']}"
        except BaseException as exc:
            failure = refused_write(exc, out)  # an OSError of a write: WriteFailed naming the file, or the folder
            stopped_by = stop_reason(failure)
            if details := getattr(exc, "details", None):  # ActorFailed: the actor's traceback, for whoever debugs it
                head["failure"] = details
            if failure is not exc:
                raise failure from None
            raise
        finally:
            refused = close_outputs(stack, writer, complete, out)  # before summary.json: it says whether they were written
            if refused is not None and complete:
                complete, stopped_by = False, stop_reason(refused)
            summary = results.summary(scenario=sc.name, complete=complete, stopped_by=stopped_by, planned=planned, seed=s.run.seed,
                                      runs=s.run.runs, wall_time_s=round(time.perf_counter() - wall_time_start, 3), head=head,
                                      tail={"replay": {"trace": str(replay.path), **replay.counts}} if replay is not None else None)
            refused = write_results(out, results, summary, plots=s.output.plots, title=sc.name) or refused
            _ended(summary, out)
    if refused is not None:
        raise refused
    return summary


def _ended(summary: dict, out: Path) -> None:
    event("run.ended", scenario=summary["scenario"], folder=str(out), complete=summary["complete"], stopped_by=summary["stopped_by"],
          wall_time_s=summary["wall_time_s"], warnings=len(summary["warnings"]))


def write_run_folder(source: World | Scenario, out: str | Path, *, label: str = "python", name: str = "",
                     rounds: int | None = None, until: float | None = None, max_time: float | None = None,
                     quiet: bool = True, log_format: str | None = None) -> dict:
    """Run `source` into the run folder `out` (created), the folder `netemu run` writes, so that
    `netemu log`, `netemu plot` and `netemu report` work on it; returns the summary.

    `source` is a scenario (`netemu.scenario.load_scenario`; this is `execute`, and the scenario's
    `[output] log_format` is its log's format) or a World built in Python that has not run yet: its
    messages are logged to messages.jsonl — or, with `log_format="arrow"`, to messages.arrows, an
    Arrow IPC stream (netemu.logarrow; needs pyarrow) — as algorithm `label`, run 0; every random fate it draws is recorded in trace.msgpack, and it runs until
    its actors end (or virtual time `until`, or the horizon `max_time`); metrics.csv,
    summary.json (`name` defaults to the folder's name; `rounds` is the rounds planned, by
    default those done) and the curves follow.  A World's folder has no scenario.toml, so
    `netemu replay` cannot rerun it; replay it in Python with `World(..., fates=Trace.read(path).fates(label, 0))`.
    Whatever stops the run, the folder is written and the exception re-raised, as `execute` does.
    """
    out = Path(out)
    if out.exists():
        raise InputError(f"{out}: the run folder already exists; choose another folder or remove it")
    if isinstance(source, Scenario):
        if log_format is not None:
            raise InputError(f"write_run_folder: log_format={log_format!r} is for a World built in Python; a scenario's "
                             "message log format is its [output] log_format (e.g. --set output.log_format=\"arrow\")")
        return execute(source, out, quiet=quiet)
    log_format = "jsonl" if log_format is None else log_format  # ("" is refused below, not taken for the default)
    if log_format not in LOG_FORMATS:
        raise InputError(f"write_run_folder: log_format={log_format!r} is not a message log format; "
                         f"accepted: {', '.join(map(repr, LOG_FORMATS))}")
    arrow = log_format == "arrow"
    if arrow:
        pyarrow()  # refused before the folder is made, with the line that installs it
    world = source
    if world.env.now > 0 or world.metrics or world.network.counts:
        raise InputError(f"{out}: this World has already run; build a new one and pass it before calling run()")
    out.mkdir(parents=True)
    name, seed = name or out.name, world.streams.seed
    trace_header = header(version=__version__, scenario=name, scenario_hash="", seed=seed, algorithms=[label],
                          runs=[(seed, topology_fingerprint(world.network.graph))],
                          network={"python": "a World built in Python: no scenario table describes its random models"})
    results, head = Results([label]), {}
    wall_time_start = time.perf_counter()  # reported as wall_time_s, never used in the emulation
    event("run.started", scenario=name, folder=str(out), seed=seed, runs=1, rounds=rounds, algorithms=[label], replay=None)
    failure: BaseException | None = None
    with open(out / (ARROW_LOG if arrow else "messages.jsonl"), "wb") as log_file, open(out / "trace.msgpack", "wb") as trace_file:
        writer = TraceWriter(trace_file, trace_header)
        base_log = MessageLog(ArrowSink(log_file) if arrow else log_file)
        log = base_log.bind(algorithm=label, run=0)
        world.use_log(log)
        inner = world.network.fates
        world.network.fates = writer.fates(label, 0, None if inner is draw_now else inner)
        try:
            world.run(until, max_time=max_time)
            raise_pending()  # a signal after the loop's last callback: the run is not complete
        except BaseException as exc:
            failure = exc
            if details := getattr(exc, "details", None):  # ActorFailed: the actor's traceback
                head["failure"] = details
            raise
        finally:
            planned = rounds if rounds is not None else world.rounds_done
            outcome = run_outcome(world, 0, planned, until or 0.0, max_time or math.inf, failure)
            refused: WriteFailed | None = None
            try:
                writer.close(outcome["complete"])
                base_log.close()  # what is held written; an Arrow stream ended
            except WriteFailed as exc:  # said after what stopped the run, if anything did
                refused = exc
                if outcome["complete"]:
                    outcome.update(complete=False, stopped_by=stop_reason(exc))
            results.add(label, 0, world, outcome)
            summary = results.summary(scenario=name, complete=outcome["complete"], stopped_by=outcome["stopped_by"], planned=planned,
                                      seed=seed, runs=1, wall_time_s=round(time.perf_counter() - wall_time_start, 3), head=head)
            refused = write_results(out, results, summary, plots=True, title=name) or refused
            _ended(summary, out)
    if refused is not None:
        raise refused
    return summary
