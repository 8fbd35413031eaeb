"""Run a scenario into a run folder: every Monte Carlo run × every algorithm.

Runs are the outer loop, algorithms the inner one; all algorithms of a run share one
environment realization.  The folder (docs/formats.md) holds scenario.toml,
messages.jsonl, trace.msgpack, metrics.csv, summary.json and curves_*.png.  Whatever
stops the run — the end, Ctrl-C, a failing actor, a deadlock — the folder is written
with what was done, and summary.json says whether it is complete: per algorithm and
run, the rounds planned and done and what stopped it (`run_outcome`).
"""

from __future__ import annotations

import copy
import hashlib
import math
import signal
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import tomli_w

from netemu import __version__, plugins
from netemu.errors import InputError, NetemuError, RunStopped
from netemu.log import MessageLog
from netemu.net.network import draw_now
from netemu.report import aggregate_metrics, final_values, plot_curves, write_metrics, write_privacy, write_summary
from netemu.rng import Streams
from netemu.scenario.build import build_graph, build_world, load_script, run_horizon, run_seed
from netemu.scenario.load import Scenario, algorithm_params
from netemu.trace import Trace, TraceWriter, network_model, topology_fingerprint
from netemu.world import World

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
    table = copy.deepcopy(sc.table)
    if table["script"]:
        table["script"] = str(sc.resolve(table["script"]).resolve())
    if table["topology"].get("file"):
        table["topology"]["file"] = str(sc.resolve(table["topology"]["file"]).resolve())
    if table["devices"].get("file"):
        table["devices"]["file"] = str(sc.resolve(table["devices"]["file"]).resolve())
    for link in [*table["links"].values(), *table["link"]]:
        if (link.get("latency") or {}).get("file"):
            link["latency"]["file"] = str(sc.resolve(link["latency"]["file"]).resolve())
    absolute = lambda p: str(sc.resolve(p).resolve())  # noqa: E731
    for i, entry in enumerate(table["algorithm"]):  # paths the params resolve themselves (a Flower app_dir)
        _take_paths(entry, algorithm_params(sc.table, i, plugins.algorithm(entry["name"]), absolute))
    if table["data"]:  # a digits `source` file, an online `csv`
        params = plugins.data_kind(table["data"]["kind"]).params(**{k: v for k, v in table["data"].items() if k != "kind"})
        if hasattr(params, "with_paths"):
            _take_paths(table["data"], params.with_paths(absolute))
    table["netemu"] = {"version": __version__}
    return tomli_w.dumps(_without_none(table))


def _take_paths(entry: dict, params) -> None:
    """Write into the scenario `entry` the string values `with_paths` changed (made absolute)."""
    for key, value in entry.items():
        resolved = getattr(params, key, value)
        if isinstance(value, str) and isinstance(resolved, str) and resolved != value:
            entry[key] = resolved


