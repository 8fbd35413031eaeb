"""The virtual-time loop's timers and their order: by time, then by scheduling sequence.

asyncio orders timers due at the same instant by the history of its heap (`TimerHandle`
compares `_when` only), so which of two simultaneous timers runs first depends on every timer
pushed and popped before them.  `VirtualTimeLoop` (netemu.engine.clock) makes every timer a
`Timer` carrying a sequence number drawn from the loop's one counter when it is scheduled:
timers due at the same virtual time run in the order they were scheduled (issue 40).

A `Column` is many timers kept in a heap of their own — a cohort's members' computes and
sleeps (netemu.engine.cohort) — with their sequence numbers drawn from the same counter.  The
loop's heap holds one `Token` for a column, keyed by the column's head; as the loop moves due
timers to its run queue it expands a token into the column's head `Wake` and puts the token
back keyed by the next one, so every wake-up runs exactly where a timer of its own would
have run, merged with the loop's other timers by (time, sequence).  A wake-up cancelled in
the column stays its head (as a cancelled timer stays the heap's) until the loop drops it.
"""

from __future__ import annotations

import asyncio
import asyncio.format_helpers
import contextvars
import heapq
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["Column", "Timer", "Token", "Wake"]


class _Ordered:
    """Ordered by (when, seq) in the loop's heap: a `Timer` and a column's `Token` alike."""

    __slots__ = ()
    _when: float
    _seq: int

    def __lt__(self, other: Any) -> bool:
        return self._when < other._when or (self._when == other._when and self._seq < other._seq)

    def __gt__(self, other: Any) -> bool:
        return self._when > other._when or (self._when == other._when and self._seq > other._seq)


class Timer(_Ordered, asyncio.TimerHandle):  # (_Ordered first: its comparisons, not TimerHandle's)
    """An asyncio timer ordered by (when, seq): seq is its place in the loop's scheduling order."""

    __slots__ = ("_seq",)


class Wake:
    """One pending wake-up of a `Column`: `callback(*args)` run in the context copied when it was
    scheduled, as a timer's handle runs it; in the loop's run queue once due (a handle there)."""

    __slots__ = ("_cancelled", "_queued", "args", "callback", "column", "context")

    def __init__(self, column: Column, callback: Callable[..., object], args: tuple) -> None:
        self.column, self.callback, self.args = column, callback, args
        self.context = contextvars.copy_context()
        self._cancelled = False
        self._queued = True  # still in its column (a timer still in the heap)

    def cancel(self) -> None:
        """As `TimerHandle.cancel`: it will not run; counted with the loop's cancelled timers while queued."""
        if not self._cancelled:
            self._cancelled = True
            if self._queued:
                self.column.loop._timer_cancelled_count += 1

    def _run(self) -> None:
        """As `asyncio.Handle._run`: an exception goes to the loop's exception handler."""
        try:
            self.context.run(self.callback, *self.args)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - as asyncio's Handle._run: reported, the loop goes on
            source = asyncio.format_helpers._format_callback_source(self.callback, self.args)
            self.column.loop.call_exception_handler({"message": f"Exception in callback {source}", "exception": exc})


class Token(_Ordered):
    """A column's one entry in the loop's timer heap, keyed by (when, seq) of the column's head.
    A token the column no longer uses (its head changed by a new, earlier wake-up) is stale:
    it reads as cancelled and the loop drops it."""

    __slots__ = ("_seq", "_when", "column")

    def __init__(self, column: Column, when: float, seq: int) -> None:
        self.column, self._when, self._seq = column, when, seq

    @property
    def _cancelled(self) -> bool:
        column = self.column
        return column._token is not self or column._heap[0][2]._cancelled

    def cancelled(self) -> bool:
        """Whether nothing live is left behind this token (what the loop's scan for the next live timer asks)."""
        column = self.column
        return column._token is not self or all(wake._cancelled for _, _, wake in column._heap)

    def when(self) -> float:
        """The time of the column's first live wake-up."""
        return min(when for when, _, wake in self.column._heap if not wake._cancelled)


class Column:
    """Timers in a heap of their own, (when, seq, Wake), represented in `loop`'s heap by one `Token`."""

    __slots__ = ("_heap", "_token", "loop")

    def __init__(self, loop: Any) -> None:
        self.loop = loop  # a VirtualTimeLoop
        self._heap: list[tuple[float, int, Wake]] = []
        self._token: Token | None = None  # the live token, in the loop's heap while the column is not empty

    def __len__(self) -> int:
        return len(self._heap)

    def call_at(self, when: float, callback: Callable[..., object], *args: Any) -> Wake:
        """`loop.call_at(when, callback, *args)`, kept in this column: the same order, one heap entry."""
        loop = self.loop
        wake = Wake(self, callback, args)
        entry = (when, next(loop._seqs), wake)
        heap = self._heap
        heapq.heappush(heap, entry)
        if heap[0] is entry:  # a new head: a new token where the timer would be (the old one goes stale)
            self._token = token = Token(self, when, entry[1])
            heapq.heappush(loop._scheduled, token)
            if loop._phase == 1:  # as `loop.call_at`: set within a SimPy step, the loop's wait must not step past it
                loop._rewait = True
        return wake

    def _next(self, token: Token) -> None:
        """The head left the column: `token` goes back to the loop's heap keyed by the next one."""
        heap = self._heap
        if heap:
            token._when, token._seq = heap[0][0], heap[0][1]
            heapq.heappush(self.loop._scheduled, token)
        else:
            self._token = None

    def expand(self, token: Token, ready: deque) -> None:
        """The loop popped `token` as due: the head wake-up joins the run queue (skipped there
        if cancelled, as a cancelled timer is)."""
        if token is not self._token:
            return
        wake = heapq.heappop(self._heap)[2]
        wake._queued = False
        ready.append(wake)
        self._next(token)

    def discard(self, token: Token) -> None:
        """The loop popped `token` as cancelled: drop the cancelled head (or nothing, if stale)."""
        if token is not self._token:
            return
        heapq.heappop(self._heap)[2]._queued = False
        self.loop._timer_cancelled_count -= 1
        self._next(token)

    def rebuilt(self, token: Token) -> Token | None:
        """The loop rebuilds its heap without cancelled timers: drop this column's too; the token
        to keep, keyed by the new head (None: stale or nothing left)."""
        if token is not self._token:
            return None
        kept = []
        for entry in self._heap:
            if entry[2]._cancelled:
                entry[2]._queued = False
            else:
                kept.append(entry)
        heapq.heapify(kept)
        self._heap = kept
        if not kept:
            self._token = None
            return None
        token._when, token._seq = kept[0][0], kept[0][1]
        return token
