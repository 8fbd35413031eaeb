"""What a thread of a ServerApp can block on (`Turns.call`), and when the loop wakes it.

Each request says whether it is met (`met`) and the virtual time by which it will be
at the latest (`deadline`, None: only an event can meet it); the server actor waits in
virtual time for the earliest deadline or the next reply.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netemu.flower.grid import NetemuGrid

__all__ = ["Replies", "Sleep", "ThreadsDone"]


@dataclass(frozen=True)
class Replies:
    """Replies to the instructions `ids`: all of them (or any one, `any_reply`), until
    virtual time `until` (None: until their TTLs run out)."""

    ids: list[str]
    until: float | None
    any_reply: bool

    def met(self, grid: NetemuGrid, now: float) -> bool:
        out = grid.outstanding(self.ids)
        return not out or (self.any_reply and len(out) < len(self.ids)) or (self.until is not None and now >= self.until)

    def deadline(self, grid: NetemuGrid, now: float) -> float | None:
        expiry = grid.next_expiry(self.ids)
        if self.until is None:
            return expiry
        return self.until if expiry is None else min(self.until, expiry)


@dataclass(frozen=True)
class ThreadsDone:
    """Tasks run by other threads of the program (Flower's legacy thread pool) ended,
    or virtual time `until` passed."""

    futures: list[Future]
    until: float | None = None

    def met(self, grid: NetemuGrid, now: float) -> bool:
        return all(f.done() for f in self.futures) or (self.until is not None and now >= self.until)

    def deadline(self, grid: NetemuGrid, now: float) -> float | None:
        return self.until


@dataclass(frozen=True)
class Sleep:
    """Virtual time `until` (a `time.sleep` of Flower's, mapped to virtual time)."""

    until: float

    def met(self, grid: NetemuGrid, now: float) -> bool:
        return now >= self.until

    def deadline(self, grid: NetemuGrid, now: float) -> float | None:
        return self.until
