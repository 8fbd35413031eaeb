"""Links: one directed link's impairments (netemu.engine.net.impairments: latency, jitter,
loss), bandwidth queue and outages, and the per-round message indices that key its draws.

A message's fate depends only on where it stands in the traffic of its link (its round
and index), never on what other links or actors did.

Memory: a world of a million clients has two million links, so a link holds little —
slots, no dict; the components of a link class may be shared by all its links
(`Link(..., shared=True)`; a link copies a stateful one before its first draw, any one
when a script reads it); its round counter and outage list exist once it needs them.
"""

from __future__ import annotations

import bisect
import copy
from array import array
from collections.abc import Sequence
from typing import Protocol

from netemu.engine.net.impairments import (
    Bernoulli,
    Constant,
    Empirical,
    Exponential,
    GilbertElliott,
    Jitter,
    Latency,
    LogNormal,
    Loss,
    RoundDelay,
    Uniform,
    _check,
)
from netemu.engine.rng import KeyedDraws

__all__ = [
    "Bernoulli",
    "Constant",
    "Empirical",
    "Exponential",
    "GilbertElliott",
    "Jitter",
    "Latency",
    "Link",
    "LogNormal",
    "Loss",
    "RoundCounter",
    "RoundDelay",
    "Uniform",
]


# ---------------------------------------------------------------- keys


class _Last(Protocol):
    """The counter of the round used last, in two slots: a `RoundCounter`'s own, or a `Link`'s."""

    _round: int | None
    _count: int


class RoundCounter:
    """Per-round sequence numbers that never repeat: the `index` of a (round, index) key.

    `next(round)` returns 0, 1, 2, ... for each round separately, whatever the order of
    rounds (sends in rounds 1, 2, 1, 1, 2 get 0, 0, 1, 2, 1), so two messages (or two
    computes) never share a key and so never share a fate or a trace entry.

    Memory is bounded: counters are kept for the `window` highest rounds seen.  When a
    round falls out of the window its counter is forgotten, and every later use of a
    round below those kept gets a negative index -1, -2, ... from one counter of its own:
    still unique, but no longer aligned with what another algorithm drew for that
    (round, index).  Only code that revisits a round after `window` newer rounds meets
    such keys; the shipped algorithms send their rounds in order.

    The counter of the round used last is kept in two slots, the others in two compact
    integer arrays created when a second round is seen: a link that carried one round
    costs no allocation beyond the object itself (a million-client world has two million).
    """

    __slots__ = ("_count", "_counts", "_late", "_round", "_rounds", "window")

    def __init__(self, window: int = 64) -> None:
        _check(window >= 1, "the round window must be >= 1, got {}", window)
        self.window = window
        self._round: int | None = None  # the round used last (None: no round yet) ...
        self._count = 0  # ... and how many indices it has handed out
        self._rounds: array | None = None  # the other kept rounds ...
        self._counts: array | None = None  # ... and their counts, in parallel
        self._late = 0  # negative indices handed out for rounds below the window

    def __len__(self) -> int:
        """How many rounds' counters are kept (at most `window`)."""
        return (self._round is not None) + (len(self._rounds) if self._rounds is not None else 0)

    def next(self, round: int) -> int:
        if round == self._round:
            index = self._count
            self._count = index + 1
            return index
        return self._switch(round, self)

    def _switch(self, round: int, last: _Last) -> int:
        """`next(round)` for a round other than the last one used, whose counter `last` keeps in
        its `_round` and `_count`: this counter itself, or a `Link`, which keeps its last round
        in its own slots and the others here (no copies of them in and out).

        The kept rounds are in ascending order, so finding a round is a bisection and the
        oldest is the first; rounds sent in order (the usual case: one message per link
        and round) append at the end and are never found, without a scan."""
        rounds, counts, previous = self._rounds, self._counts, last._round
        if rounds is not None and counts is not None and previous is not None and round > previous \
                and (not rounds or previous > rounds[-1]):
            # rounds in order (what the general path below does for them): the last round's
            # counter goes at the end, the new round is above every kept one (so not among
            # them, nor below the oldest), and the oldest goes when the window is full
            rounds.append(previous)
            counts.append(last._count)
            if len(rounds) >= self.window:
                del rounds[0], counts[0]
            last._round, last._count = round, 1
            return 0
        if previous is not None:  # park the last round's counter with the others
            if rounds is None or counts is None:
                rounds = self._rounds = array("q")
                counts = self._counts = array("q")
            if not rounds or previous > rounds[-1]:
                rounds.append(previous)
                counts.append(last._count)
            else:
                i = bisect.bisect_left(rounds, previous)
                rounds.insert(i, previous)
                counts.insert(i, last._count)
            last._round = None
        if rounds:
            assert counts is not None
            if round <= rounds[-1]:
                i = bisect.bisect_left(rounds, round)
                if rounds[i] == round:
                    index = counts[i]
                    del rounds[i], counts[i]
                    last._round, last._count = round, index + 1
                    return index
            if len(rounds) >= self.window:  # once full, always full: forgotten rounds < kept rounds
                if round < rounds[0]:
                    self._late += 1
                    return -self._late
                del rounds[0], counts[0]
        last._round, last._count = round, 1
        return 0


