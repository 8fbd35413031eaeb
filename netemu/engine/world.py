"""The World: one emulation — clock, random streams, network, log and actors — and its run.

    world = World(star(20), seed=1, links=..., log=MessageLog(file))
    world.add(Server("server")); world.add(Client("client-0")); ...
    result = world.run()

`run` ends when every non-daemon actor has returned (daemons are then cancelled), or
at virtual time `until`, or at the horizon `max_time` (a stop for runs whose actors
only wait on timers that lead nowhere); `RunResult.stopped_by` says which, and
`rounds_done` how many distinct rounds recorded a metric.  An exception in an actor
stops the run with `ActorFailed` (actor name, virtual time, traceback); if every
actor waits and nothing is scheduled
the run stops with `DeadlockError` naming what each actor waits for.  Either way
everything logged so far is flushed, messages delivered and never received are marked
``unused`` ("unread", netemu.engine.unused), and messages still travelling are logged as
``in_flight``.
"""

from __future__ import annotations

import asyncio
import gc
import math
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import networkx as nx

from netemu.engine.clock import Deadlock, VirtualEnvironment, VirtualTimeLoop
from netemu.errors import RunStopped
from netemu.log import MessageLog
from netemu.engine.net.links import Link
from netemu.engine.net.model import NetModel
from netemu.engine.net.network import Fates, Network, NodeBehaviour, draw_now
from netemu.engine.port import Engine, Hosted
from netemu.privacy import PrivacyLedger
from netemu.engine.rng import Streams

__all__ = ["ActorFailed", "DeadlockError", "EventFailed", "RunResult", "World", "fewer_collections"]

H = TypeVar("H", bound=Hosted)

