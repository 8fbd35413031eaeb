"""A node's inbox: delivered messages waiting to be received, and the receivers waiting for
them, matched by message kind (each `NodePort` of netemu.engine.port holds one)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator

from netemu.engine.net.message import Message

__all__ = ["Inbox", "Kinds"]

Kinds = str | tuple[str, ...] | None


def _matches(kind: Kinds, msg: Message) -> bool:
    return kind is None or msg.kind == kind or (isinstance(kind, tuple) and msg.kind in kind)


class Inbox:
    """Delivered messages waiting to be received, with receivers filtered by kind.

    A receiver is a future woken by the first message of its kind, or a collector: a
    function offered each message of its kind as it is delivered, which returns whether
    it woke code (as `put` does)."""

    def __init__(self) -> None:
        self._items: deque[Message] = deque()
        self._waiters: deque[tuple[Kinds, asyncio.Future, Callable[[Message], bool] | None]] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Message]:
        """The messages kept, in arrival order."""
        return iter(self._items)

    def put(self, msg: Message) -> bool:
        """Hand `msg` to the first waiter of its kind, or keep it; returns whether woken
        code waits to run (the network delivers the next message of a batch at once
        only when none does: no waiter was woken, or a collector's step already ran)."""
        for i, (kind, fut, collect) in enumerate(self._waiters):
            if _matches(kind, msg):
                if collect is not None:
                    return collect(msg)
                del self._waiters[i]
                fut.set_result(msg)
                return True
        self._items.append(msg)
        return False

    def take(self, kind: Kinds) -> Message | None:
        for i, msg in enumerate(self._items):
            if _matches(kind, msg):
                del self._items[i]
                return msg
        return None

    def waiter(self, kind: Kinds, collect: Callable[[Message], bool] | None = None) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((kind, fut, collect))
        return fut

    def expire_at(self, fut: asyncio.Future, when: float) -> asyncio.Handle:
        """One timer that resolves the waiter `fut` with None at virtual time `when`, scheduled
        as `asyncio.timeout_at(when)` schedules its own (the next loop step if `when` is not
        after now), without building and unwinding a timeout context per call."""
        loop = fut.get_loop()
        return loop.call_soon(self.expire, fut) if when <= loop.time() else loop.call_at(when, self.expire, fut)

    def expire(self, fut: asyncio.Future) -> None:
        """A deadline passed: the waiter stops waiting and receives None."""
        if not fut.done():
            self.discard(fut)
            fut.set_result(None)

    def discard(self, fut: asyncio.Future) -> None:
        for i, (_, waiting, _) in enumerate(self._waiters):
            if waiting is fut:
                del self._waiters[i]
                return

    def clear(self) -> None:
        self._items.clear()
        self._waiters.clear()
