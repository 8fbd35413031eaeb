"""The timeline window of `netemu report`: which part of which run it shows (`Window`), and
the collection of its messages, compute spans, crashes and outages (`Timeline`), fed one
record at a time during the report's single pass over a message log.

A window holding more than `max_events` messages and compute spans is not cut: from then on
its events are kept as compact arrays (time, lane, what) and the page gets them aggregated
per time bin and lane group (`dense`), so 100,000 clients still make a readable, small page."""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_MAX_EVENTS", "DEFAULT_WINDOW_ROUNDS", "DENSE_BINS", "DENSE_GROUPS", "Timeline", "Window", "lane_key",
           "natural_key"]

DEFAULT_WINDOW_ROUNDS = 3   # the default timeline window: the first rounds of the chosen run
DEFAULT_MAX_EVENTS = 1000   # messages + compute spans drawn one by one; more are aggregated
DENSE_BINS = 120            # time bins of an aggregated timeline
DENSE_GROUPS = 40           # lane groups of an aggregated timeline (every lane its own row when there are at most this many)
MAX_DENSE_EVENTS = 50_000_000  # compact events kept for aggregation (about 21 bytes each); the window closes there
_SEND, _DELIVER, _DROP, _COMPUTE = 0, 1, 2, 3


def natural_key(name: str) -> tuple:
    """Sort key that puts client-2 before client-10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def lane_key(name: str) -> tuple:
    return (not name.startswith("server"), natural_key(name))



def _span_name(first: str, last: str) -> str:
    """A lane group's name: `client-2565 … 5129` (the last name without the prefix both share)."""
    if first == last:
        return first
    a, b = re.match(r"(.*?)(\d*)$", first), re.match(r"(.*?)(\d*)$", last)
    if a and b and a.group(1) == b.group(1) and a.group(2) and b.group(2):
        return f"{first} … {b.group(2)}"
    return f"{first} … {last}"


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
    """The window's events: one by one up to `max_events`, then compact (see the module's note).
    `keep`: which actors' lanes are shown (`netemu report --actors`); a message is kept when
    both its ends are (so `--actors 'server,client-1?'` shows those clients' exchanges with the server)."""

    def __init__(self, window: Window, keep: Callable[[str], bool] | None = None):
        self.w = window
        self.keep = keep
        self.dense = False
        self.round_starts: dict[int, float] = {}  # the first send of each round in the window
        self._t, self._dur = array("d"), array("d")
        self._lane, self._code = array("l"), array("b")
        self._lane_ids: dict[str, int] = {}
        self._orphans: list[tuple] = []  # arrivals in the window of messages sent before it (counted once aggregated)
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
        """True once the window holds more than max_events messages, compute spans and marks:
        from then on (`dense`) its events are kept compact, for aggregation (the ones so far too)."""
        if self.dense:
            if len(self._t) >= MAX_DENSE_EVENTS:
                self._close(t, f"{MAX_DENSE_EVENTS} events (the most an aggregated timeline holds)", truncated=True)
            return True
        if len(self.msgs) + len(self.computes) + len(self.marks) < self.w.max_events:
            return False
        self.dense = True
        for m in self.msgs:
            self._add(m[0], m[1], _SEND)
            if m[2] is not None:
                self._add(m[2], m[3], _DELIVER if m[5] == "delivered" else _DROP)
        for c in self.computes:
            self._add(c[0], c[2], _COMPUTE, c[1])
        for o in self._orphans:
            self._add(*o)
        self.msgs, self.computes, self.pending, self._orphans = [], [], {}, []
        return True

    def _add(self, t: float, lane: str, code: int, duration: float = 0.0) -> None:
        i = self._lane_ids.get(lane)
        if i is None:
            i = self._lane_ids[lane] = len(self._lane_ids)
        self._t.append(t)
        self._lane.append(i)
        self._code.append(code)
        self._dur.append(duration)

    def feed(self, r: dict, ctx: tuple) -> None:
        if self.ctx is None:
            if (self.w.algorithm is not None and ctx[0] != self.w.algorithm) or (self.w.run is not None and ctx[1] != self.w.run):
                return
            self.ctx = ctx
        if ctx != self.ctx:
            return
        t, ev = r["t"], r["event"]
        self.last_t = t
        keep = self.keep
        if self.dense and ev in ("deliver", "drop"):
            if not self.closed and (self.since is None or t >= self.since) and (self.until is None or t <= self.until) \
                    and (keep is None or keep(r["src"]) and keep(r["dst"])):
                self._add(t, r["dst"], _DELIVER if ev == "deliver" else _DROP)
                self._full(t)
            return
        if ev in ("deliver", "drop", "in_flight") and r["id"] in self.pending:
            m = self.pending.pop(r["id"])
            m[2] = t if ev != "in_flight" else None
            m[5] = "delivered" if ev == "deliver" else (r.get("reason", "?") if ev == "drop" else "in flight")
            return
        if ev in ("deliver", "drop"):
            if not self.closed and self.since is not None and t >= self.since and (self.until is None or t <= self.until) \
                    and (keep is None or keep(r["src"]) and keep(r["dst"])):
                self._orphans.append((t, r["dst"], _DELIVER if ev == "deliver" else _DROP))
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
            self.round_starts.setdefault(rnd, t)
            if keep is not None and not (keep(r["src"]) and keep(r["dst"])):
                return
            if self._full(t):
                if not self.closed:
                    self._add(t, r["src"], _SEND)
                    self.lanes[r["src"]] = self.lanes[r["dst"]] = None
                return
            m = [t, r["src"], None, r["dst"], r["kind"], None, r["bytes"], rnd]
            self.msgs.append(m)
            self.pending[r["id"]] = m
            self.lanes[r["src"]] = self.lanes[r["dst"]] = None
        elif ev == "compute":
            if keep is not None and not keep(r["actor"]):
                return
            if self._full(t):
                if not self.closed:
                    self._add(t, r["actor"], _COMPUTE, r["duration"])
                    self.lanes[r["actor"]] = None
                return
            self.computes.append([t, r["duration"], r["actor"], r["round"]])
            self.lanes[r["actor"]] = None
        elif ev in ("crash", "recover"):
            if (keep is not None and not keep(r["actor"])) or self._full(t):
                return
            self.marks.append([t, ev, r["actor"], None])
            self.lanes[r["actor"]] = None
        elif ev == "outage":
            if (keep is not None and not keep(r["src"])) or self._full(t):
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
        rounds = sorted(self.round_starts.items())
        if self.dense:
            return {"algorithm": self.ctx[0], "run": self.ctx[1], "since": self.since or 0.0, "until": self.until,
                    "ends_at": self.reason, "truncated": self.truncated, "rounds": rounds, "lanes": len(lanes),
                    "max_events": self.w.max_events, "dense": self._aggregate(lanes)}
        idx = {n: i for i, n in enumerate(lanes)}
        kinds = sorted({m[4] for m in self.msgs})
        kidx = {k: i for i, k in enumerate(kinds)}
        for m in self.msgs:
            if m[5] is None:
                m[5] = "pending at the log's end"
        return {
            "algorithm": self.ctx[0], "run": self.ctx[1], "since": self.since or 0.0, "until": self.until,
            "ends_at": self.reason, "truncated": self.truncated, "lanes": lanes, "kinds": kinds, "rounds": rounds,
            # [send t, src lane, arrival t (null: never arrived), dst lane, kind, outcome, bytes, round]
            "msgs": [[m[0], idx[m[1]], m[2], idx[m[3]], kidx[m[4]], m[5], m[6], m[7]] for m in self.msgs],
            # [start t, duration, lane, round]
            "computes": [[c[0], c[1], idx[c[2]], c[3]] for c in self.computes],
            "marks": [[k[0], k[1], idx[k[2]], k[3]] for k in self.marks],
        }

    def _aggregate(self, lanes: list[str]) -> dict:
        """Counts per time bin and lane group: messages sent (on the sender's lane), delivered and
        dropped (on the receiver's, at arrival), and the share of the group's time spent computing."""
        lo = float(self.since or 0.0)
        hi = float(self.until) if self.until is not None and self.until > lo else lo + 1.0
        nb = DENSE_BINS
        width = (hi - lo) / nb
        # lane groups: each server its own row, the other lanes in at most DENSE_GROUPS contiguous runs
        servers = [n for n in lanes if n.startswith("server")]
        rest = [n for n in lanes if not n.startswith("server")]
        parts = max(1, DENSE_GROUPS - len(servers))
        chunks = [[n] for n in servers]
        if rest:
            per = -(-len(rest) // parts) if len(lanes) > DENSE_GROUPS else 1
            chunks += [rest[i:i + per] for i in range(0, len(rest), per)]
        group_of_name = {n: g for g, c in enumerate(chunks) for n in c}
        ng = len(chunks)
        lane_group = np.zeros(max(1, len(self._lane_ids)), dtype=np.int64)
        for name, i in self._lane_ids.items():
            lane_group[i] = group_of_name.get(name, 0)
        t = np.array(self._t, dtype=np.float64)
        code = np.array(self._code, dtype=np.int8)
        lane = np.array(self._lane, dtype=np.int64)
        dur = np.array(self._dur, dtype=np.float64)
        g = lane_group[lane]
        b = np.clip(((t - lo) / width).astype(np.int64), 0, nb - 1)
        counts = {}
        for name, c in (("sent", _SEND), ("delivered", _DELIVER), ("dropped", _DROP), ("computes", _COMPUTE)):
            sel = code == c
            counts[name] = np.bincount(g[sel] * nb + b[sel], minlength=ng * nb).reshape(ng, nb)
        edges = lo + width * np.arange(nb + 1)
        busy = np.zeros((ng, nb))
        sel = code == _COMPUTE
        for gi in range(ng):  # compute-seconds in each bin: the integral of the number of running spans
            mine = sel & (g == gi)
            if not mine.any():
                continue
            starts, ends = np.sort(t[mine]), np.sort(t[mine] + dur[mine])
            cs, ce = np.concatenate(([0.0], np.cumsum(starts))), np.concatenate(([0.0], np.cumsum(ends)))
            ns, ne = np.searchsorted(starts, edges, side="right"), np.searchsorted(ends, edges, side="right")
            integral = (ns * edges - cs[ns]) - (ne * edges - ce[ne])
            busy[gi] = np.diff(integral) / (width * len(chunks[gi]))
        return {"bins": nb, "width": width, "groups": [[_span_name(c[0], c[-1]), len(c)] for c in chunks],
                "events": int(len(t)),
                **{k: v.tolist() for k, v in counts.items()},
                "busy": np.round(np.clip(busy, 0.0, 1.0), 3).tolist()}
