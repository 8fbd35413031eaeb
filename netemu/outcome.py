"""The outcome of a run, as summary.json states it: per algorithm and run the rounds planned
and done, whether it completed and what stopped it (`run_outcome`); the warnings about legal
but rarely meant results; the message counts and privacy spend summed over a run's links
and clients.  Used by `netemu.runner`.
"""

from __future__ import annotations

import math
from collections import Counter

from netemu.signals import Terminated

__all__ = ["message_summary", "privacy_summary", "run_outcome", "run_warnings", "stop_reason"]


def stop_reason(exc: BaseException) -> str:
    """What summary.json says stopped a run: the signal, or the exception's type and first line."""
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
        stopped_by = stop_reason(exc)
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


def run_warnings(label: str, messages: dict, final: dict, rows: list[tuple]) -> list[str]:
    """Outcomes that are legal but rarely meant: nothing delivered, nobody took part, events an
    algorithm counted in a `warn_<what>` metric (their total over the run, if not 0), a NaN or
    infinite result."""
    out = []
    if messages["delivered"] == 0:
        out.append(f"{label}: no message was delivered ({messages['sent']} sent, {messages['dropped']} dropped)")
    participants = [v for alg, _r, _rnd, _t, name, v in rows if alg == label and name == "participants"]
    if participants and not any(participants):
        out.append(f"{label}: no participant in any round (metric participants = 0 throughout: no client took part or answered in time)")
    counted: dict[str, float] = {}  # metrics named warn_<what>: events worth a look, counted over the run
    for alg, _r, _rnd, _t, name, v in rows:
        if alg == label and name.startswith("warn_"):
            counted[name] = counted.get(name, 0.0) + v
    out.extend(f"{label}: {name.removeprefix('warn_').replace('_', ' ')}: {n:g} (metric {name})" for name, n in sorted(counted.items()) if n)
    bad = [f"{name} is {v}" for name, v in final.get(label, {}).items() if not math.isfinite(v)]
    if bad:
        out.append(f"{label}: the final value of {', '.join(bad)}")
    return out


def privacy_summary(runs: list[dict]) -> dict:
    """Per client: the mean over Monte Carlo runs of the total zCDP spent and its (ε, δ)."""
    clients = sorted({c for run in runs for c in run})
    out = {}
    for c in clients:
        rows = [run[c] for run in runs if c in run]
        out[c] = {"rho_total": sum(r["rho_total"] for r in rows) / len(rows),
                  "epsilon": sum(r["epsilon"] for r in rows) / len(rows), "delta": rows[0]["delta"]}
    return out


def message_summary(c: Counter) -> dict:
    """summary.json's `messages` of one algorithm from its (link class, what) -> n counts."""
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
