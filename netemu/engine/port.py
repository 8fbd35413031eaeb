"""The node port: the one interface through which a client or server acts.

`Engine` is what a World offers the nodes it hosts, node by node: the clock, the
node's neighbours, sending (`send`, `send_many`, `broadcast`), compute time, its own
keyed draws, participation and completeness draws, metrics, privacy spends, the delivered
messages it does not use (`unused`), and one control-plane call (`available`).  `NodePort`
is that interface bound to one node, with the node's inbox and the one waiting path
(`wait`): an `Actor` acts through its
`NodePort`, and a `Cohort` acts for its members through the same `Engine` calls in a
callback form (docs/actors.md).  Nothing else of the emulation — network state, other
nodes, the world — is reachable from the port: the simulated network is one
implementation of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any, Protocol

from netemu.engine import gather
from netemu.engine.inbox import Inbox, Kinds
from netemu.engine.net.links import RoundCounter
from netemu.engine.net.network import Message
from netemu.engine.unused import REASONS, UnusedTally
from netemu.wire.codec import encode_from

if TYPE_CHECKING:
    import numpy as np

    from netemu.engine.clock import VirtualEnvironment
    from netemu.engine.net.network import Network
    from netemu.engine.rng import KeyedDraws, Streams
    from netemu.engine.world import World

__all__ = ["Engine", "Hosted", "Inbox", "Kinds", "NodePort"]  # Inbox and Kinds: netemu.engine.inbox

class Hosted(Protocol):
    """What a `World` needs of anything it hosts (an `Actor`, a `Cohort`): its name, the
    network nodes it answers for, whether the run may end while it waits (`daemon`), and
    its life: attached to the engine once, then `run()` as one task; a crash of one of
    its nodes, a recovery, and what each of its nodes waits for when a run stops."""

    name: str
    daemon: bool
    world: World  # set by `World.add`: for building and observing, not for acting

    def host_nodes(self) -> Sequence[str]:
        """The network nodes it receives for and acts as (none: a process without a node)."""
        ...

    def host_attach(self, engine: Engine) -> None:
        """Called once by `World.add`: connect its nodes' deliveries."""
        ...

    async def run(self) -> None: ...

    def host_crash(self, node: str) -> bool:
        """Its node `node` crashed; returns whether its task stops (is cancelled) with it."""
        ...

    def host_recover(self, node: str) -> bool:
        """Its node `node` recovered; returns whether its task starts again."""
        ...

    def host_waits(self) -> dict[str, str | None]:
        """What each of its nodes (or, with none, itself) waits for; None: ask its task."""
        ...

    # Optional: `host_unread() -> list[tuple[str, Message]]`, the (node, message) pairs delivered and
    # never received when the run ends; the World marks each `unused` ("unread").  Actors and cohorts have it.


