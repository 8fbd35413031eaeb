"""The outcome of a run, as summary.json states it: per algorithm and run the rounds planned
and done, whether it completed and what stopped it (`run_outcome`); the warnings about legal
but rarely meant results; the message counts and privacy spend summed over a run's links
and clients; and `Results`, what a run folder gathers from its worlds and the one builder
of its summary.  Used by `netemu.run.runner`.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from netemu.version import __version__
from netemu.engine.unused import REASONS, UnusedTally
from netemu.report import aggregate_metrics, final_values
from netemu.report.intervals import final_intervals
from netemu.run.signals import Terminated

__all__ = ["Results", "message_summary", "network_summary", "privacy_summary", "run_outcome", "run_warnings", "stop_reason",
           "unused_rows", "unused_summary"]


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


def network_summary(c: Counter, attempts: dict[str, list[int]]) -> dict:
    """summary.json's `network` of one algorithm, per link class, from its (link class, what) -> n
    counts and the log's `attempts` tally (link class -> [records with attempts, their sum, max]):
    retransmissions, attempts per message (mean over the messages delivered or dropped, and max),
    timeouts, queue drops and duplicates.  A message without `attempts` (datagram) took one."""
    out = {}
    for cls in sorted({k[0] for k in c} | set(attempts)):
        ended = c[cls, "delivered"] + c[cls, "dropped"]
        n, total, most = attempts.get(cls, (0, 0, 0))
        tries = total + max(0, ended - n)
        out[cls] = {"messages": ended, "retransmissions": tries - ended, "attempts_per_message": tries / ended if ended else None,
                    "max_attempts": max(most, 1 if ended else 0), "timeouts": c[cls, "dropped_timeout"],
                    "queue_drops": c[cls, "dropped_queue"], "duplicates": c[cls, "duplicates"]}
    return out


def unused_rows(label: str, run: int, rows: list[tuple], tally: UnusedTally, reasons: list[str]) -> list[tuple]:
    """metrics.csv's rows of one (algorithm, run): its metric `rows` (`aggregate_metrics`) and, per
    round, `unused_<reason>` — the delivered messages of that round not used, for each of `reasons`
    (0 where none) — in every round with a metric or an unused message, sorted by (round, metric).
    Their time: the later of the round's last metric and its last unused record."""
    if not reasons:
        return rows
    by_round, times = tally.by_round(), dict(tally.last)
    for _alg, _run, rnd, t, _name, _v in rows:
        if t > times.get(rnd, -math.inf):
            times[rnd] = t
    extra = [(label, run, rnd, times[rnd], f"unused_{reason}", float(by_round.get(rnd, Counter())[reason]))
             for rnd in sorted(times) for reason in reasons]
    return sorted(rows + extra, key=lambda row: (row[2], row[4]))


def unused_summary(tallies: list[UnusedTally]) -> dict:
    """summary.json's `messages.<algorithm>.unused` (per reason) and `unused_by_sender` (per sender
    and reason), summed over the algorithm's runs."""
    reasons: Counter[str] = Counter()
    clients: dict[str, Counter[str]] = {}
    for tally in tallies:
        reasons.update(tally.reasons())
        for src, c in tally.by_client().items():
            clients.setdefault(src, Counter()).update(c)
    order = {r: i for i, r in enumerate(REASONS)}
    return {"unused": {r: reasons[r] for r in sorted(reasons, key=order.__getitem__)},
            "unused_by_sender": {src: {r: c[r] for r in sorted(c, key=order.__getitem__)} for src, c in sorted(clients.items())}}


