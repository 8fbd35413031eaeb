"""Cohorts: one process standing for many clients that run the same logic.

Each member keeps its own node, links, draws, fates, ids and log lines, so a run with a
cohort writes the same message log and trace as the same clients written as one `Actor`
each (netemu.engine.actors) — with no task, future or inbox per client (issue 15: memory and
speed at 10⁵–10⁶ clients).  See `Cohort` and docs/actors.md.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from netemu.engine.clock import VirtualTimeLoop, running_loop
from netemu.engine.net.links import RoundCounter
from netemu.engine.net.network import Message
from netemu.engine.inbox import Kinds, _matches
from netemu.engine.port import Engine, NodePort
from netemu.engine.timers import Column, Wake

if TYPE_CHECKING:
    import numpy as np

    from netemu.engine.solo import Solo
    from netemu.engine.world import World

__all__ = ["Cohort", "Member"]


def _noop(*_: object) -> None:
    """A step that does nothing: a loop step where an actor's task step would run and do
    nothing visible, or a member's step that only handles what waits in its queue."""


class Member:
    """One client of a `Cohort`: its own node name, round, compute counter and queue of
    messages received while it was busy (what its inbox would hold)."""

    __slots__ = ("_computes", "_port", "busy", "gen", "handle", "incarnation", "index", "name", "queue", "round", "waiting")

    def __init__(self, name: str, index: int) -> None:
        self.name, self.index = name, index
        self.round = 0
        self.incarnation = 0  # how many times it has recovered from a crash
        self.gen = 0  # bumped by every crash: work scheduled before it is dropped
        self.busy = False  # handling a message: what arrives now is queued
        self.handle: asyncio.Handle | Wake | None = None  # its pending step, or compute or sleep
        self.waiting: str | None = None  # what it waits for while busy, for deadlock reports
        self.queue: deque[Message] | None = None  # created on first use: most members never queue
        self._computes: RoundCounter | None = None
        self._port: NodePort | None = None  # made on first use of Cohort.port

    def __repr__(self) -> str:
        return f"<Member {self.name}>"


