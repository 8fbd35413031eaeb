"""A node's gather: `NodePort.wait` with `take`, which hands every message of a kind to
`take(msg)` as it comes until `done()` holds or the deadline `until` passes.

A gather keeps one deadline timer, at `until` exactly, set when it first waits and kept
until it ends — not renewed at each message, as a loop of `wait(kind, until=until)` renews
its own (issue 40: so a gather is one entry of the timer queue, in the place it was made).
Both forms below keep that one timer, so they write the same records:
- `each`: the task wakes for every message (the end of the gather cannot be foreseen);
- `collect`: told by `ends(msg)` which message ends the gather, the others are taken where
  the woken task step would have run, without waking it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from netemu.engine.clock import running_loop
from netemu.engine.inbox import Kinds
from netemu.engine.net.message import Message

if TYPE_CHECKING:
    from netemu.engine.port import NodePort

__all__ = ["collect", "each"]


def _passed(until: float | None, loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the deadline has passed (as a wait of `until - now` seconds would say)."""
    return until is not None and until - loop.time() <= 0


async def each(port: NodePort, kind: Kinds, take: Callable[[Message], object], done: Callable[[], bool],
               until: float | None) -> None:
    """`while not done() and (msg := <next message of kind, None once until passed>) is not None:
    take(msg)`, with one deadline timer for the whole loop."""
    inbox, loop = port.inbox, running_loop()
    waiting: list[asyncio.Future | None] = [None]  # the future the task awaits now, if any
    fired = [False]
    timer: asyncio.TimerHandle | None = None

    def expire() -> None:
        fired[0] = True
        fut = waiting[0]
        if fut is not None:
            inbox.expire(fut)

    try:
        while not done():
            msg = inbox.take(kind)
            if msg is None:
                if fired[0] or _passed(until, loop):
                    return
                fut = waiting[0] = inbox.waiter(kind)
                if until is not None and timer is None:
                    timer = loop.call_at(until, expire)
                port.waiting_for = f"recv(kind={kind!r})"
                try:
                    msg = await fut
                finally:
                    port.waiting_for = None
                    waiting[0] = None
                    if not fut.done() or fut.cancelled():  # cancelled: stop waiting
                        inbox.discard(fut)
                if msg is None:
                    return
            take(msg)
    finally:
        if timer is not None:
            timer.cancel()


async def collect(port: NodePort, kind: Kinds, handle: Callable[[Message], object], done: Callable[[], bool],
                  ends: Callable[[Message], bool], until: float | None) -> None:
    """`each` with `ends`: a message that does not end the collection is handled where the
    woken task step would have run (by one loop callback, or at once when that is the loop's
    very next step: `run_now`); the one that ends it (or arrives when `until` has passed)
    wakes the task with it.  So the loop runs the same steps and timers in the same order as
    `each`: the same records."""
    inbox = port.inbox
    while not done():  # what was delivered before is taken without waiting
        msg = inbox.take(kind)
        if msg is None:
            break
        handle(msg)
    if done():
        return
    loop = running_loop()

    def step(msg: Message) -> None:  # where the task woken by `msg` would have run
        if fut.done():
            return
        try:
            handle(msg)
            finished = done() or _passed(until, loop)
        except Exception as exc:  # noqa: BLE001 - raised in the waiting task, which names the actor
            inbox.discard(fut)
            fut.set_exception(exc)
            return
        if finished:
            inbox.discard(fut)
            fut.set_result(None)

    def offer(msg: Message) -> bool:
        try:
            last = ends(msg) or _passed(until, loop)
        except Exception as exc:  # noqa: BLE001 - raised in the waiting task, not in the network's delivery
            inbox.discard(fut)
            fut.set_exception(exc)
            return True
        if last:
            inbox.discard(fut)
            fut.set_result(msg)  # the task handles it, as `each` would take it
        else:
            woke = loop.run_now(step, msg)  # now, if that is exactly where it would run scheduled
            if woke is not None:
                return woke
            loop.call_soon(step, msg)
        return True

    if _passed(until, loop):
        return
    fut = inbox.waiter(kind, offer)
    timer = None if until is None else loop.call_at(until, inbox.expire, fut)
    port.waiting_for = f"recv(kind={kind!r})"
    try:
        last = await fut
    finally:
        port.waiting_for = None
        if timer is not None:
            timer.cancel()
        if not fut.done() or fut.cancelled():
            inbox.discard(fut)
    if last is not None:
        handle(last)
