"""Max-min fair sharing of link bandwidth among concurrent transfers (a flow-level model).

Transfers that cross a link at the same time share its capacity max-min fairly, as in
SimGrid's flow-level network model (Velho, Schnorr, Casanova, Legrand, "On the validity
of flow-level TCP network models for grid and cloud simulations", ACM TOMACS 23(4), 2013,
sections 3-4): rates come from progressive filling, recomputed when a transfer starts or
ends, and each transfer's rate may be bounded on its own (a TCP window over the RTT, its
eq. for the CM02/LV08 models: rate <= W / RTT).

Incremental, so that 100,000 transfers through one server link cost little per event:

- A link that carries one transfer only is that transfer's own bound, not a shared
  constraint; only links carrying two or more transfers take part in the filling.
- Transfers with the same shared links and the same own bound get the same max-min rate,
  so the filling runs over *classes* of them (a star's uploads through a server link are
  one class per distinct access rate), not over transfers.
- All transfers of a class progress at the class's rate: each holds a finish tag in the
  class's virtual progress (bytes sent by any member since the class began), kept in a
  heap.  A change of rate costs O(1) per class; a transfer ends when the class's progress
  reaches its tag.  (The same device as fair queueing's virtual time.)

A transfer may carry a weight (1 by default): the filling then raises every unfrozen class's
rate as weight x level, weighted max-min fairness (Bertsekas and Gallager, "Data Networks",
2nd ed. 1992, sec. 6.5.2).  netemu weights TCP flows behind FIFO queues by 1 / RTT
(netemu.engine.net.queues).  With every weight 1 the arithmetic is the unweighted one, bit for bit.

A recomputation costs O(classes x links per class x filling levels), independent of how
many transfers a class holds.  Pure: no clock, no SimPy; the network calls `add`,
`advance`, `finished` and `next_finish` with the virtual time.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Hashable, Sequence

__all__ = ["MaxMin"]

_EPS = 1e-9  # relative: a transfer is done when a billionth of its bytes, or of the time, is left (float rounding)


class _Class:
    """Transfers with the same shared links and own bound: one rate, one virtual progress."""

    __slots__ = ("bound", "heap", "key", "links", "live", "progress", "rate", "since", "weight")

    def __init__(self, key: tuple, links: tuple, bound: float, now: float, weight: float = 1.0) -> None:
        self.key, self.links, self.bound, self.weight = key, links, bound, weight
        self.heap: list[tuple[float, int]] = []  # (finish tag, transfer id)
        self.live = 0  # transfers in the class (the heap may hold stale entries of transfers that moved)
        self.progress = 0.0  # bytes each member has sent since the class began
        self.rate = 0.0  # bytes/s of each member
        self.since = now  # the instant `progress` was brought up to date

    def catch_up(self, now: float) -> None:
        if now > self.since:
            self.progress += self.rate * (now - self.since)
            self.since = now


class _Transfer:
    __slots__ = ("bound", "cls", "entry", "id", "links", "size", "tag", "weight")

    def __init__(self, id: int, links: tuple, size: float, bound: float, weight: float = 1.0) -> None:
        self.id, self.links, self.size, self.bound, self.weight = id, links, size, bound, weight
        self.cls: _Class | None = None
        self.tag = 0.0
        self.entry: tuple[float, int] | None = None  # its live entry in its class's heap (others are stale)


class MaxMin:
    """Concurrent transfers over links of given capacities (bytes/s), max-min fair.

    `add(now, id, links, size, bound)` starts a transfer of `size` bytes over `links`
    (hashable link keys; `capacity[link]` bytes/s, a link without a capacity is not a
    constraint) at most at `bound` bytes/s, with `weight` (see the module docstring);
    `remove(now, id)` takes one out before its end.  `next_finish()` is the instant the next
    transfer ends if nothing changes; `finished(now)` removes and returns (in id order)
    the transfers done by `now`.  Rates are recomputed after every change
    (`rates()` shows them).
    """

    def __init__(self, capacity: dict[Hashable, float]) -> None:
        self.capacity = capacity
        self._on_link: dict[Hashable, dict[int, _Transfer]] = {}  # constrained link -> its transfers
        self._classes: dict[tuple, _Class] = {}
        self._transfers: dict[int, _Transfer] = {}
        self._now = 0.0
        self._left: dict[Hashable, float] = {}  # see _recompute
        self.ever_shared: dict[Hashable, None] = {}  # links that carried two or more transfers at once, in that order

    def __len__(self) -> int:
        return len(self._transfers)

    # ------------------------------------------------------------ changes

    def add(self, now: float, id: int, links: Sequence[Hashable], size: float, bound: float = math.inf,
            weight: float = 1.0) -> None:
        self.advance(now)
        constrained = tuple(dict.fromkeys(l for l in links if l in self.capacity))  # in path order, once each
        t = _Transfer(id, constrained, float(size), bound, weight)
        self._transfers[id] = t
        moved: list[_Transfer] = []
        for link in constrained:
            on = self._on_link.setdefault(link, {})
            if len(on) == 1:  # the link becomes shared: its other transfer changes class
                moved.extend(on.values())
                self.ever_shared[link] = None
            on[id] = t
        for other in moved:
            self._reclassify(other)
        self._place(t, t.size)
        self._recompute()

    def advance(self, now: float) -> None:
        """Bring every class's progress up to `now` (rates unchanged)."""
        if now < self._now:
            raise ValueError(f"time runs backwards: {now} < {self._now}")
        self._now = now
        for c in self._classes.values():
            c.catch_up(now)

    def finished(self, now: float) -> list[int]:
        """Remove the transfers done by `now` and return their ids, in ascending order."""
        self.advance(now)
        done: list[_Transfer] = []
        for c in list(self._classes.values()):
            heap = c.heap
            while heap:
                entry = heap[0]
                tag, tid = entry
                t = self._transfers.get(tid)
                if t is None or t.entry is not entry:
                    heapq.heappop(heap)  # stale: the transfer ended or moved (even back to this class)
                    continue
                left = tag - c.progress
                if left > _EPS * t.size and (c.rate <= 0 or left / c.rate > _EPS * max(1.0, now)):
                    break  # not done: more than a billionth of it left, or of the time
                heapq.heappop(heap)
                done.append(t)
        if not done:
            return []
        self._drop(done)
        return sorted(t.id for t in done)

    def remove(self, now: float, id: int) -> float:
        """Take transfer `id` out before its end (it pauses: a retransmission timeout); returns its bytes left."""
        self.advance(now)
        t = self._transfers[id]
        assert t.cls is not None
        left = max(0.0, t.tag - t.cls.progress)
        self._drop([t])
        return left

    def _drop(self, gone: list[_Transfer]) -> None:
        """Forget the transfers `gone` and recompute the rates of the others."""
        freed: list[_Transfer] = []
        for t in gone:
            self._remove(t)
            del self._transfers[t.id]
            for link in t.links:
                on = self._on_link[link]
                del on[t.id]
                if len(on) == 1:  # the link is no longer shared: its last transfer changes class
                    freed.extend(on.values())
                elif not on:
                    del self._on_link[link]
        for other in freed:
            if other.id in self._transfers:
                self._reclassify(other)
        self._recompute()

    def next_finish(self) -> float:
        """The instant the next transfer ends at the current rates (inf: none will)."""
        best = math.inf
        for c in self._classes.values():
            heap = c.heap
            while heap:
                entry = heap[0]
                t = self._transfers.get(entry[1])
                if t is None or t.entry is not entry:
                    heapq.heappop(heap)
                    continue
                break
            if heap and c.rate > 0:
                at = c.since + max(0.0, heap[0][0] - c.progress) / c.rate
                best = min(best, at)
        return best

    def rates(self) -> dict[int, float]:
        """Each transfer's current rate in bytes/s (for tests and reports)."""
        return {tid: t.cls.rate if t.cls is not None else 0.0 for tid, t in sorted(self._transfers.items())}

    def remaining(self, id: int) -> float:
        t = self._transfers[id]
        assert t.cls is not None
        t.cls.catch_up(self._now)
        return max(0.0, t.tag - t.cls.progress)

    def rate(self, id: int) -> float:
        """Transfer `id`'s current rate in bytes/s (0: not here)."""
        t = self._transfers.get(id)
        return t.cls.rate if t is not None and t.cls is not None else 0.0

    def load(self, link: Hashable) -> float:
        """Bytes/s in use on `link` now."""
        on = self._on_link.get(link)
        if not on:
            return 0.0
        if len(on) == 1:  # one transfer: the link is its bound, not in its class's links
            t = next(iter(on.values()))
            return t.cls.rate if t.cls is not None else 0.0
        return self.capacity[link] - self._left.get(link, self.capacity[link])  # O(1): what the filling left

    def loads(self) -> dict[Hashable, float]:
        """Bytes/s in use on each link that has ever been shared (`ever_shared`), from the classes'
        rates: O(classes x their links), not a sum over the transfers."""
        out = dict.fromkeys(self.ever_shared, 0.0)
        for c in self._classes.values():
            for link in c.links:
                out[link] += c.rate * c.live
        for link in out:
            on = self._on_link.get(link)
            if on is not None and len(on) == 1:  # one transfer: the link is its bound, not in its class's links
                t = next(iter(on.values()))
                out[link] = t.cls.rate if t.cls is not None else 0.0
        return out

    # ------------------------------------------------------------ classes

    def _key(self, t: _Transfer) -> tuple[tuple, tuple, float]:
        shared, bound, capacity = [], t.bound, self.capacity
        for link in t.links:
            if len(self._on_link[link]) >= 2:
                shared.append(link)
            else:
                bound = min(bound, capacity[link])
        links = tuple(shared)
        return (links, bound, t.weight), links, bound

    def _place(self, t: _Transfer, remaining: float) -> None:
        key, links, bound = self._key(t)
        c = self._classes.get(key)
        if c is None:
            c = self._classes[key] = _Class(key, links, bound, self._now, t.weight)
        t.cls, t.tag = c, c.progress + remaining
        t.entry = (t.tag, t.id)
        heapq.heappush(c.heap, t.entry)
        c.live += 1

    def _remove(self, t: _Transfer) -> float:
        """Take `t` out of its class (its heap entry goes stale); returns its remaining bytes."""
        c = t.cls
        assert c is not None
        remaining = max(0.0, t.tag - c.progress)
        c.live -= 1
        if not c.live:
            del self._classes[c.key]
        t.cls = None
        return remaining

    def _reclassify(self, t: _Transfer) -> None:
        remaining = self._remove(t)
        self._place(t, remaining)

    def _recompute(self) -> None:
        """Progressive filling over the classes (Velho et al. 2013, sec. 3: max-min fairness;
        weighted, Bertsekas and Gallager 1992, sec. 6.5.2).

        Every unfrozen class's rate rises as its weight x one common level; a class freezes
        when its rate reaches its own bound, or when a link it crosses is saturated (the link's
        remaining capacity over its unfrozen transfers' weights equals the level).  Each class's
        progress is already up to date (`advance`), so changing its rate changes nothing of the past."""
        classes = self._classes
        self._left = {}
        if not classes:
            return
        capacity = self.capacity
        left = self._left  # each shared link's capacity left over by the filling (`load`)
        count: dict[Hashable, float] = {}  # the unfrozen transfers' summed weights (their number: weights 1)
        for c in classes.values():
            for link in c.links:
                if link not in left:
                    left[link], count[link] = capacity[link], 0
                count[link] += c.live * c.weight
        unfrozen = dict(classes)
        while unfrozen:
            level = min(c.bound / c.weight for c in unfrozen.values())
            saturated = None
            for link, n in count.items():
                if n > 0:
                    share = left[link] / n
                    if share < level:
                        level, saturated = share, {link}
                    elif share == level and saturated is not None:
                        saturated.add(link)
            frozen = [k for k, c in unfrozen.items() if c.bound <= level * c.weight
                      or (saturated and any(l in saturated for l in c.links))]
            if not frozen or not math.isfinite(level):  # unbounded classes on unconstrained paths
                for c in unfrozen.values():
                    c.rate = level * c.weight if math.isfinite(level) else math.inf
                    for link in c.links:
                        left[link] = max(0.0, left[link] - c.rate * c.live)
                break
            for k in frozen:
                c = unfrozen.pop(k)
                c.rate = min(c.bound, level * c.weight)
                for link in c.links:
                    left[link] = max(0.0, left[link] - c.rate * c.live)
                    count[link] -= c.live * c.weight
