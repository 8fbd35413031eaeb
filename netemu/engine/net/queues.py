"""Slow start overflowing a shared link's queue (``sharing = "max-min"``, ``transport = "reliable"``).

A flow-level model has no packets, so no queue fills by itself; this module follows what the
flows' slow starts put into a link and says which of them lose packets to a full queue.

Each reliable transfer in slow start through a link whose queue is bounded (every link with a
bandwidth under ``qdisc = "fifo"``: its `queue_bytes`, or `NetModel.default_queue`; under
``"fair"`` the links that set `queue_bytes`) is a *burst*: from its start t0 its congestion
window is W, 2 W, 4 W, ... bytes in its rounds k = 0, 1, ... of one RTT each (RFC 5681's slow
start doubles the window every RTT), the last round carrying what is left of its bytes.

At each instant a round of a new burst starts, its links see the windows of the bursts under way
(of a round begun earlier, the part of its RTT still to come): A bytes, arriving over D = max(RTT, window / upstream rate) seconds (the slowest link before this
one spreads a window out), while the link drains C x D.  Under ``fifo`` the flows past their slow
start share that queue: they leave C - load to drain the bursts, and when they fill the link they
keep a standing queue, `STANDING` of what the pipe and the queue hold less the pipe (Cubic's
window between beta = 0.7 and 1 of it, RFC 8312; NewReno's between 0.5 and 1, RFC 5681).  The queue overflows when A - C D exceeds the
room the bursts find, the drop-tail condition of Lakshman and Madhow's fluid analysis of slow start
("The performance of TCP/IP for networks with high bandwidth-delay products and random loss",
IEEE/ACM ToN 5(3), 1997, sec. III) with the windows summed.  Otherwise a window of 16 segments or
more whose queueing delay passed `hystart_delay` stops doubling (HyStart, as Linux's and ns-3's
Cubic do; ``congestion_control = "newreno"`` has no HyStart).  When the queue overflows:

- ``fifo``: one queue, shared in the order bytes arrive: every burst of the round loses, and each
  gets through its window's share of what the link took, w x (C D + room) / A;
- ``fair``: a queue per flow (FqCoDel drops from the longest): only the bursts whose window
  exceeds an equal share (C D + room) / n lose, each getting that share through.

A burst that got fewer than `FAST_RETRANSMIT_SEGMENTS` segments through cannot collect three
duplicate ACKs (RFC 5681 sec. 3.2) and waits a retransmission timeout; one that got more does with
Padhye et al.'s chance that a loss indication in a window of w segments is a timeout, Q = min(1,
3 / w) (SIGCOMM 1998, sec. 2.2), and otherwise recovers by fast retransmit within the flow model's
rate.  The expected number of timeouts is given out deterministically: each link carries the sum
of the chances, a timeout whenever it reaches one half (the remainder kept), in the order the
bursts were sent.  A burst ends with its slow start: its last round, HyStart, or its loss.

Pure: no clock, no SimPy; netemu.engine.net.transfers calls `start`, `end` and `overflows`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Hashable

from netemu.engine.net.tcp import FAST_RETRANSMIT_SEGMENTS

__all__ = ["Burst", "Bursts", "HYSTART_LOW_WINDOW", "STANDING", "hystart_delay", "rounds", "window"]

#: the mean window of TCP flows that fill a FIFO link, as a share of what the link and its queue hold: Cubic's
#: window runs from beta_cubic = 0.7 of that (after a loss) back up to all of it (RFC 8312 sec. 4.5), 0.85 on average;
#: NewReno's from half of it (RFC 5681 sec. 3.1, eq. (4): ssthresh = FlightSize / 2), 0.75 on average
STANDING = {"cubic": 0.85, "newreno": 0.75}
#: segments below which HyStart does not act (Linux's hystart_low_window, ns-3 TcpCubic's HyStartLowWindow)
HYSTART_LOW_WINDOW = 16


def hystart_delay(rtt: float) -> float:
    """The RTT increase at which HyStart ends slow start: RTT / 8 within [4 ms, 16 ms] (Ha and Rhee,
    "Taming the elephants: new TCP slow start", Computer Networks 55(9), 2011, sec. 3.2; Linux's
    tcp_cubic.c HYSTART_DELAY_MIN/MAX)."""
    return min(0.016, max(0.004, rtt / 8.0))


def rounds(size: float, first: float) -> int:
    """The RTT rounds slow start from a window of `first` bytes takes to send `size` bytes."""
    return max(1, math.ceil(math.log2(size / first + 1.0 - 1e-12))) if size > 0 else 1


def window(size: float, first: float, k: int) -> float:
    """Bytes sent in round `k` (0-based) of a slow start of `size` bytes from `first`: the doubled
    window, or what is left of the bytes in the last round."""
    return max(0.0, min(first * 2.0**k, size - first * (2.0**k - 1.0)))


class Burst:
    """One transfer's slow start through the links it crosses (see the module docstring)."""

    __slots__ = ("first", "id", "last", "rounds", "rtt", "size", "start", "upstream")

    def __init__(self, id: int, start: float, rtt: float, first: float, size: float, upstream: dict) -> None:
        self.id, self.start, self.rtt, self.first, self.size = id, start, rtt, first, size
        self.upstream = upstream  # link -> bytes/s of the slowest link before it on the path (inf: none)
        self.last = rounds(size, first) - 1  # the round that sends its last bytes
        self.rounds = self.last + 1  # its slow start's rounds (fewer when HyStart ends it)

    def end(self) -> float:
        return self.start + self.rounds * self.rtt

    def round_at(self, t: float) -> int:
        """The round under way at `t` (-1: not started, `rounds`: over)."""
        if t < self.start:
            return -1
        if self.rtt <= 0:
            return 0
        return min(self.rounds, int((t - self.start) / self.rtt * (1.0 + 1e-12)))