class Cohort:
    """One process that stands for many clients running the same logic.

    Each member keeps its own network node, links, participation and compute-time draws,
    message fates, ids and log lines: a run with a cohort writes the same message log and
    trace as the same clients written as one `Actor` each, with no task, future or inbox
    per client.  A member's logic is the body of an actor's `while True: msg = await
    self.recv(self.receives); ...` loop, written as callbacks:

        class Clients(Cohort):
            receives = "model"
            def on_message(self, m, msg):        # m: the Member the message is for
                m.round = msg.round
                if self.participates(m):
                    self.compute(m, 50, self.reply, msg)   # compute, then call reply(m, msg)
            def reply(self, m, msg):
                self.send(m, msg.src, "update", msg.payload + 1)

    A member handles one message at a time: from `on_message` until it returns without
    scheduling work (`compute` / `sleep`), or until the callback of that work returns
    without scheduling more, it is busy, and what arrives meanwhile waits in its queue
    (as in an actor's inbox) to be handled next, at once.  Messages of other kinds than
    `receives` stay queued.  Every step runs exactly where the per-client actor's task
    step would have run (a compute's end is where its timer would be — the members' timers
    wait in one `Column` of the loop, netemu.engine.timers; a wake-up runs at once when that is
    the loop's very next step, `VirtualTimeLoop.run_now`, else as one loop callback), so
    both interleave with the rest of the run identically.

    A member that acts before it first receives (a client that speaks first) does so in
    `on_member_start(m)`, at the start of the run.  A member's crash drops its pending
    work and queue (`on_member_crash(m)` is called); its recovery starts it afresh
    (`on_member_recover(m)`, then `on_member_start(m)`), waiting for `receives`.  An
    exception in a callback stops the run with `ActorFailed` naming the member.
    A cohort is a daemon: the run ends when the other actors are done.
    """

    daemon = True
    receives: Kinds = None  # the kinds a member's loop receives (None: any)
    _solo: Solo | None = None  # the actor running this logic for its one member, if any
    #: the World the cohort was added to (set by `World.add`), for building and observing;
    #: members act through `engine`
    world: World
    engine: Engine

    def __init__(self, name: str, members: Sequence[str]) -> None:
        self.name = name
        self._loop: VirtualTimeLoop | None = None  # the run's loop, once `run` started
        self._wakes: Column | None = None  # the members' pending computes and sleeps
        self.members = [Member(m, i) for i, m in enumerate(members)]
        self.member = {m.name: m for m in self.members}
        if len(self.member) != len(self.members):
            raise ValueError(f"cohort {name!r}: a client is listed twice")

    async def run(self) -> None:
        """Nothing to do as a process: members act on deliveries and timers, after their
        first step (`on_member_start`, for the members whose node is up)."""
        self._loop = running_loop()
        if self._starts():
            up = self.engine.up
            for m in self.members:
                if up(m.name):
                    self._step(m, m.gen, self.on_member_start, ())
        await self._loop.create_future()

    # ------------------------------------------------------------ for subclasses

    def on_message(self, m: Member, msg: Message) -> None:
        """Handle `msg` for member `m` (what the actor's loop does after `recv`); by default
        `on_messages([m], [msg])`, for a cohort that handles messages in arrays."""
        if not self._batches():
            raise NotImplementedError(f"{type(self).__name__} defines neither on_message nor on_messages")
        self.on_messages([m], [msg])

    def on_messages(self, ms: list[Member], msgs: list[Message]) -> None:
        """Handle `msgs[i]` for member `ms[i]`: a group of one arrival batch (consecutive messages
        of one `send_many` or `send_from` due now, one per member), delivered together when
        nothing else waits to run at this instant.  Override it to compute the members' steps
        as arrays and answer with `send_from`.  The group's deliver records come first, then
        what this does (docs/formats.md); each member is busy from here until its own work is
        done, as with `on_message`, which the default calls for each in turn."""
        for m, msg in zip(ms, msgs, strict=True):
            self.on_message(m, msg)

    def has_work(self, ms: list[Member], round: int) -> Sequence[bool]:
        """Whether each member of `ms` has work for `round` — the readiness a client reports
        when it checks in (`NodePort.available(nodes, round)` asks it before the members'
        participation draws).  Override it where a client without work (e.g. no new data)
        stays away; by default every member is ready."""
        return [True] * len(ms)

    def _check_in(self, names: list[str], round: int) -> Sequence[bool]:
        member = self.member
        return self.has_work([member[n] for n in names], round)

    def _answers_check_in(self, engine: Engine) -> None:
        if type(self).has_work is not Cohort.has_work:
            engine.answers_check_in([m.name for m in self.members], self._check_in)

    def _batches(self) -> bool:
        """Whether the members' messages are handled in arrays (`on_messages` is overridden)."""
        return type(self).on_messages is not Cohort.on_messages

    def on_member_start(self, m: Member) -> None:
        """Member `m`'s first step, before it waits for `receives` (what an actor's `run`
        does before its loop, e.g. a client that speaks first): at the start of the run,
        where the actors' tasks would take their first steps, and after a recovery."""

    def _starts(self) -> bool:
        """Whether members have a first step (`on_member_start` is overridden)."""
        return type(self).on_member_start is not Cohort.on_member_start

    def on_member_crash(self, m: Member) -> None:
        """Member `m`'s node crashed (its pending work and queue are dropped)."""

    def on_member_recover(self, m: Member) -> None:
        """Member `m`'s node recovered; it waits for `receives` again."""

    # ------------------------------------------------------------ the port, member by member

    @property
    def now(self) -> float:
        return self.engine.env.now

    def neighbours(self, m: Member) -> list[str]:
        return self.engine.neighbours(m.name)

    def send(self, m: Member, dst: str, kind: str, payload: Any = None, *, round: int | None = None) -> int:
        """`NodePort.send` from member `m` (default round: its own)."""
        return self.engine.send(m.name, dst, kind, payload, m.round if round is None else round)

    def broadcast(self, m: Member, kind: str, payload: Any = None, dsts: Iterable[str] | None = None, *,
                  round: int | None = None) -> list[int]:
        return self.engine.broadcast(m.name, kind, payload, dsts, m.round if round is None else round)

    def send_many(self, m: Member, dsts: Sequence[str], kind: str, payloads: Sequence[Any], *,
                  round: int | None = None) -> list[int]:
        return self.engine.send_many(m.name, dsts, kind, payloads, m.round if round is None else round)

    def send_from(self, ms: Sequence[Member], dst: str, kind: str, payloads: Sequence[Any]) -> list[int]:
        """`send(m, dst, kind, payloads[i])` from each member `ms[i]` in its own round, in one
        call: the same ids, envelopes, fates and records as those sends in turn."""
        return self.engine.send_from([m.name for m in ms], dst, kind, payloads, [m.round for m in ms])

    def participates(self, m: Member, round: int | None = None) -> bool:
        """Member `m`'s participation draw for `round` (default: its current round)."""
        return self.engine.participates(m.name, m.round if round is None else round)

    def work_fraction(self, m: Member, round: int | None = None) -> float:
        """Member `m`'s completeness draw for `round` (default: its current round)."""
        return self.engine.work_fraction(m.name, m.round if round is None else round)

    def metric(self, m: Member, name: str, value: float, round: int | None = None) -> None:
        self.engine.metric(m.name, name, value, m.round if round is None else round)

    def rng(self, m: Member, purpose: str) -> np.random.Generator:
        """The Generator `rng(purpose)` of the member's own actor would give."""
        return self.engine.rng(m.name, purpose)

    def port(self, m: Member) -> NodePort:
        """Member `m`'s port for the calls that take one (`netemu.coordination`), at its
        current round, sharing its count of computes (so compute draws never repeat);
        waiting is the cohort's (`receives`), not the port's."""
        port = m._port
        if port is None:  # made once per member
            port = m._port = NodePort(m.name)
            port.engine = self.engine
            if m._computes is None:
                m._computes = RoundCounter()
            port._computes = m._computes  # one count of the member's computes, whichever way it computes
        port.round = m.round
        return port

    def compute(self, m: Member, work: float, then: Callable[..., object], *args: Any) -> float:
        """Spend the virtual time `work` needs on `m`'s node, then call `then(m, *args)`;
        the same draw, `compute` record and timer as `await NodePort.compute(work)`."""
        if m._computes is None:
            m._computes = RoundCounter()
        duration = self.engine.compute(m.name, work, m.round, m._computes.next(m.round))
        self.sleep(m, duration, then, *args)
        return duration

    def sleep(self, m: Member, seconds: float, then: Callable[..., object], *args: Any) -> None:
        """Call `then(m, *args)` after `seconds` of virtual time (as `await asyncio.sleep`:
        one timer — here an entry of the cohort's column — then one loop step)."""
        if self._solo is not None:  # hosted as one actor: its task sleeps, then calls `then`
            self._solo.then = (seconds, then, args)
            return
        loop = self._loop or running_loop()
        m.waiting = f"sleep({seconds:g})"
        if seconds <= 0:
            m.handle = loop.call_soon(self._step, m, m.gen, then, args)
        elif loop._debug:  # asyncio's own iteration knows no columns: one timer each
            m.handle = loop.call_later(seconds, self._wake, m, m.gen, then, args)
        else:  # the members' timers, in one column: one entry of the loop's heap (netemu.engine.timers)
            wakes = self._wakes
            if wakes is None or wakes.loop is not loop:
                wakes = self._wakes = Column(loop)
            m.handle = wakes.call_at(loop.time() + seconds, self._wake, m, m.gen, then, args)
        m.busy = True

    # ------------------------------------------------------------ hosting (netemu.engine.port.Hosted)

    def host_nodes(self) -> Sequence[str]:
        return [m.name for m in self.members]

    def host_attach(self, engine: Engine) -> None:
        """Connect every member's node to this cohort (called by `World.add`): one bound
        method shared by all, not one each (~64 bytes a member)."""
        self.engine = engine
        receive, connect = self._receive, engine.connect
        many = self._receive_many if self._batches() else None  # one bound method: the network groups by it
        for m in self.members:
            connect(m.name, receive, many)
        self._answers_check_in(engine)

    def _receive(self, msg: Message) -> bool:
        """A delivery to a member: queued if it is busy (or of another kind), else its
        handling runs as the next loop step — as a waiting actor's task is woken (at once,
        when the loop would run nothing else before it)."""
        m = self.member[msg.dst]
        if m.busy or not _matches(self.receives, msg):
            if m.queue is None:
                m.queue = deque()
            m.queue.append(msg)
            return False
        m.busy = True
        m.waiting = None
        loop = self._loop or running_loop()
        woke = loop.run_now(self._step, m, m.gen, self.on_message, (msg,))
        if woke is None:
            m.handle = loop.call_soon(self._step, m, m.gen, self.on_message, (msg,))
            return True
        return woke

    def _receive_many(self, msgs: list[Message]) -> bool | None:
        """A group of one arrival batch's deliveries to distinct members, delivered together
        because nothing else waits to run at this instant (`Network._arrive`): the idle members
        waiting for their kind are handled in one step (`on_messages`), the others' messages queue."""
        member, receives = self.member, self.receives
        ms, taken = [], []
        for msg in msgs:
            m = member[msg.dst]
            if m.busy or not _matches(receives, msg):
                if m.queue is None:
                    m.queue = deque()
                m.queue.append(msg)
                continue
            m.busy = True
            m.waiting = None
            ms.append(m)
            taken.append(msg)
        if not ms:
            return False
        gens = [m.gen for m in ms]
        loop = self._loop or running_loop()
        woke = loop.run_now(self._step_many, ms, gens, taken)
        if woke is None:  # (not when the network delivers a group: nothing else waits)
            loop.call_soon(self._step_many, ms, gens, taken)
            return True
        return woke

    def _step_many(self, ms: list[Member], gens: list[int], msgs: list[Message]) -> None:
        if any(m.gen != gen for m, gen in zip(ms, gens, strict=True)):  # some crashed since: only the others
            kept = [(m, msg) for m, gen, msg in zip(ms, gens, msgs, strict=True) if m.gen == gen]
            ms, msgs = [m for m, _ in kept], [msg for _, msg in kept]
            if not ms:
                return
        for m in ms:
            m.busy = False
            m.handle = None
        try:
            self.on_messages(ms, msgs)
        except Exception as exc:  # noqa: BLE001 - any member error stops the run, naming the members
            for m in ms:
                m.busy = True
            names = ms[0].name if len(ms) == 1 else f"{ms[0].name} (handling {len(ms)} members' messages at once)"
            self.engine.fail(names, exc)
            return
        for m in ms:
            if not m.busy and m.queue:  # what arrived meanwhile is handled at once, as `recv` takes it
                self._step(m, m.gen, _noop, ())

    def _wake(self, m: Member, gen: int, then: Callable[..., object], args: tuple) -> None:
        """A member's timer fired: its work runs at the next loop step (as a sleeping
        task's wake-up is), at once when nothing else would run before it."""
        if gen == m.gen:
            loop = self._loop or running_loop()
            if loop.run_now(self._step, m, gen, then, args) is None:
                m.handle = loop.call_soon(self._step, m, gen, then, args)

    def _step(self, m: Member, gen: int, fn: Callable[..., object], args: tuple) -> None:
        if gen != m.gen:
            return  # the member crashed since
        m.busy = False
        m.handle = None
        m.waiting = None
        try:
            fn(m, *args)
            while not m.busy and m.queue:  # what arrived meanwhile is handled at once, as `recv` takes it
                msg = self._take(m)
                if msg is None:
                    break
                self.on_message(m, msg)
        except Exception as exc:  # noqa: BLE001 - any member error stops the run, naming the member
            m.busy = True  # a failed member acts no more
            self.engine.fail(m.name, exc)

    def _take(self, m: Member) -> Message | None:
        queue = m.queue
        assert queue is not None
        for i, msg in enumerate(queue):
            if _matches(self.receives, msg):
                del queue[i]
                return msg
        return None

    def host_crash(self, node: str) -> bool:
        """Member `node`'s node crashed: its pending work is cancelled (the timer one loop step
        later, as a cancelled task cancels its sleep) and its queue emptied.  The cohort
        goes on for the others."""
        m = self.member[node]
        self.on_member_crash(m)
        # one loop step, as the cancelled task's own: the clock stops stepping the network here too
        asyncio.get_running_loop().call_soon(_noop if m.handle is None else m.handle.cancel)
        m.handle = None
        m.busy = False
        m.waiting = None
        m.gen += 1  # work scheduled before the crash finds a newer generation and is dropped
        if m.queue:
            for msg in m.queue:  # delivered, never to be received (as an actor's inbox)
                self.engine.unused(m.name, msg, "unread")
            m.queue.clear()
        return False

    def host_recover(self, node: str) -> bool:
        """Member `node` starts afresh (the cohort's own task runs on)."""
        m = self.member[node]
        m.incarnation += 1
        self.on_member_recover(m)
        # where the restarted task's first step would run: the member's own first step, if it has one
        loop = asyncio.get_running_loop()
        if self._starts():
            loop.call_soon(self._step, m, m.gen, self.on_member_start, ())
        else:
            loop.call_soon(_noop)
        return False

    def host_waits(self) -> dict[str, str | None]:
        """What each member waits for (deadlock and stop reports)."""
        idle = f"recv(kind={self.receives!r})"
        return {m.name: (m.waiting or "running") if m.busy else idle for m in self.members}

    def host_unread(self) -> list[tuple[str, Message]]:
        """The members' messages delivered and not received (queued), when the run ends: member by member."""
        return [(m.name, msg) for m in self.members if m.queue for msg in m.queue]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