class Engine:
    """The node-level operations of one World, each naming the node that acts.

    Made by the World; hosts reach it through `Hosted.host_attach`.  Every random draw is keyed by
    the node (and round), so a node's draws do not depend on which host runs it."""

    __slots__ = ("_metric", "_privacy", "_ready", "env", "fail", "network", "record", "streams", "unused_tally")

    def __init__(self, env: VirtualEnvironment, network: Network, streams: Streams, record: Callable[..., None],
                 metric: Callable[[str, str, float, int, bool], None], privacy: Callable[[str, int, float], None],
                 fail: Callable[[str, BaseException], None]) -> None:
        self.env, self.network, self.streams, self.record = env, network, streams, record
        self._metric, self._privacy = metric, privacy
        #: stop the run: node (or host) `name` raised (a host calls it for an error in its callbacks)
        self.fail = fail
        self._ready: dict[str, Callable[[list[str], int], Sequence[bool]]] = {}  # nodes whose host answers check-ins
        self.unused_tally = UnusedTally()  # the delivered messages the nodes did not use (`unused`)

    @property
    def now(self) -> float:
        return self.env.now

    # ------------------------------------------------------------ hosting

    def up(self, node: str) -> bool:
        """Whether `node` is up (a host asks before starting a member; see `available`)."""
        return self.network.nodes[node].up

    def connect(self, node: str, receiver: Callable[[Message], bool | None],
                batch: Callable[[list[Message]], bool | None] | None = None) -> None:
        """Deliver `node`'s messages to `receiver`; a group of one arrival batch's messages for
        the nodes sharing `batch` is offered to it in one call (`Network.connect`)."""
        self.network.connect(node, receiver, batch)

    def answers_check_in(self, nodes: Iterable[str], ready: Callable[[list[str], int], Sequence[bool]]) -> None:
        """The host of `nodes` says which of them have work for a round: `ready(names, round)`,
        one bool per name, asked by `available(nodes, round)` before their participation draws
        (a client with no new data does not check in).  Without it a node is always ready."""
        for node in nodes:
            self._ready[node] = ready

    # ------------------------------------------------------------ acting

    def neighbours(self, node: str) -> list[str]:
        return self.network.neighbours(node)

    def send(self, node: str, dst: str, kind: str, payload: Any, round: int) -> int:
        return self.network.send(node, dst, kind, round, encode_from(node, kind, payload, dst))

    def broadcast(self, node: str, kind: str, payload: Any, dsts: Iterable[str] | None, round: int) -> list[int]:
        dsts = self.network.neighbours(node) if dsts is None else list(dsts)
        return self.network.send_many(node, dsts, kind, round, encode_from(node, kind, payload))

    def send_many(self, node: str, dsts: Sequence[str], kind: str, payloads: Sequence[Any], round: int) -> list[int]:
        dsts = list(dsts)
        payloads = list(payloads)
        if len(dsts) != len(payloads):
            raise ValueError(f"{node}: send_many needs one payload per destination, got {len(dsts)} destinations "
                             f"and {len(payloads)} payloads")
        data = [encode_from(node, kind, payload, dst) for dst, payload in zip(dsts, payloads, strict=True)]
        return self.network.send_many(node, dsts, kind, round, data)

    def send_from(self, nodes: Sequence[str], dst: str, kind: str, payloads: Sequence[Any], rounds: Sequence[int]) -> list[int]:
        """One message from each of `nodes` to `dst`, in one call (`send` from each in turn)."""
        if not len(nodes) == len(payloads) == len(rounds):
            raise ValueError(f"send_from to {dst}: one payload and round per sender is needed, got {len(nodes)} senders, "
                             f"{len(payloads)} payloads and {len(rounds)} rounds")
        data = [encode_from(node, kind, payload, dst) for node, payload in zip(nodes, payloads, strict=True)]
        return self.network.send_from(nodes, dst, kind, rounds, data)

    def compute(self, node: str, work: float, round: int, index: int) -> float:
        """The virtual seconds `work` takes on `node` (its `index`-th compute of `round`),
        recorded as a `compute` record; the caller then sleeps that long."""
        duration = self.network.compute_time(node, work, round, index)
        self.record(t=self.env.now, event="compute", actor=node, round=round, work=work, duration=duration)
        return duration

    def participates(self, node: str, round: int) -> bool:
        return self.network.participates(node, round)

    def work_fraction(self, node: str, round: int) -> float:
        return self.network.work_fraction(node, round)

    def metric(self, node: str, name: str, value: float, round: int, done: bool = True) -> None:
        """A learning metric of `node` for `round` (`done`: the round counts as done, see `World.metric`)."""
        self._metric(node, name, value, round, done)

    def note(self, node: str, event: str, fields: dict[str, Any]) -> None:
        """A record `event` that `node` writes in the message log, with `fields` after `t` and
        `event` (they say what it is about: e.g. the Flower bridge's record tying a netemu
        message to its Flower message names both ends); `t` and `event` are not fields."""
        self.record(t=self.env.now, event=event, **fields)

    def unused(self, node: str, msg: Message, reason: str, late: float | None = None) -> None:
        """`node` does not use the delivered `msg`, for `reason` (netemu.engine.unused.REASONS):
        one `unused` record (`late`: virtual seconds after its round closed, when known), counted."""
        if reason not in REASONS:
            raise ValueError(f"{node}: unused message {msg.id}: reason {reason!r}; accepted: {', '.join(REASONS)}")
        now = self.env.now
        self.unused_tally.add(msg.round, msg.src, reason, now)
        extra = {} if late is None else {"late": late}
        self.record(t=now, event="unused", id=msg.id, src=msg.src, dst=node, kind=msg.kind, round=msg.round, reason=reason, **extra)

    def rng(self, node: str, purpose: str) -> np.random.Generator:
        """A Generator private to `node` and `purpose`."""
        return self.streams.generator(f"actor/{node}/{purpose}")

    def stream(self, name: str) -> np.random.Generator:
        """The run's named stream `name` (e.g. a client's `sgd/<client>/<round>`)."""
        return self.streams.generator(name)

    def keyed(self, name: str) -> KeyedDraws:
        """Keyed draws of the run's stream `name`: the same in every algorithm of a run."""
        return self.streams.keyed(name)

    def spend(self, node: str, round: int, rho: float) -> None:
        """Record a release of `node` costing `rho` zCDP in the run's privacy ledger."""
        self._privacy(node, round, rho)

    # ------------------------------------------------------------ control plane

    def available(self, nodes: Iterable[str], round: int | None = None) -> list[str]:
        """The control plane: which of `nodes` are there for work.  With `round` None,
        those that are up (node liveness, as a Flower SuperLink knows its SuperNodes);
        with a round, those that check in for it: ready, as its host says
        (`answers_check_in`: e.g. a client with new data), and drawn to take part (its own
        keyed participation draw, what its `participates(round)` answers) — the check-in
        of an FL system's control plane, not emulated as traffic.  The one way a node learns of others
        without a message."""
        names = list(nodes)
        if round is None:
            network_nodes = self.network.nodes
            return [n for n in names if network_nodes[n].up]
        if self._ready:
            names = self._with_work(names, round)
        return [n for n, yes in zip(names, self.network.participations(names, round), strict=True) if yes]

    def _with_work(self, names: list[str], round: int) -> list[str]:
        """The names whose hosts say they are ready for `round` (`answers_check_in`), in order:
        each host asked once, for all of its names."""
        fns = list(map(self._ready.get, names))
        if fns and fns.count(fns[0]) == len(fns):  # one host for all (a cohort's clients), or none
            return names if fns[0] is None else list(compress(names, fns[0](names, round)))
        hosts: dict[Callable[[list[str], int], Sequence[bool]], list[str]] = {}
        for n, fn in zip(names, fns, strict=True):
            if fn is not None:
                hosts.setdefault(fn, []).append(n)
        kept = set(names)
        for fn, own in hosts.items():
            kept.difference_update(n for n, yes in zip(own, fn(own, round), strict=True) if not yes)
        return [n for n in names if n in kept]


