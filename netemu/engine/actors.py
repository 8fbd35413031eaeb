"""The Actor base class: an FL client or server as a plain `async def run()`.

An actor acts only through its node port (`netemu.engine.port.NodePort`: send, wait, compute,
sleep, its own draws, metrics) and never touches SimPy or the network directly:

    class Client(Actor):
        daemon = True                       # the run may end while it still waits
        async def run(self):
            while True:
                msg = await self.recv("model")
                await self.compute(work=50)  # virtual seconds = work / node speed
                self.send(msg.src, "update", {"w": msg.payload["w"] + 1}, round=msg.round)

`send` is non-blocking (the network decides the fate); `recv` waits in virtual time.

`netemu.engine.cohort.Cohort` is one process standing for many clients that run the same
logic, written as callbacks on the same port instead of a coroutine per client
(docs/actors.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, overload

from netemu.engine.net.network import Message
from netemu.engine.port import Engine, Inbox, Kinds, NodePort

if TYPE_CHECKING:
    import numpy as np

    from netemu.engine.world import World

__all__ = ["Actor", "Inbox"]


class Actor:
    """Base class of every emulated client and server.

    Subclasses implement `async def run(self)`.  Set `daemon = True` for actors that
    serve forever (e.g. clients waiting for the next model): the run ends when every
    non-daemon actor has returned, and daemons are then cancelled.  Set
    `networked = False` for a process that computes but owns no network node.

    Every method below delegates to the actor's `port` (a `NodePort` of its node), so
    the same logic runs on any transport that implements the port.
    """

    daemon: bool = False
    networked: bool = True  # False: a process with no node (e.g. a vectorized client pool); no send/recv
    #: the World the actor was added to (set by `World.add`, before `run()` starts), for
    #: building and observing; an actor acts through `port`
    world: World

    def __init__(self, name: str) -> None:
        self.name = name
        self.port = NodePort(name)
        self.inbox = self.port.inbox
        self.incarnation = 0  # how many times the actor has recovered from a crash

    # -------------------------------------------------------------- hosting (netemu.engine.port.Hosted)

    def host_nodes(self) -> Sequence[str]:
        return (self.name,) if self.networked else ()

    def host_attach(self, engine: Engine) -> None:
        """Act through `engine` (called by `World.add`, which also sets `world`)."""
        self.port.engine = engine
        if self.networked:
            engine.connect(self.name, self.inbox.put)

    def host_crash(self, node: str) -> bool:
        self.on_crash()
        for msg in self.inbox:  # delivered, never to be received
            self.port.unused(msg, "unread")
        self.inbox.clear()
        return True

    def host_recover(self, node: str) -> bool:
        self.incarnation += 1
        self.on_recover()
        return True

    def host_waits(self) -> dict[str, str | None]:
        return {self.name: self.port.waiting_for}

    def host_unread(self) -> list[tuple[str, Message]]:
        """The messages delivered and not received (in its inbox), when the run ends."""
        return [(self.name, msg) for msg in self.inbox]

    # -------------------------------------------------------------- context

    @property
    def round(self) -> int:
        """The default round of sends, draws and metrics."""
        return self.port.round

    @round.setter
    def round(self, value: int) -> None:
        self.port.round = value

    @property
    def waiting_for(self) -> str | None:
        return self.port.waiting_for

    @property
    def now(self) -> float:
        return self.port.engine.env.now

    @property
    def node(self):
        """The node this actor runs on (attributes, speed, participation, up)."""
        return self.world.network.nodes[self.name]

    @property
    def neighbours(self) -> list[str]:
        return self.port.neighbours

    def rng(self, purpose: str) -> np.random.Generator:
        """A numpy Generator private to this actor and purpose (seeded from the run's root seed)."""
        return self.port.rng(purpose)

    # -------------------------------------------------------------- messaging

    def send(self, dst: str, kind: str, payload: Any = None, *, round: int | None = None) -> int:
        """Encode `payload` and hand it to the network; returns the message id at once."""
        return self.port.send(dst, kind, payload, round=round)

    def broadcast(self, kind: str, payload: Any = None, dsts: Iterable[str] | None = None, *, round: int | None = None) -> list[int]:
        """Send one payload (encoded once) to `dsts` (default: every neighbour), in one batch."""
        return self.port.broadcast(kind, payload, dsts, round=round)

    def send_many(self, dsts: Sequence[str], kind: str, payloads: Sequence[Any], *, round: int | None = None) -> list[int]:
        """Send `payloads[i]` to `dsts[i]` for every i in one call (e.g. replies, or a
        different partial model per client); returns the message ids, in order.

        Each message is exactly what `send(dsts[i], kind, payloads[i], round=round)`
        would send, in the same order — its own id, fate, log records and bytes — with
        the per-call work of the network done once.  Every payload is encoded first: one
        that cannot be encoded raises before any message of the call is sent.
        """
        return self.port.send_many(dsts, kind, payloads, round=round)

    @overload
    def recv(self, kind: Kinds = None, timeout: None = None, *, until: None = None) -> Awaitable[Message]: ...

    @overload
    def recv(self, kind: Kinds = None, timeout: float | None = None, *, until: float | None = None) -> Awaitable[Message | None]: ...

    def recv(self, kind: Kinds = None, timeout: float | None = None, *, until: float | None = None) -> Awaitable[Message | None]:
        """(Awaited) the next delivered message of `kind` (a name, a tuple of names, or None for any).

        Waits at most `timeout` virtual seconds, or until virtual time `until`;
        returns None when that passes with nothing received.
        """
        return self.port.wait(kind, until=until, timeout=timeout)

    async def collect(self, kind: Kinds, handle: Callable[[Message], object], done: Callable[[], bool],
                      ends: Callable[[Message], bool] | None, *, until: float | None = None) -> None:
        """As `while not done() and (msg := await self.recv(kind, until=until)) is not None:
        handle(msg)`, with one deadline timer at `until` for the whole gather (netemu.engine.gather);
        with `ends` (whether `done()` will hold after `handle(msg)`, said without side effects)
        without a task wake-up per message (`NodePort.wait`)."""
        await self.port.wait(kind, until=until, take=handle, done=done, ends=ends)

    # -------------------------------------------------------------- time

    def compute(self, work: float) -> Awaitable[float]:
        """(Awaited) spend the virtual time `work` needs on this node (work / speed, the
        straggler model, times the node's random slowdown if any); returns the duration."""
        return self.port.compute(work)

    def sleep(self, seconds: float) -> Awaitable[None]:
        """(Awaited) pass `seconds` of virtual time."""
        return self.port.sleep(seconds)

    def participates(self, round: int | None = None) -> bool:
        """This node's participation draw for `round` (keyed, so identical across algorithms)."""
        return self.port.participates(round)

    def work_fraction(self, round: int | None = None) -> float:
        """The fraction of its local work this node completes in `round` (the scenario's
        `[nodes] completeness`; keyed, so identical across algorithms; 1 = all of it)."""
        return self.port.work_fraction(round)

    def metric(self, name: str, value: float, round: int | None = None, *, done: bool = True) -> None:
        """Record a metric in the message log (and the run's metrics); `done=False`: a metric
        of before the rounds, which does not count `round` as done."""
        self.port.metric(name, value, round, done=done)

    def unused(self, msg: Message, reason: str, *, late: float | None = None) -> None:
        """This actor does not use the delivered `msg`, for `reason` (`NodePort.unused`)."""
        self.port.unused(msg, reason, late=late)

    # -------------------------------------------------------------- lifecycle

    async def run(self) -> None:
        raise NotImplementedError

    def on_crash(self) -> None:
        """Called when the node crashes (the running `run()` is cancelled)."""

    def on_recover(self) -> None:
        """Called when the node recovers, before `run()` starts again."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