def _scenario_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _progress(total: int, quiet: bool, label: str):
    from netemu.progress import progress  # a bar on a terminal, a plain line now and then elsewhere

    return progress(total, quiet=quiet, label=label, unit="round", stream=sys.stderr)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same path writes an incomplete folder."""


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While inside: SIGINT raises KeyboardInterrupt and SIGTERM raises `Terminated`, once;
    a repeated signal is ignored so the run folder can be closed (log flushed, trace end
    marker, summary.json).  Only in the main thread (signal handlers live there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        if fired:
            return
        fired.append(signum)
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


def _stop_reason(exc: BaseException) -> str:
    if isinstance(exc, Terminated):
        return "terminated (SIGTERM)"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"


def _waiting(waits: dict[str, str], most: int = 5) -> str:
    shown = ", ".join(f"{name} on {what}" for name, what in list(waits.items())[:most])
    more = f" and {len(waits) - most} more" if len(waits) > most else ""
    return (shown + more) or "nothing"


def run_outcome(world, run: int, planned: int, until: float, horizon: float, exc: BaseException | None = None) -> dict:
    """The outcome of one (algorithm, run): rounds planned and done, complete, why it stopped.

    A round counts as done once a metric was recorded for it (algorithms record their
    metrics when a round ends).  A run is complete only if every non-daemon actor
    returned and every planned round is done."""
    done = world.rounds_done
    stopped_by = None
    of = f"after {done} of {planned} rounds"
    if exc is not None:
        stopped_by = _stop_reason(exc)
    elif world.stopped_by == "until":
        stopped_by = f"run.until = {until:g} virtual seconds reached {of}"
    elif world.stopped_by == "horizon":
        stopped_by = (f"horizon run.max_time = {horizon:g} virtual seconds reached {of}; "
                      f"still waiting: {_waiting(world.stop_waits)}")
    elif done < planned:
        crashed = [(name, max((at for at, _rec in node.crashes if at <= world.env.now), default=None))
                   for name, node in world.network.nodes.items() if not node.up]
        if crashed:
            names = ", ".join(f"{n} (at t = {t:g})" if t is not None else n for n, t in crashed[:5])
            more = f" and {len(crashed) - 5} more" if len(crashed) > 5 else ""
            stopped_by = f"ended {of}: crashed without recovery: {names}{more}"
        else:
            stopped_by = f"ended {of}: the algorithm's actors returned early"
    return {"run": run, "rounds_planned": planned, "rounds_done": done, "complete": stopped_by is None,
            "stopped_by": stopped_by, "virtual_time": world.env.now}


def _warnings(label: str, messages: dict, final: dict, rows: list[tuple]) -> list[str]:
    """Outcomes that are legal but rarely meant: nothing delivered, nobody took part, a NaN or infinite result."""
    out = []
    if messages["delivered"] == 0:
        out.append(f"{label}: no message was delivered ({messages['sent']} sent, {messages['dropped']} dropped)")
    participants = [v for alg, _r, _rnd, _t, name, v in rows if alg == label and name == "participants"]
    if participants and not any(participants):
        out.append(f"{label}: no participant in any round (metric participants = 0 throughout: no client took part or answered in time)")
    bad = [f"{name} is {v}" for name, v in final.get(label, {}).items() if not math.isfinite(v)]
    if bad:
        out.append(f"{label}: the final value of {', '.join(bad)}")
    return out


def execute(
    sc: Scenario,
    out: Path,
    *,
    quiet: bool = False,
    replay: Trace | None = None,
    replay_source: str | None = None,
) -> dict:
    """Run `sc` into the folder `out` (created); returns the summary.  Re-raises what stopped it.

    summary["complete"] is true only when every run of every algorithm did all its
    rounds; summary["outcome"] has, per algorithm, one entry per run (`run_outcome`)."""
    if replay is not None:
        replay.check_scenario(sc.table)  # before anything is written
    try:
        out.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise InputError(f"the run folder {out} already exists; choose another --out or remove it") from None
    except OSError as exc:
        raise InputError(f"cannot create the run folder {out}: {exc.strerror or exc}") from None
    run_cfg, algorithms = sc.table["run"], sc.table["algorithm"]
    labels = [a["label"] for a in algorithms]
    planned, until, horizon = run_cfg["rounds"], run_cfg["until"], run_horizon(sc)
    rows: list[tuple] = []
    counts: dict[str, Counter[tuple[str, str]]] = {label: Counter() for label in labels}
    vtime: dict[str, list[float]] = {label: [] for label in labels}
    privacy: dict[str, list[dict]] = {label: [] for label in labels}
    outcome: dict[str, list[dict]] = {label: [] for label in labels}
    releases: list[tuple] = []  # (algorithm, run, client, round, rho, rho so far)
    summary = {"scenario": sc.name, "complete": False, "stopped_by": None, "rounds_planned": planned}
    wall_time_start = time.perf_counter()  # reported as wall_time_s, never used in the emulation
    writer = None
    with ExitStack() as stack:
        try:
            text = resolved_toml(sc)
            (out / "scenario.toml").write_text(text)
            fingerprints = []  # one topology at a time: a kept graph per run costs ~1 kB per node
            for r in range(run_cfg["runs"]):
                g = build_graph(sc, Streams(run_seed(run_cfg["seed"], r)))
                if replay is not None:
                    replay.check_topology(r, g)
                fingerprints.append(topology_fingerprint(g))
            del g
            setup = load_script(sc.resolve(sc.table["script"])) if sc.table["script"] else None
            header = {
                "netemu": __version__,
                "scenario": sc.name,
                "scenario_hash": _scenario_hash(text),
                "seed": run_cfg["seed"],
                "algorithms": labels,
                "runs": [{"seed": run_seed(run_cfg["seed"], r), "topology": f} for r, f in enumerate(fingerprints)],
                "network": network_model(sc.table),
            }
            log_file = stack.enter_context(open(out / "messages.jsonl", "wb")) if sc.table["output"]["log"] else None
            base_log = MessageLog(log_file)
            stack.callback(base_log.flush)
            writer = TraceWriter(stack.enter_context(open(out / "trace.msgpack", "wb")), header) if sc.table["output"]["trace"] else None
            bar = stack.enter_context(_progress(run_cfg["runs"] * len(labels) * planned, quiet, sc.name))
            for r in range(run_cfg["runs"]):
                for a, label in enumerate(labels):
                    inner = replay.fates(replay.source_for(label, replay_source), r) if replay is not None else None
                    fates = writer.fates(label, r, inner) if writer is not None else (inner or draw_now)
                    world = _build(sc, a, r, label, log=base_log.bind(algorithm=label, run=r), fates=fates, setup=setup)
                    bar.set_postfix_str(f"{label} run {r}")
                    world.on_round = lambda _round, bar=bar: bar.update(1)
                    failure: BaseException | None = None
                    try:
                        world.run(until or None, max_time=horizon)
                    except BaseException as exc:
                        failure = exc
                        raise
                    finally:
                        rows.extend(aggregate_metrics(label, r, world.metrics))
                        counts[label].update(world.network.counts)  # (link class, what) -> n
                        counts[label].update((m["link"], "in_flight") for m in world.network.in_flight())
                        vtime[label].append(world.env.now)
                        privacy[label].append(world.privacy.summary())
                        releases.extend((label, r, *rel) for rel in world.privacy.releases())
                        outcome[label].append(run_outcome(world, r, planned, until, horizon, failure))
            early = [(label, o) for label in labels for o in outcome[label] if not o["complete"]]
            summary["complete"] = not early
            if early:
                label, o = early[0]
                summary["stopped_by"] = f"{label} run {o['run']}: {o['stopped_by']}"
        except BaseException as exc:
            summary["stopped_by"] = _stop_reason(exc)
            if details := getattr(exc, "details", None):  # ActorFailed: the actor's traceback, for whoever debugs it
                summary["failure"] = details
            raise
        finally:
            if writer is not None:
                writer.close(summary["complete"])
            final = final_values(rows)
            messages = {label: _message_summary(c) for label, c in counts.items()}
            summary.update(
                {
                    "netemu": __version__,
                    "seed": run_cfg["seed"],
                    "runs": run_cfg["runs"],
                    "algorithms": labels,
                    "outcome": outcome,
                    "final": final,
                    "messages": messages,
                    "virtual_time": vtime,
                    "wall_time_s": round(time.perf_counter() - wall_time_start, 3),
                    "warnings": [w for label in labels if outcome[label] for w in _warnings(label, messages[label], final, rows)],
                }
            )
            if any(any(runs) for runs in privacy.values()):
                summary["privacy"] = {label: _privacy_summary(runs) for label, runs in privacy.items()}
            if replay is not None:
                summary["replay"] = {"trace": str(replay.path), **replay.counts}
            write_metrics(out / "metrics.csv", rows)
            if releases:
                write_privacy(out / "privacy.csv", releases)
            write_summary(out / "summary.json", summary)
            if rows and sc.table["output"]["plots"]:
                plot_curves(rows, out, title=sc.name)
    return summary


def write_run_folder(source: World | Scenario, out: str | Path, *, label: str = "python", name: str = "",
                     rounds: int | None = None, until: float | None = None, max_time: float | None = None,
                     quiet: bool = True) -> dict:
    """Run `source` into the run folder `out` (created), the folder `netemu run` writes, so that
    `netemu log`, `netemu plot` and `netemu report` work on it; returns the summary.

    `source` is a scenario (`netemu.scenario.load_scenario`; this is `execute`) or a World built
    in Python that has not run yet: its messages are logged to messages.jsonl (as algorithm
    `label`, run 0), every random fate it draws is recorded in trace.msgpack, and it runs until
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
        return execute(source, out, quiet=quiet)
    world = source
    if world.env.now > 0 or world.metrics or world.network.counts:
        raise InputError(f"{out}: this World has already run; build a new one and pass it before calling run()")
    out.mkdir(parents=True)
    graph, seed = world.network.graph, world.streams.seed
    header = {"netemu": __version__, "scenario": name or out.name, "scenario_hash": "", "seed": seed, "algorithms": [label],
              "network": {"python": "a World built in Python: no scenario table describes its random models"},
              "runs": [{"seed": seed, "topology": topology_fingerprint(graph)}]}
    summary: dict = {"scenario": name or out.name, "complete": False, "stopped_by": None}
    wall_time_start = time.perf_counter()  # reported as wall_time_s, never used in the emulation
    failure: BaseException | None = None
    with open(out / "messages.jsonl", "wb") as log_file, open(out / "trace.msgpack", "wb") as trace_file:
        writer = TraceWriter(trace_file, header)
        log = MessageLog(log_file).bind(algorithm=label, run=0)
        world.log = world.network.emit = log
        inner = world.network.fates
        world.network.fates = writer.fates(label, 0, None if inner is draw_now else inner)
        try:
            world.run(until, max_time=max_time)
        except BaseException as exc:
            failure = exc
            if details := getattr(exc, "details", None):  # ActorFailed: the actor's traceback
                summary["failure"] = details
            raise
        finally:
            planned = rounds if rounds is not None else world.rounds_done
            outcome = run_outcome(world, 0, planned, until or 0.0, max_time or math.inf, failure)
            summary.update({"complete": outcome["complete"], "stopped_by": outcome["stopped_by"], "rounds_planned": planned})
            writer.close(summary["complete"])
            log.flush()
            rows = aggregate_metrics(label, 0, world.metrics)
            counts = Counter(world.network.counts)
            counts.update((m["link"], "in_flight") for m in world.network.in_flight())
            final, messages = final_values(rows), {label: _message_summary(counts)}
            summary.update({"netemu": __version__, "seed": seed, "runs": 1, "algorithms": [label], "outcome": {label: [outcome]},
                            "final": final, "messages": messages, "virtual_time": {label: [world.env.now]},
                            "wall_time_s": round(time.perf_counter() - wall_time_start, 3),
                            "warnings": _warnings(label, messages[label], final, rows)})
            privacy = world.privacy.summary()
            if privacy:
                summary["privacy"] = {label: _privacy_summary([privacy])}
            write_metrics(out / "metrics.csv", rows)
            releases = [(label, 0, *rel) for rel in world.privacy.releases()]
            if releases:
                write_privacy(out / "privacy.csv", releases)
            write_summary(out / "summary.json", summary)
            if rows:
                plot_curves(rows, out, title=name or out.name)
    return summary


def _privacy_summary(runs: list[dict]) -> dict:
    """Per client: the mean over Monte Carlo runs of the total zCDP spent and its (ε, δ)."""
    clients = sorted({c for run in runs for c in run})
    out = {}
    for c in clients:
        rows = [run[c] for run in runs if c in run]
        out[c] = {"rho_total": sum(r["rho_total"] for r in rows) / len(rows),
                  "epsilon": sum(r["epsilon"] for r in rows) / len(rows), "delta": rows[0]["delta"]}
    return out


def _message_summary(c: Counter) -> dict:
    total: Counter[str] = Counter()
    for (_cls, what), n in c.items():
        total[what] += n
    reasons = {what.removeprefix("dropped_"): n for what, n in sorted(total.items()) if what.startswith("dropped_")}
    return {
        "sent": total["sent"],
        "delivered": total["delivered"],
        "dropped": total["dropped"],
        "in_flight": total["in_flight"],
        "dropped_by_reason": reasons,
        "bytes": {cls: n for (cls, what), n in sorted(c.items()) if what == "bytes"},
        "payload_bytes": {cls: n for (cls, what), n in sorted(c.items()) if what == "payload_bytes"},
    }