class Results:
    """What a run folder gathers from its worlds, per algorithm and run: metrics rows, message
    counts, unused messages, virtual time, privacy spend and releases, and outcome (`add`,
    whatever stopped the world); `summary` makes summary.json of them."""

    def __init__(self, labels: list[str]) -> None:
        self.labels = labels
        self._blocks: list[tuple[str, int, list[tuple], UnusedTally]] = []  # per world added: its metric rows, its unused tally
        self._rows: list[tuple] | None = None
        self.releases: list[tuple] = []  # (algorithm, run, client, round, rho, rho so far)
        self.counts: dict[str, Counter[tuple[str, str]]] = {label: Counter() for label in labels}
        self.attempts: dict[str, dict[str, list[int]]] = {label: {} for label in labels}
        self.vtime: dict[str, list[float]] = {label: [] for label in labels}
        self.privacy: dict[str, list[dict]] = {label: [] for label in labels}
        self.outcome: dict[str, list[dict]] = {label: [] for label in labels}
        self.notes: dict[str, list[str]] = {label: [] for label in labels}  # warnings actors give (`summary_warnings`)

    def add(self, label: str, run: int, world, outcome: dict) -> None:
        """The results of `world`, algorithm `label`'s Monte Carlo run `run`, that ended with `outcome` (`run_outcome`)."""
        engine = getattr(world, "engine", None)
        tally = getattr(engine, "unused_tally", None)
        tally = UnusedTally() if tally is None else tally
        self._blocks.append((label, run, aggregate_metrics(label, run, world.metrics), tally))
        self._rows = None
        self.counts[label].update(world.network.counts)  # (link class, what) -> n
        self.counts[label].update((m["link"], "in_flight") for m in world.network.in_flight())
        for cls, (n, total, most) in getattr(world.network.emit, "attempts", {}).items():  # the log's tally (netemu.log)
            a = self.attempts[label].setdefault(cls, [0, 0, 0])
            a[0], a[1], a[2] = a[0] + n, a[1] + total, max(a[2], most)
        self.vtime[label].append(world.env.now)
        self.privacy[label].append(world.privacy.summary())
        self.releases.extend((label, run, *rel) for rel in world.privacy.releases())
        self.outcome[label].append(outcome)
        for actor in world.actors.values():  # e.g. a Flower server: waits on Flower's default timeouts
            notes = getattr(actor, "summary_warnings", None)
            for note in notes() if callable(notes) else ():
                if note not in self.notes[label]:
                    self.notes[label].append(note)

    @property
    def rows(self) -> list[tuple]:
        """metrics.csv's rows: every world's metrics, with the `unused_<reason>` counts per round of the
        reasons any run of its algorithm had (`unused_rows`)."""
        if self._rows is None:
            reasons: dict[str, set[str]] = {label: set() for label in self.labels}
            for label, _run, _rows, tally in self._blocks:
                reasons.setdefault(label, set()).update(tally.reasons())
            self._rows = [row for label, run, rows, tally in self._blocks
                          for row in unused_rows(label, run, rows, tally, [r for r in REASONS if r in reasons[label]])]
        return self._rows

    def early(self) -> list[tuple[str, dict]]:
        """(algorithm, outcome) of every run that ended early, in order."""
        return [(label, o) for label in self.labels for o in self.outcome[label] if not o["complete"]]

    def summary(self, *, scenario: str, complete: bool, stopped_by: str | None, planned: int, seed: int, runs: int,
                wall_time_s: float, head: dict | None = None, tail: dict | None = None) -> dict:
        """summary.json (docs/formats.md): the outcome, then the results; `head` holds the keys written
        after `rounds_planned` (`compute`, `failure`), `tail` those written last (`replay`)."""
        learning = [row for row in self.rows if not row[4].startswith("unused_")]  # counts of messages, in `messages`
        final = final_values(learning)
        messages = {label: {**message_summary(c), **unused_summary([t for lb, _r, _rows, t in self._blocks if lb == label])}
                    for label, c in self.counts.items()}
        out: dict[str, Any] = {"scenario": scenario, "complete": complete, "stopped_by": stopped_by, "rounds_planned": planned, **(head or {})}
        out.update({
            "netemu": __version__, "seed": seed, "runs": runs, "algorithms": self.labels, "outcome": self.outcome,
            "final": final, "final_ci95": final_intervals(learning), "messages": messages,
            "network": {label: network_summary(self.counts[label], self.attempts[label]) for label in self.labels},
            "virtual_time": self.vtime, "wall_time_s": wall_time_s,
            "warnings": [w for label in self.labels if self.outcome[label]
                         for w in [*run_warnings(label, messages[label], final, learning), *(f"{label}: {n}" for n in self.notes[label])]],
        })
        if any(any(runs) for runs in self.privacy.values()):
            out["privacy"] = {label: privacy_summary(runs) for label, runs in self.privacy.items()}
        return {**out, **(tail or {})}