class NodePort:
    """The engine's interface bound to one node: what an `Actor` acts through.

    `round` is the default round of its sends, draws and metrics.  Waiting has one path,
    `wait`; `compute` and `sleep` pass virtual time.  Made unattached (an actor is built
    before it is added to a World); `World.add` attaches it to the engine."""

    __slots__ = ("_computes", "closed", "engine", "inbox", "name", "round", "waiting_for")

    def __init__(self, name: str, inbox: Inbox | None = None) -> None:
        self.name = name
        self.round = 0
        self.inbox = Inbox() if inbox is None else inbox
        self.waiting_for: str | None = None  # what it waits for, for deadlock and stop reports
        self._computes = RoundCounter()  # per round, computes so far: keys compute-time draws
        self.closed: dict[int, float] = {}  # round -> when this node stopped gathering for it (`coordination.gather`)
        self.engine: Engine

    @property
    def now(self) -> float:
        return self.engine.env.now

    @property
    def neighbours(self) -> list[str]:
        return self.engine.neighbours(self.name)

    # ------------------------------------------------------------ messaging

    def send(self, dst: str, kind: str, payload: Any = None, *, round: int | None = None) -> int:
        return self.engine.send(self.name, dst, kind, payload, self.round if round is None else round)

    def broadcast(self, kind: str, payload: Any = None, dsts: Iterable[str] | None = None, *, round: int | None = None) -> list[int]:
        return self.engine.broadcast(self.name, kind, payload, dsts, self.round if round is None else round)

    def send_many(self, dsts: Sequence[str], kind: str, payloads: Sequence[Any], *, round: int | None = None) -> list[int]:
        return self.engine.send_many(self.name, dsts, kind, payloads, self.round if round is None else round)

    def wait(self, kind: Kinds = None, *, until: float | None = None, timeout: float | None = None,
             take: Callable[[Message], object] | None = None, done: Callable[[], bool] | None = None,
             ends: Callable[[Message], bool] | None = None) -> Awaitable[Message | None]:
        """The one waiting path (an awaitable).

        Without `take`: the next message of `kind` (a name, a tuple of names, or None for
        any), or None when `timeout` virtual seconds or the time `until` pass first.

        With `take`: every message of `kind` is handed to `take(msg)` as it comes, until
        `done()` holds or `until` passes (then None), as
        `while not done() and (msg := await wait(kind, until=until)) is not None: take(msg)`
        would, with one deadline timer for the whole wait where that loop sets one per call
        (netemu.engine.gather).  `ends(msg)`, when given, must say without side effects whether `done()`
        will hold after `take(msg)`: then a message that does not end the wait is taken
        where the woken task would have run, without waking it (the same steps, timers and
        records, one wake-up per wait instead of one per message)."""
        if take is None:
            return self._next(kind, until, timeout)
        if ends is None:  # the end cannot be foreseen: wake for every message
            return gather.each(self, kind, take, done or _never, until)
        return gather.collect(self, kind, take, done or _never, ends, until)

    async def _next(self, kind: Kinds, until: float | None, timeout: float | None) -> Message | None:
        msg = self.inbox.take(kind)
        if msg is not None:
            return msg
        now = self.engine.env.now
        left: float | None
        when: float | None
        if until is not None and (timeout is None or until - now <= timeout):
            left, when = until - now, until  # a deadline is a timer at `until` exactly
        elif timeout is not None:
            left, when = timeout, now + timeout
        else:
            left = when = None
        if left is not None and left <= 0:
            return None
        inbox = self.inbox
        fut = inbox.waiter(kind)
        self.waiting_for = f"recv(kind={kind!r})"
        handle = None
        if when is not None:
            handle = inbox.expire_at(fut, when)
        try:
            return await fut
        finally:
            self.waiting_for = None
            if handle is not None:
                handle.cancel()
            if not fut.done() or fut.cancelled():  # cancelled: stop waiting
                inbox.discard(fut)

    # ------------------------------------------------------------ time

    async def compute(self, work: float, *, round: int | None = None) -> float:
        """Spend the virtual time `work` needs on this node; returns the duration."""
        r = self.round if round is None else round
        duration = self.engine.compute(self.name, work, r, self._computes.next(r))
        self.waiting_for = f"sleep({duration:g})"
        try:
            await asyncio.sleep(duration)
        finally:
            self.waiting_for = None
        return duration

    async def sleep(self, seconds: float) -> None:
        self.waiting_for = f"sleep({seconds:g})"
        try:
            await asyncio.sleep(seconds)
        finally:
            self.waiting_for = None

    # ------------------------------------------------------------ draws, metrics, control plane

    def participates(self, round: int | None = None) -> bool:
        return self.engine.participates(self.name, self.round if round is None else round)

    def work_fraction(self, round: int | None = None) -> float:
        return self.engine.work_fraction(self.name, self.round if round is None else round)

    def metric(self, name: str, value: float, round: int | None = None, *, done: bool = True) -> None:
        self.engine.metric(self.name, name, value, self.round if round is None else round, done)

    def unused(self, msg: Message, reason: str, *, late: float | None = None) -> None:
        """This node does not use the delivered `msg`: `reason` is "late", "stale", "duplicate",
        "discarded" or "unread" (netemu.engine.unused); `late`: virtual seconds after its round
        closed.  One `unused` record in the message log, counted in metrics.csv and summary.json."""
        self.engine.unused(self.name, msg, reason, late)

    def late_by(self, msg: Message) -> float | None:
        """Virtual seconds since this node stopped gathering `msg`'s round (None: it has not)."""
        closed = self.closed.get(msg.round)
        return None if closed is None else self.engine.env.now - closed

    def note(self, event: str, **fields: Any) -> None:
        """A record `event` of this node's own in the message log (fields after `t`, `event`)."""
        self.engine.note(self.name, event, fields)

    def rng(self, purpose: str) -> np.random.Generator:
        return self.engine.rng(self.name, purpose)

    def stream(self, name: str) -> np.random.Generator:
        return self.engine.stream(name)

    def keyed(self, name: str) -> KeyedDraws:
        return self.engine.keyed(name)

    def spend(self, round: int, rho: float) -> None:
        self.engine.spend(self.name, round, rho)

    def available(self, nodes: Iterable[str], round: int | None = None) -> list[str]:
        return self.engine.available(nodes, round)


def _never() -> bool:
    return False