_GC_THRESHOLDS = (1_000_000, 50, 100)  # during a run; CPython's defaults are (700, 10, 10)
_gc_lock = threading.Lock()
_gc_runs = 0  # runs in progress in this process (threads)
_gc_saved: tuple[int, int, int] = (700, 10, 10)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the garbage collector's thresholds while a run (or the build of a large
    World, netemu.scenario.build) is in progress, then restore them.

    An emulation allocates millions of short-lived objects (events, envelopes, records) and
    no reference cycles per message; with CPython's default thresholds the collector
    traverses every object in flight over and over — a third of the CPU time of a
    100,000-client round (tools/bench_scale.py; issue 15).  Cycles are still collected,
    less often: a young collection every million allocations.  (With 100,000 clients × 5
    rounds, collections took 5.3 s of a 66 s run with one every 100,000, and 0.9 s with one
    every million, at the same peak memory; a million-client round peaks at 7.3 GiB.)
    Building a 100,000-client world allocates a few million long-lived objects (graph,
    links, nodes, data): with the default thresholds a third of its time went to
    collections that find nothing.  Concurrent runs in threads share one raise; the last to
    end restores."""
    global _gc_runs, _gc_saved
    with _gc_lock:
        if _gc_runs == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(*(max(a, b) for a, b in zip(_gc_saved, _GC_THRESHOLDS)))
        _gc_runs += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_runs -= 1
            if _gc_runs == 0:
                gc.set_threshold(*_gc_saved)


class ActorFailed(RunStopped):
    """An actor raised: the run stopped.  `actor`, `time` and `details` (the traceback);
    the message is one line: the error and where it was raised (file:line, function)."""

    def __init__(self, actor: str, time: float, details: str, where: str = "") -> None:
        error = details.strip().splitlines()[-1] if details.strip() else "an error"
        super().__init__(f"actor {actor!r} failed at virtual time {time:g}: {error}{f' ({where})' if where else ''}")
        self.actor, self.time, self.details = actor, time, details


class EventFailed(RunStopped):
    """A function scheduled with `World.at` (a scenario script's event, typically) raised: the run
    stopped.  `function` (its name), `time` and `details` (the traceback); the message is one line:
    the function, where it raised (its file:line, e.g. the script's), the virtual time and the error."""

    def __init__(self, function: str, time: float, details: str, where: str = "") -> None:
        error = details.strip().splitlines()[-1] if details.strip() else "an error"
        super().__init__(f"the scheduled event {function}{f' ({where})' if where else ''} failed at virtual time {time:g}: {error}")
        self.function, self.time, self.details = function, time, details


class DeadlockError(Deadlock, RunStopped):
    """Every actor waits and nothing is scheduled.  `waits` maps actor -> what it waits for."""

    def __init__(self, time: float, waits: dict[str, str]) -> None:
        lines = "\n".join(f"  {name}: {what}" for name, what in waits.items())
        super().__init__(f"deadlock at virtual time {time:g}: every actor waits and nothing is scheduled:\n{lines}")
        self.time, self.waits = time, waits


@dataclass
class RunResult:
    virtual_time: float
    messages: dict
    metrics: list[tuple] = field(default_factory=list)  # (actor, round, time, metric, value)
    complete: bool = True  # every non-daemon actor returned (not stopped by `until` or the horizon)
    stopped_by: str | None = None  # None, "until" or "horizon"
    rounds_done: int = 0  # distinct rounds for which a metric was recorded
    waits: dict[str, str] = field(default_factory=dict)  # actor -> what it waited for when stopped


def _describe_wait(task: asyncio.Task) -> str:
    """The innermost awaitable a task is suspended on, e.g. 'Event.wait'."""
    coro: object = task.get_coro()
    last: object = None
    while coro is not None:
        last = coro
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return getattr(last, "__qualname__", type(last).__name__) if last is not None else "unknown"


def _resolve(fut: asyncio.Future) -> None:
    """Resolve `fut` with None unless it is already done (a deadline that fired)."""
    if not fut.done():
        fut.set_result(None)


class World:
    def __init__(
        self,
        graph: nx.DiGraph,
        *,
        seed: int,
        links: Mapping[tuple[str, str], Link] | None = None,
        behaviours: Mapping[str, NodeBehaviour] | None = None,
        log: MessageLog | None = None,
        fates: Fates = draw_now,
        model: NetModel | None = None,
        work_seconds: float = 1.0,
    ) -> None:
        self.env = VirtualEnvironment()
        self.streams = Streams(seed)
        self.log = log if log is not None else MessageLog(None)
        self.network = Network(self.env, graph, self.streams, links=links, behaviours=behaviours, emit=self.log, fates=fates,
                               model=model, work_seconds=work_seconds)
        self.actors: dict[str, Hosted] = {}  # by name: the actors and cohorts added
        self.hosts: dict[str, Hosted] = {}  # node -> the actor or cohort acting as it
        self.metrics: list[tuple] = []
        self.privacy = PrivacyLedger()  # zCDP spent by clients that release perturbed models
        self.engine = Engine(self.env, self.network, self.streams, self.log, self.metric, self.privacy.spend, self._fail)
        self._tasks: dict[str, asyncio.Task] = {}
        self._finished: dict[str, asyncio.Future] = {}
        self._pending_recoveries: dict[str, int] = {}
        self._failure: asyncio.Future | None = None
        self.on_round: Callable[[int], object] | None = None  # progress: called once per round done, when it is first seen
        self.rounds_seen: set[int] = set()  # rounds for which a metric was recorded (= rounds done)
        self.stopped_by: str | None = None  # set by run(): "until" or "horizon" when a deadline stopped it
        self.stop_waits: dict[str, str] = {}
        for name, node in self.network.nodes.items():
            for crash_at, recover_at in node.crashes:
                self.crash(name, at=crash_at, recover_at=recover_at)

    # -------------------------------------------------------------- building

    def use_log(self, log: MessageLog) -> None:
        """Write this world's records to `log` from now on: the network's message records,
        the nodes' compute records and everything else the world logs, all to one log."""
        self.log = self.network.emit = self.engine.record = log

    def add(self, actor: H) -> H:
        """Host `actor` (an `Actor`, a `Cohort`: anything `netemu.engine.port.Hosted`) in this world."""
        nodes = list(actor.host_nodes())
        if actor.name in self.actors or actor.name in self.hosts:
            raise ValueError(f"two actors named {actor.name!r}")
        if actor.name not in nodes and actor.name in self.network.nodes:
            raise ValueError(f"process {actor.name!r} has the name of a network node")
        known, hosts, actors = self.network.nodes, self.hosts, self.actors
        for node in nodes:  # a cohort's members: the message is made only for a node that is refused
            if node not in known or node in hosts or (node != actor.name and node in actors):
                what = f"actor {node!r}" if node == actor.name else f"{actor.name!r}: member {node!r}"
                raise ValueError(f"{what} has no node in the graph" if node not in known else f"{what} already has an actor")
        actor.world = self
        self.actors[actor.name] = actor
        for node in nodes:
            self.hosts[node] = actor
        actor.host_attach(self.engine)
        return actor

    def _up(self, name: str) -> bool:
        node = self.network.nodes.get(name)
        return node is None or node.up

    def at(self, t: float, fn: Callable[[], object]) -> None:
        """Call `fn()` at virtual time `t` (scenario events: slow-downs, outages, ...)."""
        if t < self.env.now:
            raise ValueError(f"cannot schedule an event at t={t}, virtual time is already {self.env.now}")

        def fire(_event: object) -> None:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - stops the run naming the function, as an actor's error does
                self._event_failed(fn, exc)
        self.env.timeout(t - self.env.now).callbacks.append(fire)

    def _event_failed(self, fn: Callable[[], object], exc: Exception) -> None:
        """`fn`, scheduled with `at`, raised `exc`: stop the run with `EventFailed` (a `RunStopped` as it is)."""
        failure = self._failure
        if failure is None:  # not inside `run`: nothing to stop
            raise exc
        if failure.done():
            return
        if isinstance(exc, RunStopped):
            failure.set_exception(exc)
            return
        code = getattr(fn, "__code__", None)
        frames = traceback.extract_tb(exc.__traceback__)
        own = [f for f in frames if code is not None and f.filename == code.co_filename] or frames[-1:]
        where = f"{own[-1].filename}:{own[-1].lineno}" if own else ""
        name = getattr(fn, "__qualname__", None) or repr(fn)
        failure.set_exception(EventFailed(f"{name}()", self.env.now, "".join(traceback.format_exception(exc)), where))

    def crash(self, name: str, *, at: float, recover_at: float | None = None) -> None:
        """Schedule node `name` to crash at `at` (and recover at `recover_at`)."""
        if recover_at is not None:
            if recover_at <= at:
                raise ValueError(f"{name}: recovery at {recover_at} must come after the crash at {at}")
            self._pending_recoveries[name] = self._pending_recoveries.get(name, 0) + 1
            self.at(recover_at, lambda: self._recover(name))
        self.at(at, lambda: self._crash(name))

    def metric(self, actor: str, name: str, value: float, round: int, done: bool = True) -> None:
        """Record a metric of `actor` for `round`; with `done` (the default) the round counts as
        done (`rounds_done`, progress) — not for a metric of before the rounds (Flower's round 0)."""
        value = float(value)
        if done and round not in self.rounds_seen:  # a round done (`rounds_done`): progress counts exactly these
            self.rounds_seen.add(round)
            if self.on_round is not None:
                self.on_round(round)
        self.metrics.append((actor, round, self.env.now, name, value))
        self.log(t=self.env.now, event="metric", actor=actor, round=round, metric=name, value=value)

    # -------------------------------------------------------------- lifecycle

    def _start(self, actor: Hosted) -> None:
        self._tasks[actor.name] = asyncio.get_running_loop().create_task(self._life(actor), name=actor.name)

    async def _life(self, actor: Hosted) -> None:
        failure = self._failure
        if failure is None:
            raise RuntimeError(f"actor {actor.name!r} started outside World.run")
        try:
            await actor.run()
        except asyncio.CancelledError:
            raise
        except RunStopped as exc:  # already names what stopped, where and when (e.g. a Flower app that raised)
            if not failure.done():
                failure.set_exception(exc)
            return
        except Exception as exc:  # noqa: BLE001 - any actor error stops the run
            self._fail(actor.name, exc)
            return
        self._finish(actor.name)

    def _fail(self, name: str, exc: BaseException) -> None:
        """Actor (or cohort member) `name` raised `exc`: stop the run with `ActorFailed`
        (a `RunStopped` as it is: it already names what stopped, where and when)."""
        failure = self._failure
        if failure is None or failure.done():
            return
        if isinstance(exc, RunStopped):
            failure.set_exception(exc)
            return
        details = "".join(traceback.format_exception(exc))
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}, in {frames[-1].name}" if frames else ""
        failure.set_exception(ActorFailed(name, self.env.now, details, where))

    def _finish(self, name: str) -> None:
        fut = self._finished.get(name)
        if fut is not None and not fut.done():
            fut.set_result(None)

    def _crash(self, name: str) -> None:
        node = self.network.nodes[name]
        if not node.up:
            return
        self.network.set_up(name, False)
        self.log(t=self.env.now, event="crash", actor=name)
        host = self.hosts.get(name)
        if host is not None and host.host_crash(name):  # its task stops with the node
            task = self._tasks.get(host.name)
            if task is not None and not task.done():
                task.cancel()
            if not self._pending_recoveries.get(name):
                self._finish(host.name)

    def _recover(self, name: str) -> None:
        self._pending_recoveries[name] -= 1
        if self.network.nodes[name].up:
            return
        self.network.set_up(name, True)
        self.log(t=self.env.now, event="recover", actor=name)
        host = self.hosts.get(name)
        if host is not None and host.host_recover(name):  # its task starts again
            self._start(host)

    # -------------------------------------------------------------- running

    def _log_outages(self) -> None:
        """An `outage` record at the start of every scheduled link outage (for readers of the log)."""
        for (src, dst), link in self.network.links.items():
            for start, end in link.outages:
                if start >= self.env.now:
                    def outage(s: str = src, d: str = dst, e: float = end, c: str = link.link_class) -> None:
                        self.log(t=self.env.now, event="outage", src=s, dst=d, link=c, until=e)
                    self.at(start, outage)

    @property
    def rounds_done(self) -> int:
        """How many rounds are done: an algorithm records its metrics when a round ends,
        so a round counts as done once a metric was recorded for it."""
        return len(self.rounds_seen)

    async def _main(self, until: float | None, max_time: float | None = None) -> bool:
        loop = asyncio.get_running_loop()
        failure = self._failure = loop.create_future()
        self._log_outages()
        self._finished = {n: loop.create_future() for n, a in self.actors.items() if not a.daemon}
        for actor in self.actors.values():
            if self._up(actor.name):
                self._start(actor)
            elif not self._pending_recoveries.get(actor.name):
                self._finish(actor.name)
        waits = [asyncio.ensure_future(asyncio.gather(*self._finished.values())), failure]
        self._waited = waits
        deadlines = {}
        for what, t in (("until", until), ("horizon", max_time)):
            if t is not None and t < math.inf:
                deadline = loop.create_future()
                loop.call_at(t, _resolve, deadline)
                waits.append(deadline)
                deadlines[what] = deadline
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if failure.done():  # only ever resolved by set_exception (_life)
            raise failure.exception() or RuntimeError("the run's failure future was resolved without an exception")
        if waits[0] in done:
            return True
        self.stopped_by = next(what for what, d in deadlines.items() if d in done)
        stuck = self._waits()  # the actors the run waits for first, then the daemons
        self.stop_waits = dict(sorted(stuck.items(), key=lambda kv: self._daemon(kv[0])))
        return False

    def _daemon(self, name: str) -> bool:
        actor = self.hosts.get(name) or self.actors.get(name)
        return actor is not None and actor.daemon

    def _waits(self) -> dict[str, str]:
        """What each actor waits for; a cohort's members are listed one by one, as the
        actors they stand for would be."""
        out = {}
        for name, actor in self.actors.items():
            task = self._tasks.get(name)
            for node, what in actor.host_waits().items():
                if not self._up(node):
                    out[node] = "nothing (crashed)"
                elif task is not None and not task.done():
                    out[node] = what or _describe_wait(task)
        return out

    def run(self, until: float | None = None, max_time: float | None = None) -> RunResult:
        """Run every actor in virtual time; see the module docstring for how it ends.

        While it runs, Python's cyclic garbage collector runs less often (`fewer_collections`)."""
        loop = VirtualTimeLoop(self.env)
        complete = False
        try:
            with fewer_collections():
                complete = loop.run_until_complete(self._main(until, max_time))
        except Deadlock:
            raise DeadlockError(self.env.now, self._waits()) from None
        finally:
            try:
                self._cancel_all(loop)
            finally:
                self._retrieve_exceptions()
                self._unread()
                for rec in self.network.in_flight():
                    self.log(t=self.env.now, event="in_flight", **rec)
                self.log.flush()
                loop.close()
        return RunResult(self.env.now, self.network.message_counts(), self.metrics, complete,
                         self.stopped_by, self.rounds_done, self.stop_waits)

    def _unread(self) -> None:
        """Mark `unused` ("unread") every message delivered and never received, host by host
        (`Hosted.host_unread`, where a host has it)."""
        for actor in self.actors.values():
            unread = getattr(actor, "host_unread", None)
            for node, msg in unread() if unread is not None else ():
                self.engine.unused(node, msg, "unread")

    def _retrieve_exceptions(self) -> None:
        """Mark every finished task's and future's exception as seen: when Ctrl-C or SIGTERM
        stops the loop inside a task, asyncio would otherwise print "Task exception was
        never retrieved" with a traceback when the task is collected."""
        for fut in [*self._tasks.values(), *getattr(self, "_waited", [])]:
            if fut.done() and not fut.cancelled():
                fut.exception()

    def _cancel_all(self, loop: VirtualTimeLoop) -> None:
        tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in tasks:
            t.cancel()
        if not tasks:
            return
        try:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        except (Deadlock, KeyboardInterrupt) as exc:
            # Deadlock: a signal raised inside a callback (netemu.run.signals: a second one) left tasks
            # that can never unwind; KeyboardInterrupt: a signal from the run's last loop iteration,
            # raised here by the loop's next callback.  The tasks are dropped with the loop.
            for t in tasks:
                if not t.done():
                    t._log_destroy_pending = False  # type: ignore[attr-defined]  # asyncio's switch for "pending task destroyed"; no stub
            if isinstance(exc, KeyboardInterrupt):
                raise