# ---------------------------------------------------------------- link


class Link:
    """One directed link: composed impairments plus a FIFO transmission queue.

    `bandwidth` is in bits/s (None = infinite).  A message occupies the link for
    its encoded size × 8 / bandwidth seconds; messages queue in FIFO order behind
    the previous one (`busy_until`), which is what a capacity-1 SimPy resource
    computes, at O(1) cost per message.  `outages` are [start, end) windows in which
    whatever is sent is dropped with reason ``outage``.

    `shared=True`: the components may also be given to other links (a scenario gives
    every link of a class the same ones).  The link then copies a stateful component
    (Gilbert–Elliott, jitter) before it first draws from it, and every component the
    first time `latency`, `jitter` or `loss` is read, so changing one link never
    changes another and each link's state evolves with its own traffic only.
    """

    __slots__ = (
        "_count", "_indices", "_jitter", "_latency", "_loss", "_outages", "_round", "_shared", "bandwidth", "busy_until",
        "corrupt", "duplicate", "link_class", "qdisc", "queue_bytes",
    )

    def __init__(
        self,
        latency: Latency | None = None,
        *,
        jitter: Jitter | None = None,
        loss: Loss | None = None,
        bandwidth: float | None = None,
        outages: Sequence[tuple[float, float]] = (),
        link_class: str = "link",
        shared: bool = False,
        queue_bytes: float | None = None,
        duplicate: float = 0.0,
        corrupt: float = 0.0,
        qdisc: str | None = None,
    ) -> None:
        if bandwidth is not None and not bandwidth > 0:  # the message is formatted only when raised
            raise ValueError(f"bandwidth must be > 0 bits/s, got {bandwidth}")
        if queue_bytes is not None and not queue_bytes > 0:
            raise ValueError(f"queue_bytes must be > 0 bytes, got {queue_bytes}")
        self.queue_bytes = queue_bytes  # bytes that may wait for the link (None: unbounded); netemu.engine.net.transfers
        _check(qdisc in (None, "fair", "fifo"), 'qdisc must be "fair" or "fifo" (None: the network\'s), got {!r}', qdisc)
        self.qdisc = qdisc  # how the link serves the flows crossing it (None: NetModel.qdisc); netemu.engine.net.queues
        _check(0 <= duplicate <= 1 and 0 <= corrupt <= 1, "duplicate and corrupt are probabilities in [0, 1], got {}, {}", duplicate, corrupt)
        self.duplicate, self.corrupt = float(duplicate), float(corrupt)  # netem's: a delivered message arrives twice / corrupted
        self._latency = latency if latency is not None else _NO_DELAY
        self._jitter, self._loss, self.bandwidth, self.link_class = jitter, loss, bandwidth, link_class
        # 0: the components are the link's own; 1: shared; 2: stateful ones copied, the others shared
        self._shared = 1 if shared else 0
        self._outages: list[tuple[float, float]] | None = None
        for start, end in outages:
            self.add_outage(start, end)
        self.busy_until = 0.0
        # the message indices: the last round's counter here, the others' in a RoundCounter made
        # when a second round is seen (a link that carried one round allocates nothing for them)
        self._round: int | None = None
        self._count = 0
        self._indices: RoundCounter | None = None

    def twin(self, bandwidth: float | None = None) -> Link:
        """A new link with this link's settings and components, as ``Link(..., shared=True)`` with
        the same arguments makes it (components shared until each link needs its own), with
        `bandwidth` instead of this one's when given.  For a template that has carried no
        traffic: a scenario makes one per link class and a twin per edge, a few times cheaper
        than checking the same arguments again (two million links at a million clients)."""
        if self._shared != 1 or self._round is not None or self.busy_until:
            raise ValueError("only a shared link that has carried no traffic can be twinned (a template)")
        if bandwidth is not None and not bandwidth > 0:
            raise ValueError(f"bandwidth must be > 0 bits/s, got {bandwidth}")
        new = Link.__new__(Link)
        new._latency, new._jitter, new._loss, new.link_class = self._latency, self._jitter, self._loss, self.link_class
        new.bandwidth = self.bandwidth if bandwidth is None else bandwidth
        new.queue_bytes, new.duplicate, new.corrupt, new._shared = self.queue_bytes, self.duplicate, self.corrupt, 1
        new.qdisc = self.qdisc
        new._outages = None if self._outages is None else list(self._outages)
        new.busy_until, new._round, new._count, new._indices = 0.0, None, 0, None
        return new

    # the components; reading one gives the link its own copy (see the class docstring)

    @property
    def latency(self) -> Latency:
        self._own_all()
        if self._latency is _NO_DELAY:
            self._latency = Constant(0.0)
        return self._latency

    @latency.setter
    def latency(self, value: Latency) -> None:
        self._own_all()
        self._latency = value

    @property
    def jitter(self) -> Jitter | None:
        self._own_all()
        return self._jitter

    @jitter.setter
    def jitter(self, value: Jitter | None) -> None:
        self._own_all()
        self._jitter = value

    @property
    def loss(self) -> Loss | None:
        self._own_all()
        return self._loss

    @loss.setter
    def loss(self, value: Loss | None) -> None:
        self._own_all()
        self._loss = value

    def _own_all(self) -> None:
        if self._shared:
            every = self._shared == 1  # 2: the stateful ones are already this link's own
            if every or not self._latency.stateful:
                self._latency = copy.copy(self._latency)
            if self._jitter is not None and (every or not self._jitter.stateful):
                self._jitter = copy.copy(self._jitter)
            if self._loss is not None and (every or not self._loss.stateful):
                self._loss = copy.copy(self._loss)
            self._shared = 0

    def _own_stateful(self) -> None:
        """Copy the shared components that change as they draw (before the first draw)."""
        if self._latency.stateful:
            self._latency = copy.copy(self._latency)
        if self._jitter is not None and self._jitter.stateful:
            self._jitter = copy.copy(self._jitter)
        if self._loss is not None and self._loss.stateful:
            self._loss = copy.copy(self._loss)
        self._shared = 2

    @property
    def random(self) -> bool:
        """Whether this link draws any random numbers."""
        return (self._loss is not None or self._jitter is not None or not isinstance(self._latency, Constant)
                or self.duplicate > 0 or self.corrupt > 0)

    @property
    def packet_loss(self) -> float | None:
        """The loss model's rate per packet, None when its losses take whole messages (or it has none: 0)."""
        return 0.0 if self._loss is None else self._loss.packet_loss

    @property
    def max_delay(self) -> float:
        """The longest delay the latency model allows (longer: the message expires)."""
        return self._latency.max_delay

    @property
    def outages(self) -> tuple[tuple[float, float], ...]:
        return tuple(self._outages) if self._outages else ()

    def add_outage(self, start: float, end: float) -> None:
        _check(0 <= start < end, "an outage needs 0 <= start < end, got [{}, {})", start, end)
        if self._outages is None:
            self._outages = []
        bisect.insort(self._outages, (float(start), float(end)))

    def is_down(self, t: float) -> bool:
        return bool(self._outages) and any(start <= t < end for start, end in self._outages or ())

    def next_index(self, round: int) -> int:
        """Index of the next message of `round` on this link (0, 1, ... within each round,
        whatever order rounds are sent in; see `RoundCounter`)."""
        if round == self._round:
            index = self._count
            self._count = index + 1
            return index
        indices = self._indices
        if indices is None:
            if self._round is None:
                self._round, self._count = round, 1
                return 0
            indices = self._indices = RoundCounter()
        return indices._switch(round, self)  # the last round's counter stays in this link's slots, the others there

    def draw_fate(self, draws: KeyedDraws, round: int, index: int, segments: int = 1) -> tuple[str | None, float]:
        """(fate, propagation delay) of message `index` in `round`: the fate is None (delivered),
        a drop reason ("loss", "expired", "corrupt": it arrives unusable) or "duplicate" (it is
        delivered, and a copy right after it).  With `segments` > 1 (the reliable transport's
        packets), "loss" means that at least one segment was lost (`Loss.lost_any`)."""
        if self._shared == 1:
            self._own_stateful()
        loss, latency, jitter = self._loss, self._latency, self._jitter
        lost = loss is not None and (loss.lost(draws, round, index) if segments == 1 else loss.lost_any(draws, round, index, segments))
        delay = latency.sample(draws, round, index)
        if jitter is not None:
            delay = max(0.0, delay + jitter.sample(draws, round, index))
        if lost:
            return "loss", delay
        if delay > latency.max_delay:
            return "expired", delay
        # netem's corrupt and duplicate (tc-netem(8)): own keyed draws, made only where set, so a
        # link without them draws exactly what it always drew
        if self.corrupt and draws.uniform(round, index, "corrupt") < self.corrupt:
            return "corrupt", delay
        if self.duplicate and draws.uniform(round, index, "duplicate") < self.duplicate:
            return "duplicate", delay
        return None, delay

    def transmission_time(self, nbytes: int) -> float:
        return 0.0 if self.bandwidth is None else nbytes * 8.0 / self.bandwidth


_NO_DELAY = Constant(0.0)  # the default latency, shared (a link replaces it before a script may change it)
