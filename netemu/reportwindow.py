"""The timeline window of `netemu report`: which part of which run it shows (`Window`), and
the bounded collection of its messages, compute spans, crashes and outages (`Timeline`),
fed one record at a time during the report's single pass over a message log."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_EVENTS", "DEFAULT_WINDOW_ROUNDS", "Timeline", "Window", "lane_key", "natural_key"]

DEFAULT_WINDOW_ROUNDS = 3   # the default timeline window: the first rounds of the chosen run
DEFAULT_MAX_EVENTS = 1000   # messages + compute spans in the timeline window


def natural_key(name: str) -> tuple:
    """Sort key that puts client-2 before client-10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def lane_key(name: str) -> tuple:
    return (not name.startswith("server"), natural_key(name))



@dataclass(frozen=True)
class Window:
    """Which part of which run the timeline shows.  Without `until`, the window ends where
    round first_round + `rounds` starts, or at `max_events` messages and compute spans."""

    since: float | None = None
    until: float | None = None
    algorithm: str | None = None
    run: int | None = None
    rounds: int = DEFAULT_WINDOW_ROUNDS
    max_events: int = DEFAULT_MAX_EVENTS


class Timeline:
    def __init__(self, window: Window):
        self.w = window
        self.ctx: tuple | None = None
        self.since = window.since
        self.until = window.until
        self.first_round: int | None = None
        self.closed = False
        self.truncated = False
        self.reason = f"--until {window.until:g}" if window.until is not None else ""
        self.pending: dict[int, list] = {}
        self.msgs: list[list] = []
        self.computes: list[list] = []
        self.marks: list[list] = []  # crash / recover / outage
        self.lanes: dict[str, None] = {}
        self.last_t = 0.0

    def _close(self, t: float, reason: str, truncated: bool = False) -> None:
        self.closed, self.until, self.reason, self.truncated = True, t, reason, truncated

    def _full(self, t: float) -> bool:
        """Close the window (truncated) when it holds max_events messages, compute spans and marks."""
        if len(self.msgs) + len(self.computes) + len(self.marks) < self.w.max_events:
            return False
        self._close(t, f"{self.w.max_events} events (the most a timeline holds)", truncated=True)
        return True

    def feed(self, r: dict, ctx: tuple) -> None:
        if self.ctx is None:
            if (self.w.algorithm is not None and ctx[0] != self.w.algorithm) or (self.w.run is not None and ctx[1] != self.w.run):
                return
            self.ctx = ctx
        if ctx != self.ctx:
            return
        t, ev = r["t"], r["event"]
        self.last_t = t
        if ev in ("deliver", "drop", "in_flight") and r["id"] in self.pending:
            m = self.pending.pop(r["id"])
            m[2] = t if ev != "in_flight" else None
            m[5] = "delivered" if ev == "deliver" else (r.get("reason", "?") if ev == "drop" else "in flight")
            return
        if self.closed:
            return
        if self.since is not None and t < self.since:
            return
        if self.since is None:
            self.since = t
        if self.until is not None and t > self.until:
            self._close(self.until, self.reason)
            return
        if ev == "send":
            rnd = r["round"]
            if self.first_round is None:
                self.first_round = rnd
            if self.w.until is None and rnd >= self.first_round + self.w.rounds:
                self._close(t, f"the start of round {rnd} (the first {self.w.rounds} rounds; --since/--until choose another window)")
                return
            if self._full(t):
                return
            m = [t, r["src"], None, r["dst"], r["kind"], None, r["bytes"], rnd]
            self.msgs.append(m)
            self.pending[r["id"]] = m
            self.lanes[r["src"]] = self.lanes[r["dst"]] = None
        elif ev == "compute":
            if self._full(t):
                return
            self.computes.append([t, r["duration"], r["actor"], r["round"]])
            self.lanes[r["actor"]] = None
        elif ev in ("crash", "recover"):
            if self._full(t):
                return
            self.marks.append([t, ev, r["actor"], None])
            self.lanes[r["actor"]] = None
        elif ev == "outage":
            if self._full(t):
                return
            self.marks.append([t, "outage", r["src"], [r["dst"], r["until"]]])
            self.lanes[r["src"]] = None

    def as_dict(self) -> dict | None:
        if self.ctx is None:
            return None
        if not self.closed:
            self.until = self.until if self.until is not None else self.last_t
            self.reason = self.reason or "the end of the run"
        lanes = sorted(self.lanes, key=lane_key)
        idx = {n: i for i, n in enumerate(lanes)}
        kinds = sorted({m[4] for m in self.msgs})
        kidx = {k: i for i, k in enumerate(kinds)}
        for m in self.msgs:
            if m[5] is None:
                m[5] = "pending at the log's end"
        return {
            "algorithm": self.ctx[0], "run": self.ctx[1], "since": self.since or 0.0, "until": self.until,
            "ends_at": self.reason, "truncated": self.truncated, "lanes": lanes, "kinds": kinds,
            # [send t, src lane, arrival t (null: never arrived), dst lane, kind, outcome, bytes, round]
            "msgs": [[m[0], idx[m[1]], m[2], idx[m[3]], kidx[m[4]], m[5], m[6], m[7]] for m in self.msgs],
            # [start t, duration, lane, round]
            "computes": [[c[0], c[1], idx[c[2]], c[3]] for c in self.computes],
            "marks": [[k[0], k[1], idx[k[2]], k[3]] for k in self.marks],
        }
