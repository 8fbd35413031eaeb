"""The Actor base class: an FL client or server as a plain `async def run()`.

An actor talks to a transport (the simulated `Network`, or any object with the same
narrow interface) and never touches SimPy directly:

    class Client(Actor):
        daemon = True                       # the run may end while it still waits
        async def run(self):
            while True:
                msg = await self.recv("model")
                await self.compute(work=50)  # virtual seconds = work / node speed
                self.send(msg.src, "update", {"w": msg.payload["w"] + 1}, round=msg.round)

`send` is non-blocking (the network decides the fate); `recv` waits in virtual time.

`netemu.cohort.Cohort` is one process standing for many clients that run the same
logic, written as callbacks instead of a coroutine per client (docs/actors.md).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, overload

from netemu.clock import running_loop
from netemu.net.links import RoundCounter
from netemu.net.network import Message
from netemu.wire.codec import encode_from

if TYPE_CHECKING:
    from netemu.world import World

__all__ = ["Actor", "Inbox"]

Kinds = str | tuple[str, ...] | None


def _matches(kind: Kinds, msg: Message) -> bool:
    return kind is None or msg.kind == kind or (isinstance(kind, tuple) and msg.kind in kind)


class Inbox:
    """Delivered messages waiting to be received, with receivers filtered by kind.

    A receiver is a future woken by the first message of its kind, or a collector
    (`Actor.collect`): a function offered each message of its kind as it is delivered,
    which returns whether it woke code (as `put` does)."""

    def __init__(self) -> None:
        self._items: deque[Message] = deque()
        self._waiters: deque[tuple[Kinds, asyncio.Future, Callable[[Message], bool] | None]] = deque()

    def __len__(self) -> int:
        return len(self._items)

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

    def expire_after(self, fut: asyncio.Future, timeout: float) -> asyncio.Handle:
        """One timer that resolves the waiter `fut` with None after `timeout`, scheduled
        exactly as `asyncio.timeout(timeout)` schedules its own (same deadline, same loop
        iterations), without building and unwinding a timeout context per call."""
        loop = fut.get_loop()
        when = loop.time() + timeout
        return loop.call_soon(self.expire, fut) if when <= loop.time() else loop.call_at(when, self.expire, fut)

    def expire(self, fut: asyncio.Future) -> None:
        """A `recv` deadline passed: the waiter stops waiting and receives None."""
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


class Actor:
    """Base class of every emulated client and server.

    Subclasses implement `async def run(self)`.  Set `daemon = True` for actors that
    serve forever (e.g. clients waiting for the next model): the run ends when every
    non-daemon actor has returned, and daemons are then cancelled.  Set
    `networked = False` for a process that computes but owns no network node.
    """

    daemon: bool = False
    networked: bool = True  # False: a process with no node (e.g. a vectorized client pool); no send/recv
    #: the World the actor was added to (set by `World.add`, before `run()` starts; not Optional,
    #: so code in `run()` uses it directly)
    world: World

    def __init__(self, name: str) -> None:
        self.name = name
        self.round = 0
        self.inbox = Inbox()
        self.incarnation = 0  # how many times the actor has recovered from a crash
        self.waiting_for: str | None = None
        self._computes = RoundCounter()  # per round, computes so far: keys compute-time draws

    # -------------------------------------------------------------- context

    @property
    def now(self) -> float:
        return self.world.env.now

    @property
    def node(self):
        """The node this actor runs on (attributes, speed, participation, up)."""
        return self.world.network.nodes[self.name]

    @property
    def neighbours(self) -> list[str]:
        return self.world.network.neighbours(self.name)

    def rng(self, purpose: str):
        """A numpy Generator private to this actor and purpose (seeded from the run's root seed)."""
        return self.world.streams.generator(f"actor/{self.name}/{purpose}")

    # -------------------------------------------------------------- messaging

    def send(self, dst: str, kind: str, payload: Any = None, *, round: int | None = None) -> int:
        """Encode `payload` and hand it to the network; returns the message id at once."""
        data = encode_from(self.name, kind, payload, dst)
        return self.world.network.send(self.name, dst, kind, self.round if round is None else round, data)

    def broadcast(self, kind: str, payload: Any = None, dsts: Iterable[str] | None = None, *, round: int | None = None) -> list[int]:
        """Send one payload (encoded once) to `dsts` (default: every neighbour), in one batch."""
        dsts = self.neighbours if dsts is None else list(dsts)
        data = encode_from(self.name, kind, payload)
        return self.world.network.send_many(self.name, dsts, kind, self.round if round is None else round, data)

    def send_many(self, dsts: Sequence[str], kind: str, payloads: Sequence[Any], *, round: int | None = None) -> list[int]:
        """Send `payloads[i]` to `dsts[i]` for every i in one call (e.g. replies, or a
        different partial model per client); returns the message ids, in order.

        Each message is exactly what `send(dsts[i], kind, payloads[i], round=round)`
        would send, in the same order — its own id, fate, log records and bytes — with
        the per-call work of the network done once.  Every payload is encoded first: one
        that cannot be encoded raises before any message of the call is sent.
        """
        dsts = list(dsts)
        payloads = list(payloads)
        if len(dsts) != len(payloads):
            raise ValueError(f"{self.name}: send_many needs one payload per destination, got {len(dsts)} destinations "
                             f"and {len(payloads)} payloads")
        name = self.name
        data = [encode_from(name, kind, payload, dst) for dst, payload in zip(dsts, payloads, strict=True)]
        return self.world.network.send_many(name, dsts, kind, self.round if round is None else round, data)

    @overload
    async def recv(self, kind: Kinds = None, timeout: None = None, *, until: None = None) -> Message: ...

    @overload
    async def recv(self, kind: Kinds = None, timeout: float | None = None, *, until: float | None = None) -> Message | None: ...

    async def recv(self, kind: Kinds = None, timeout: float | None = None, *, until: float | None = None) -> Message | None:
        """The next delivered message of `kind` (a name, a tuple of names, or None for any).

        Waits at most `timeout` virtual seconds, or until virtual time `until`;
        returns None when that passes with nothing received.
        """
        msg = self.inbox.take(kind)
        if msg is not None:
            return msg
        if until is not None:
            timeout = until - self.now if timeout is None else min(timeout, until - self.now)
        if timeout is not None and timeout <= 0:
            return None
        inbox = self.inbox
        fut = inbox.waiter(kind)
        self.waiting_for = f"recv(kind={kind!r})"
        handle = None
        if timeout is not None:
            handle = inbox.expire_after(fut, timeout)
        try:
            return await fut
        finally:
            self.waiting_for = None
            if handle is not None:
                handle.cancel()
            if not fut.done() or fut.cancelled():  # cancelled: stop waiting
                inbox.discard(fut)

    async def collect(self, kind: Kinds, handle: Callable[[Message], object], done: Callable[[], bool],
                      ends: Callable[[Message], bool], *, until: float | None = None) -> None:
        """Exactly `while not done() and (msg := await self.recv(kind, until=until)) is not None:
        handle(msg)`, without a task wake-up per message.

        `ends(msg)` must say, before `handle(msg)` runs and without side effects, whether
        `done()` will hold after it.  A message that does not end the collection is
        handled where the woken task step would have run (by one loop callback, or at
        once when that is the loop's very next step: `run_now`), and the
        deadline timer is renewed there as `recv` renews it; the one that ends it (or
        arrives when `until` has passed) wakes the actor with it.  So the loop runs the
        same steps and timers in the same order as the `recv` loop: the same records.
        """
        inbox = self.inbox
        while not done():  # what was delivered before: `recv` takes it without waiting
            msg = inbox.take(kind)
            if msg is None:
                break
            handle(msg)
        if done():
            return
        loop = running_loop()
        timer: list[asyncio.Handle | None] = [None]

        def arm() -> bool:
            """Set the deadline as `recv` sets its own; False when it has passed already."""
            if until is None:
                return True
            timeout = until - loop.time()
            if timeout <= 0:
                return False
            timer[0] = inbox.expire_after(fut, timeout)
            return True

        def step(msg: Message) -> None:  # where the task woken by `msg` would have run
            if fut.done():
                return
            if timer[0] is not None:
                timer[0].cancel()
                timer[0] = None
            try:
                handle(msg)
            except Exception as exc:  # noqa: BLE001 - raised in the collecting actor
                inbox.discard(fut)
                fut.set_exception(exc)
                return
            if done() or not arm():
                inbox.discard(fut)
                fut.set_result(None)

        def offer(msg: Message) -> bool:
            if ends(msg) or (until is not None and until - loop.time() <= 0):
                inbox.discard(fut)
                fut.set_result(msg)  # the actor handles it, as `recv` would return it
            else:
                woke = loop.run_now(step, msg)  # now, if that is exactly where it would run scheduled
                if woke is not None:
                    return woke
                loop.call_soon(step, msg)
            return True

        fut = inbox.waiter(kind, offer)
        if not arm():
            inbox.discard(fut)
            return
        self.waiting_for = f"recv(kind={kind!r})"
        try:
            last = await fut
        finally:
            self.waiting_for = None
            if timer[0] is not None:
                timer[0].cancel()
            if not fut.done() or fut.cancelled():
                inbox.discard(fut)
        if last is not None:
            handle(last)

    # -------------------------------------------------------------- time

    async def compute(self, work: float) -> float:
        """Spend the virtual time `work` needs on this node (work / speed, the straggler
        model, times the node's random slowdown if any); returns the duration."""
        index = self._computes.next(self.round)
        duration = self.world.network.compute_time(self.name, work, self.round, index)
        self.world.log(t=self.now, event="compute", actor=self.name, round=self.round, work=work, duration=duration)
        await self.sleep(duration)
        return duration

    async def sleep(self, seconds: float) -> None:
        self.waiting_for = f"sleep({seconds:g})"
        try:
            await asyncio.sleep(seconds)
        finally:
            self.waiting_for = None

    def participates(self, round: int | None = None) -> bool:
        """This node's participation draw for `round` (keyed, so identical across algorithms)."""
        return self.world.network.participates(self.name, self.round if round is None else round)

    def work_fraction(self, round: int | None = None) -> float:
        """The fraction of its local work this node completes in `round` (the scenario's
        `[nodes] completeness`; keyed, so identical across algorithms; 1 = all of it)."""
        return self.world.network.work_fraction(self.name, self.round if round is None else round)

    def metric(self, name: str, value: float, round: int | None = None) -> None:
        """Record a metric in the message log (and the run's metrics)."""
        self.world.metric(self.name, name, value, self.round if round is None else round)

    # -------------------------------------------------------------- lifecycle

    async def run(self) -> None:
        raise NotImplementedError

    def on_crash(self) -> None:
        """Called when the node crashes (the running `run()` is cancelled)."""

    def on_recover(self) -> None:
        """Called when the node recovers, before `run()` starts again."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
