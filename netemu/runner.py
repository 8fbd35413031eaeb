"""Run a scenario into a run folder: every Monte Carlo run × every algorithm.

Runs are the outer loop, algorithms the inner one; all algorithms of a run share one
environment realization.  The folder (docs/formats.md) holds scenario.toml,
messages.jsonl, trace.msgpack, metrics.csv, summary.json and curves_*.png.  Whatever
stops the run — the end, Ctrl-C, a failing actor, a deadlock — the folder is written
with what was done, and summary.json says whether it is complete.
"""

from __future__ import annotations

import copy
import hashlib
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import tomli_w

from netemu import __version__
from netemu.log import MessageLog
from netemu.net.network import draw_now
from netemu.report import aggregate_metrics, final_values, plot_curves, write_metrics, write_privacy, write_summary
from netemu.rng import Streams
from netemu.scenario.build import build_graph, build_world, load_script, run_seed
from netemu.scenario.load import Scenario
from netemu.trace import Trace, TraceWriter, network_model, topology_fingerprint

__all__ = ["default_out_dir", "execute", "resolved_toml"]


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
    table["netemu"] = {"version": __version__}
    return tomli_w.dumps(_without_none(table))


def _scenario_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _progress(total: int, quiet: bool, label: str):
    from netemu.progress import progress  # a bar on a terminal, a plain line now and then elsewhere

    return progress(total, quiet=quiet, label=label, unit="round", stream=sys.stderr)


def execute(
    sc: Scenario,
    out: Path,
    *,
    quiet: bool = False,
    replay: Trace | None = None,
    replay_source: str | None = None,
) -> dict:
    """Run `sc` into the folder `out` (created); returns the summary.  Re-raises what stopped it."""
    if replay is not None:
        replay.check_scenario(sc.table)  # before anything is written
    out.mkdir(parents=True, exist_ok=False)
    run_cfg, algorithms = sc.table["run"], sc.table["algorithm"]
    labels = [a["label"] for a in algorithms]
    text = resolved_toml(sc)
    (out / "scenario.toml").write_text(text)
    graphs = [build_graph(sc, Streams(run_seed(run_cfg["seed"], r))) for r in range(run_cfg["runs"])]
    if replay is not None:
        for r, g in enumerate(graphs):
            replay.check_topology(r, g)
    setup = load_script(sc.resolve(sc.table["script"])) if sc.table["script"] else None
    header = {
        "netemu": __version__,
        "scenario": sc.name,
        "scenario_hash": _scenario_hash(text),
        "seed": run_cfg["seed"],
        "algorithms": labels,
        "runs": [{"seed": run_seed(run_cfg["seed"], r), "topology": topology_fingerprint(g)} for r, g in enumerate(graphs)],
        "network": network_model(sc.table),
    }
    rows: list[tuple] = []
    counts = {label: Counter() for label in labels}
    vtime: dict[str, list[float]] = {label: [] for label in labels}
    privacy: dict[str, list[dict]] = {label: [] for label in labels}
    releases: list[tuple] = []  # (algorithm, run, client, round, rho, rho so far)
    summary = {"scenario": sc.name, "complete": False, "stopped_by": None}
    wall_time_start = time.perf_counter()  # reported as wall_time_s, never used in the emulation
    with ExitStack() as stack:
        log_file = stack.enter_context(open(out / "messages.jsonl", "wb")) if sc.table["output"]["log"] else None
        base_log = MessageLog(log_file)
        writer = TraceWriter(stack.enter_context(open(out / "trace.msgpack", "wb")), header) if sc.table["output"]["trace"] else None
        bar = stack.enter_context(_progress(run_cfg["runs"] * len(labels) * run_cfg["rounds"], quiet, sc.name))
        try:
            for r in range(run_cfg["runs"]):
                for a, label in enumerate(labels):
                    inner = replay.fates(replay.source_for(label, replay_source), r) if replay is not None else None
                    fates = writer.fates(label, r, inner) if writer is not None else (inner or draw_now)
                    world = build_world(sc, a, r, log=base_log.bind(algorithm=label, run=r), fates=fates, setup=setup)
                    bar.set_postfix_str(f"{label} run {r}")
                    world.on_round = lambda _round, bar=bar: bar.update(1)
                    try:
                        world.run(run_cfg["until"] or None)
                    finally:
                        rows.extend(aggregate_metrics(label, r, world.metrics))
                        counts[label].update(world.network.counts)  # (link class, what) -> n
                        counts[label].update((m["link"], "in_flight") for m in world.network.in_flight())
                        vtime[label].append(world.env.now)
                        privacy[label].append(world.privacy.summary())
                        releases.extend((label, r, *rel) for rel in world.privacy.releases())
            summary["complete"] = True
        except KeyboardInterrupt:
            summary["stopped_by"] = "interrupted (Ctrl-C)"
            raise
        except Exception as exc:
            summary["stopped_by"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            raise
        finally:
            if writer is not None:
                writer.close(summary["complete"])
            base_log.flush()
            summary.update(
                {
                    "netemu": __version__,
                    "seed": run_cfg["seed"],
                    "runs": run_cfg["runs"],
                    "algorithms": labels,
                    "final": final_values(rows),
                    "messages": {label: _message_summary(c) for label, c in counts.items()},
                    "virtual_time": vtime,
                    "wall_time_s": round(time.perf_counter() - wall_time_start, 3),
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
    total = Counter()
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