class _Table:
    """One link's part in `Bursts.overflows`: its groups of bursts by start, and those begun so far."""

    __slots__ = ("active", "begun", "capacity", "fifo", "link", "load", "ordered", "queue")

    def __init__(self, link: Hashable, capacity: float, queue: float | None, load: float, fifo: bool,
                 ordered: list[tuple[tuple, list[Burst]]]) -> None:
        self.link, self.capacity, self.queue, self.load, self.ordered = link, capacity, queue, load, ordered
        self.fifo = fifo
        self.begun = 0  # groups of `ordered` begun by the instant looked at
        self.active: list[tuple[tuple, list[Burst]]] = []


class Bursts:
    """The bursts under way through each bounded link, and their overflows."""

    def __init__(self, mss: int, congestion_control: str = "cubic") -> None:
        self.mss = mss
        self.hystart = congestion_control == "cubic"  # Cubic ends slow start by HyStart (Linux's and ns-3's); NewReno does not
        self.standing = STANDING[congestion_control]
        self._on: dict[Hashable, dict[int, Burst]] = {}  # link -> its bursts, in start order
        self._owed: dict[Hashable, float] = {}  # link -> expected timeouts not yet given (see `_round`)
        self._new: dict[Hashable, list[Burst]] = {}  # link -> its bursts started since it was last looked at

    def start(self, burst: Burst, links: list[Hashable]) -> None:
        for link in links:
            self._on.setdefault(link, {})[burst.id] = burst
            self._new.setdefault(link, []).append(burst)

    def end(self, id: int, links: list[Hashable]) -> None:
        for link in links:
            on = self._on.get(link)
            if on is not None and on.pop(id, None) is not None and not on:
                del self._on[link]

    def ids(self, link: Hashable, now: float) -> list[int]:
        """The bursts under way on `link` at `now`."""
        return [b.id for b in self._on.get(link, {}).values() if b.end() > now]

    def overflows(self, links: list[tuple[Hashable, float, float | None, float, bool]], now: float,
                  default_queue: Callable[[float, float], float]) -> list[tuple[int, float, bool]]:
        """The bursts that overflow the queue of one of `links` ((link, capacity bytes/s, queue bytes or None:
        `default_queue(capacity, rtt)`, bytes/s the flows past their slow start use on it now, whether its
        queue is one FIFO, ``qdisc = "fifo"``, else per-flow fair)) in a round
        starting at `now` or later: (id, the round's start,
        whether it stalls for a timeout), in order of their loss.  The links are followed together, round
        by round, so that a slow start ended on one (HyStart) is over on all.  The bursts that lost leave
        every link given (their slow start ends); the caller ends them on their other links."""
        tables: list[_Table] = []  # per link: its groups of bursts alike (all of a round's transfers starting at t = 0 are one)
        instants: list[list[tuple[float, int]]] = []  # per link: (instant one of its rounds starts, link's index)
        for link, capacity, queue, load, fifo in links:
            on = self._on.get(link)
            if not on:
                continue
            for b in [b for b in on.values() if b.end() <= now]:  # slow starts over
                del on[b.id]
            groups: dict[tuple, list[Burst]] = {}
            for b in on.values():
                groups.setdefault((b.start, b.rtt, b.first, b.size, b.upstream.get(link, math.inf)), []).append(b)
            index = len(tables)
            # the rounds of the bursts new on this link: the instants whose windows have changed (the
            # others were looked at when their own bursts started, and their outcomes stand)
            instants.append(sorted({(b.start + k * b.rtt, index) for b in self._new.pop(link, ()) if b.id in on
                                    for k in range(b.rounds) if b.start + k * b.rtt >= now}))
            # the groups by start, so that each instant looks only at those begun by then (`_round`)
            tables.append(_Table(link, capacity, queue, load, fifo, sorted(groups.items(), key=lambda g: g[0][0])))
        out: list[tuple[int, float, bool]] = []
        lost: set[int] = set()
        for t, index in heapq.merge(*instants):  # every link at its own rounds, all in time order
            tb = tables[index]
            while tb.begun < len(tb.ordered) and tb.ordered[tb.begun][0][0] <= t:
                tb.active.append(tb.ordered[tb.begun])
                tb.begun += 1
            tb.active = [g for g in tb.active if g[0][0] + g[1][0].rounds * g[0][1] > t]  # not over by `t`
            self._round(t, tb, lost, out, default_queue)
        for tb in tables:
            link = tb.link
            on = self._on.get(link)
            if on is not None:
                for id in lost:
                    on.pop(id, None)
                if not on:
                    del self._on[link]
        return out

    def _round(self, t: float, tb: _Table, lost: set[int], out: list[tuple[int, float, bool]],
               default_queue: Callable[[float, float], float]) -> None:
        """The rounds under way at `t` through one link, `tb.active` (see the module docstring)."""
        link, capacity, queue, load, groups, fifo = tb.link, tb.capacity, tb.queue, tb.load, tb.active, tb.fifo
        sent, n, span, rtt_max = 0.0, 0, 0.0, 0.0
        live = []
        for key, members in groups:
            here = [b for b in members if b.id not in lost and 0 <= b.round_at(t) < b.rounds]
            if not here:
                continue
            k = here[0].round_at(t)
            w = window(key[3], key[2], k)
            # a round that began before `t` has sent part of its window already: what is left of the round
            left = w if key[1] <= 0 else w * max(0.0, 1.0 - (t - key[0] - k * key[1]) / key[1])
            live.append((here, w, left))
            sent += left * len(here)
            n += len(here)
            span = max(span, left / key[4])
            rtt_max = max(rtt_max, key[1])
        if not live:
            return
        room = default_queue(capacity, rtt_max) if queue is None else queue
        drained, standing = capacity * max(rtt_max, span), 0.0
        if fifo and load > 0:  # the flows past their slow start share the one queue
            drained = max(0.0, capacity - load) * max(rtt_max, span)
            if load >= capacity * (1.0 - 1e-6):  # ... and fill the link: their windows keep a standing queue
                standing = min(room, max(0.0, self.standing * (capacity * rtt_max + room) - capacity * rtt_max))
        room -= standing  # what the bursts find free
        queued = standing + sent - drained  # what the link holds beyond its pipe at the end of the round
        if sent - drained <= room:
            for here, w, _ in live if self.hystart else ():  # HyStart: a window of 16 segments or more that sees the queue's delay stops doubling
                if w >= HYSTART_LOW_WINDOW * self.mss and queued > capacity * hystart_delay(here[0].rtt):
                    for b in here:  # its slow start ends with this round, on every link
                        b.rounds = min(b.rounds, b.round_at(t) + 1)
            return
        took = drained + room  # bytes of the round the link carried or kept
        for here, w, left in live:
            through = left * took / sent if fifo else took / n  # fifo: every flow alike; fair: an equal share each
            if left <= through:
                continue  # a fair queue drops only from the flows above their share
            if w - left + through < FAST_RETRANSMIT_SEGMENTS * self.mss:
                stalls = 1.0  # too little got through for three duplicate ACKs
            else:  # PFTK sec. 2.2: a loss in a window of w segments is a timeout with chance Q = min(1, 3 / w)
                stalls = min(1.0, (FAST_RETRANSMIT_SEGMENTS - 1) * self.mss / w)
            # each burst adds its chance to the link's expected timeouts; one is given whenever they reach one
            # half (rounding, with the remainder carried: deterministic, and right in number over many bursts)
            owed = self._owed.get(link, 0.0)
            for b in sorted(here, key=lambda b: b.id):
                owed += stalls
                lost.add(b.id)
                out.append((b.id, t, owed >= 0.5))
                if owed >= 0.5:
                    owed -= 1.0
            self._owed[link] = owed
