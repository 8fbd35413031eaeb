"""One clock: an asyncio event loop whose time *is* a SimPy environment's time.

`VirtualTimeLoop` is a `SelectorEventLoop` whose selector, instead of blocking on
file descriptors, steps the SimPy environment.  When no asyncio callback is ready,
`select(timeout)` processes SimPy events one at a time until either one of them
makes an asyncio callback ready (e.g. a message delivery resolves a `recv`) or the
next asyncio timer is due; then virtual time jumps straight there.  Hence
`asyncio.sleep`, `wait_for`, `timeout`, `Queue`, `Event`, `gather` and `TaskGroup`
all run in virtual time, and idle virtual time costs no wall time.

If nothing is ready, no timer is pending and SimPy has no event left, every
coroutine waits for something that can never happen: `select` raises `Deadlock`
instead of blocking forever.  A timer at virtual time `inf` (e.g. a wait with an
infinite deadline) can never fire, so it counts as no timer.  asyncio caps every
wait at one day (MAXIMUM_SELECT_TIMEOUT); when the cap applies, the clock jumps
straight to the next timer instead of stepping a day at a time.

The loop does no real I/O: callbacks from other threads (`call_soon_threadsafe`,
`asyncio.to_thread`) are not supported inside an emulation.

`VirtualTimeLoop` runs its own iteration (`_run_once`): asyncio's, step for step — drop
cancelled timers, wait (here: step SimPy), move the due timers to the run queue, run
it — without the selector round trip.  Owning it lets `run_now` run a callback at
once when that is exactly where the loop would have run it had it been scheduled
with `call_soon` (a cohort member or a gather step woken by a delivery: issue 15), so
the order of everything — records, ids, timers — is that of the scheduled callback.
(An actor's task woken by its future gains nothing from it: measured, the bookkeeping
costs what the loop iteration does.)

Timers due at the same virtual time run in the order they were scheduled: every timer is a
`netemu.engine.timers.Timer`, ordered by (time, then a sequence number from the loop's one
counter), not by the history of asyncio's heap.  A cohort's members' wake-ups draw their
sequence numbers from the same counter and wait in a `Column` of their own, one entry in the
loop's heap (netemu.engine.timers), which the loop expands as its timers fall due.

That iteration and `run_now` use asyncio's internals (its run queue, timer heap and
handles).  asyncio's public interface — a custom selector, `time()`, `call_soon` — would
do without them, at a price measured in docs/benchmarks.md: ×1.1–1.7 the CPU time of the
cohort paths, whose speed comes largely from `run_now`.  So the internals
stay, pinned: the loop refuses to start on a Python or SimPy version it is not tested on
(`untested_versions`; `NETEMU_ALLOW_UNTESTED=1` runs anyway).  SimPy is driven through
its public interface only: `VirtualEnvironment` implements an environment's methods.
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import asyncio.format_helpers
import collections
import contextvars
import functools
import heapq
import importlib.metadata
import itertools
import math
import os
import selectors
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, cast

from netemu.engine.simenv import Scheduled, VirtualEnvironment
from netemu.engine.timers import Timer
from netemu.errors import EXIT_FAILED, NetemuError

__all__ = ["Deadlock", "Scheduled", "UntestedVersion", "VirtualEnvironment", "VirtualTimeLoop", "run", "running_loop", "untested_versions"]

T = TypeVar("T")
# asyncio's cap on one select() wait (one day); private, so typeshed has no stub for it
_MAXIMUM_SELECT_TIMEOUT: float = asyncio.base_events.MAXIMUM_SELECT_TIMEOUT  # type: ignore[attr-defined]
# when asyncio rebuilds its timer heap rather than popping cancelled timers off its head
_REBUILD_COUNT: int = asyncio.base_events._MIN_SCHEDULED_TIMER_HANDLES  # type: ignore[attr-defined]
_REBUILD_FRACTION: float = asyncio.base_events._MIN_CANCELLED_TIMER_HANDLES_FRACTION  # type: ignore[attr-defined]


_FINE = 2.0**23  # below this, a float step of the clock is finer than 1 ns


def _resolution(now: float) -> float:
    """How close a timer must be to count as due: 1 ns, or one float step of the clock
    once virtual time is so large (> ~8e6 s) that 1 ns no longer changes it — else a
    timer due exactly now would never fire and the loop would spin."""
    return 1e-9 if now < _FINE else max(1e-9, math.ulp(now))


class Deadlock(RuntimeError):
    """Every coroutine waits and nothing is scheduled: the emulation cannot progress."""


# The versions whose asyncio internals the loop is tested on (the upper bound of
# requires-python), and the SimPy releases `VirtualEnvironment` is tested with (pyproject).
TESTED_PYTHON = ((3, 11), (3, 12), (3, 13))
TESTED_SIMPY = ((4, 1),)


class UntestedVersion(NetemuError):
    """The virtual-time loop would run on a Python or SimPy version it is not tested on."""

    exit_code = EXIT_FAILED


def untested_versions(python: tuple[int, ...], simpy_version: str) -> str | None:
    """None if `python` (sys.version_info) and `simpy_version` are versions the clock is
    tested on, else one line naming what is and what is tested."""
    simpy_minor = tuple(int(p) for p in simpy_version.split(".")[:2] if p.isdigit())
    if tuple(python[:2]) in TESTED_PYTHON and simpy_minor in TESTED_SIMPY:
        return None
    pythons = ", ".join(f"{a}.{b}" for a, b in TESTED_PYTHON)
    simpys = ", ".join(f"{a}.{b}" for a, b in TESTED_SIMPY)
    return (f"netemu's virtual-time loop uses asyncio's internals and is tested on Python {pythons} with SimPy {simpys}; "
            f"this is Python {'.'.join(map(str, python[:3]))} with SimPy {simpy_version} (NETEMU_ALLOW_UNTESTED=1 runs anyway)")


@functools.cache
def _check_versions() -> None:
    problem = untested_versions(sys.version_info[:3], importlib.metadata.version("simpy"))
    if problem is not None and os.environ.get("NETEMU_ALLOW_UNTESTED") != "1":
        raise UntestedVersion(problem)


class _VirtualSelector(selectors.DefaultSelector):
    """A selector whose `select` steps SimPy instead of waiting for I/O."""

    def __init__(self, env: VirtualEnvironment) -> None:
        super().__init__()
        self.env = env
        self.loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> list:
        """asyncio's wait for I/O: step SimPy instead (used by asyncio's own iteration,
        in debug mode; otherwise the loop steps SimPy itself)."""
        if timeout == 0:
            return []
        loop = self.loop
        if loop is None:
            raise RuntimeError("a _VirtualSelector steps SimPy only for the VirtualTimeLoop it was attached to")
        loop._advance(timeout)  # the loop this selector serves
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio event loop running in the virtual time of `self.env`."""

    # BaseEventLoop's run queue, timer heap and state, read and kept as asyncio's own iteration
    # does; typeshed leaves these private names out
    _ready: collections.deque[asyncio.Handle]
    _scheduled: list[asyncio.TimerHandle]
    _stopping: bool
    _timer_cancelled_count: int
    _debug: bool

    def __init__(self, env: VirtualEnvironment | None = None) -> None:
        env = env if env is not None else VirtualEnvironment()
        selector = _VirtualSelector(env)
        super().__init__(selector)
        try:
            _check_versions()
        except UntestedVersion:
            self.close()
            raise
        selector.loop = self
        self.env = env
        self._phase = 0  # 1: stepping SimPy, 2: running the run queue (where `run_now` may run a callback)
        # within the SimPy step in progress, a callback ran at once (`run_now`) or a timer was set (`call_at`,
        # a column's): the wait finds its deadline again after the step, so as not to step past that timer
        self._rewait = False
        self._running_now = False  # a callback is running at once (`run_now`)
        self._seqs = itertools.count()  # scheduling order of timers: ties of time (netemu.engine.timers)

    def time(self) -> float:
        return self.env.now

    @property
    def _clock_resolution(self) -> float:
        return _resolution(self.env.now)

    @_clock_resolution.setter
    def _clock_resolution(self, _value: float) -> None:
        """asyncio sets the wall clock's resolution in __init__; virtual time has its own."""

    def call_at(self, when: float, callback: Callable[..., object], *args: Any,  # type: ignore[override]
                context: contextvars.Context | None = None) -> asyncio.TimerHandle:
        """asyncio's `call_at` (which `call_later` calls), with a `Timer` ordered by (when, seq)."""
        if when is None:
            raise TypeError("when cannot be None")
        self._check_closed()  # type: ignore[attr-defined]
        if self._debug:
            self._check_thread()  # type: ignore[attr-defined]
            self._check_callback(callback, "call_at")  # type: ignore[attr-defined]
        timer = Timer(when, callback, args, self, context)
        if timer._source_traceback:  # type: ignore[attr-defined]
            del timer._source_traceback[-1]  # type: ignore[attr-defined]
        timer._seq = next(self._seqs)
        heapq.heappush(self._scheduled, timer)
        timer._scheduled = True  # type: ignore[attr-defined]
        if self._phase == 1:  # set by a SimPy event's callback: the wait in progress must not step past it
            self._rewait = True
        return timer

    # ------------------------------------------------------------ one iteration

    def _run_once(self) -> None:
        """One iteration of asyncio's loop (BaseEventLoop._run_once, Python 3.11–3.13), with
        the selector's wait replaced by SimPy steps (`_advance`)."""
        if self._debug:  # asyncio's own iteration, with its slow-callback reports
            super()._run_once()  # type: ignore[misc]
            return
        self._prune()
        timeout = self._timeout()
        if timeout != 0:
            self._advance(timeout)
        ready = self._ready
        now = self.env._time
        end = now + _resolution(now)
        sched = self._scheduled
        while sched and sched[0]._when < end:  # type: ignore[attr-defined]  # due timers join the run queue
            timer = heapq.heappop(sched)
            if type(timer) is Timer:
                timer._scheduled = False  # type: ignore[attr-defined]
                ready.append(timer)
            else:  # a column's token: its head joins, the token goes back keyed by the next one
                timer.column.expand(timer, ready)  # type: ignore[attr-defined]
        self._phase = 2
        try:
            for _ in range(len(ready)):
                handle = ready.popleft()
                if not handle._cancelled:
                    handle._run()
        finally:
            self._phase = 0

    def _prune(self) -> None:
        """The start of an iteration: drop cancelled timers from the head of the heap, or
        rebuild it when most timers are cancelled (asyncio's rule)."""
        sched = self._scheduled
        n = len(sched)
        if n > _REBUILD_COUNT and self._timer_cancelled_count / n > _REBUILD_FRACTION:
            kept = []
            for handle in sched:
                if type(handle) is not Timer:  # a column's token: its column drops its own cancelled timers
                    token = handle.column.rebuilt(handle)  # type: ignore[attr-defined]
                    if token is not None:
                        kept.append(token)
                elif handle._cancelled:
                    handle._scheduled = False  # type: ignore[attr-defined]
                else:
                    kept.append(handle)
            heapq.heapify(kept)
            self._scheduled = kept
            self._timer_cancelled_count = 0
        elif n and sched[0]._cancelled:  # (most iterations and run-at-once callbacks: nothing to drop)
            self._drop_cancelled_head(sched)

    def _drop_cancelled_head(self, sched: list[asyncio.TimerHandle]) -> None:
        """Pop the cancelled timers off the head of the heap (a column's: off the head of its column)."""
        while sched and sched[0]._cancelled:
            handle = heapq.heappop(sched)
            if type(handle) is Timer:
                self._timer_cancelled_count -= 1
                handle._scheduled = False  # type: ignore[attr-defined]
            else:
                handle.column.discard(handle)  # type: ignore[attr-defined]

    def _deadline(self, timeout: float | None) -> float:
        """Until when the wait of `timeout` seconds steps SimPy (inf: no timer at all)."""
        if timeout is None:
            return math.inf
        if timeout >= _MAXIMUM_SELECT_TIMEOUT:  # asyncio capped the wait: the real next timer (maybe inf)
            return min((h.when() for h in self._scheduled if not h.cancelled()), default=math.inf)
        return self.env.now + timeout

    def _timeout(self) -> float | None:
        """The wait an iteration starting now would ask for (0: none; None: no timer)."""
        if self._ready or self._stopping:
            return 0
        sched = self._scheduled
        if not sched:
            return None
        wait = sched[0]._when - self.env._time  # type: ignore[attr-defined]
        # min(max(0, wait), cap) without the two builtin calls: this runs after every SimPy step
        return (wait if wait < _MAXIMUM_SELECT_TIMEOUT else _MAXIMUM_SELECT_TIMEOUT) if wait > 0 else 0

    def _advance(self, timeout: float | None) -> None:
        """The wait: process SimPy events one at a time until one readies a callback, or
        up to the next timer; then virtual time jumps there."""
        env, ready = self.env, self._ready
        deadline = self._deadline(timeout)
        self._phase, self._rewait = 1, False
        try:
            while (t := env.peek()) <= deadline and t != math.inf:
                env.step()
                if ready:  # a SimPy callback woke a coroutine: let asyncio run it now
                    return
                if self._rewait:  # callbacks ran or a timer was set within that step: wait as the next iteration would
                    self._rewait = False
                    timeout = self._timeout()
                    if timeout == 0:
                        return
                    deadline = self._deadline(timeout)
        finally:
            self._phase = 0
        if deadline == math.inf:
            raise Deadlock(f"deadlock at virtual time {env.now:g}: every coroutine waits and nothing is scheduled")
        env.advance_to(deadline)

    def next_due(self) -> float:
        """The earliest virtual time at which asyncio has something to run: now when a callback is
        ready, else the next live timer's time (inf: none).  With `VirtualEnvironment.peek` it is the
        next instant anything in the emulation can happen (netemu.ns3 runs ns-3 up to it).  The heap's
        head once its cancelled timers are dropped (as `_prune` drops them): O(1) amortized, not a scan."""
        if self._ready or self._stopping:
            return self.env.now
        sched = self._scheduled
        self._drop_cancelled_head(sched)
        return sched[0]._when if sched else math.inf  # type: ignore[attr-defined]

    # ------------------------------------------------------------ running a callback at once

    def run_now(self, callback: Callable[..., object], *args: Any) -> bool | None:
        """Run `callback(*args)` at once if that is exactly where and when the loop would
        run it after `call_soon(callback, *args)`; returns None if not (then schedule it),
        else whether the loop must run something before the next SimPy event — what a
        delivery receiver answers (False: the network may deliver the next message due
        now at once).  Running it now changes nothing but the cost: no handle, no loop
        iteration (a cohort member or a gather step woken by a delivery or a timer: issue 15).

        Scheduled now, the callback would run as the only callback of the next run-queue
        pass, unless a timer is due to join it: during a SimPy step, that pass follows
        the step, and the next SimPy event stepped after it is the one the network puts
        back for the rest of a batch — unless an URGENT event is due now already (code
        woken earlier in the step started a SimPy process): then it is scheduled.  From
        the last callback of a pass, it is the next one, after the next iteration's
        start (`_prune`, done here first).  Not from within a callback running at once:
        its successors run after it, not inside it.

        As a scheduled callback, it runs in a copy of the current context (what it sets in
        a ContextVar stays its own), and an exception it raises is reported to the loop's
        exception handler and the loop goes on (`asyncio.Handle`).

        The caller's contract: call it as the last thing the running callback (a SimPy
        event's, or the loop's) does — code after it would run before the callback, where
        scheduled it would run after.  A delivery receiver's return value is that last thing.
        """
        phase = self._phase
        if not phase or self._ready or self._stopping or self._running_now:
            return None
        if phase == 2:
            self._prune()  # the next iteration's start (a no-op for it if the callback is scheduled after all)
        if not self._nothing_due(phase):
            return None
        self._running_now = True
        try:
            contextvars.copy_context().run(callback, *args)  # as a handle runs it: in a copy of the context
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - as asyncio's Handle._run: reported to the exception handler, the loop goes on
            source = asyncio.format_helpers._format_callback_source(callback, args)
            self.call_exception_handler({"message": f"Exception in callback {source}", "exception": exc})
        finally:
            self._running_now = False
        if phase == 2:
            return True
        self._prune()  # the start of the iteration that would have run the callback's successors
        self._rewait = True
        sched = self._scheduled  # (rebuilt, maybe)
        # `self._timeout() == 0`, inline (this runs at every delivery run at once)
        return bool(self._ready or self._stopping) or (bool(sched) and not sched[0]._when - self.env._time > 0)  # type: ignore[attr-defined]


    def _nothing_due(self, phase: int) -> bool:
        """No timer is due now, and (in a SimPy step) no URGENT SimPy event: what a callback run at
        once would otherwise jump ahead of."""
        sched = self._scheduled
        if sched:
            now = self.env._time
            if sched[0]._when < now + _resolution(now):  # type: ignore[attr-defined]  # a timer is due now
                return False
        # an URGENT SimPy event is due now (e.g. a process started by code woken earlier in this
        # step): scheduled, the callback's successors — the rest of a batch — would wait behind
        # it; run at once, they would not
        return not (phase == 1 and self.env.urgent_due())

    def runs_now(self) -> bool:
        """Whether a delivery's handling would run at once (`run_now`) here, inside a SimPy
        step, and its successors — the rest of the arrival batch — right after it: nothing
        else waits to run at this instant.  A cohort takes a batch of members in one step only
        then (`Cohort.on_messages`)."""
        return self._phase == 1 and not (self._ready or self._stopping or self._running_now) and self._nothing_due(1)

def running_loop() -> VirtualTimeLoop:
    """The running event loop: in an emulation, a `VirtualTimeLoop`."""
    return cast(VirtualTimeLoop, asyncio.get_running_loop())


def run(main: Coroutine[Any, Any, T], env: VirtualEnvironment | None = None) -> T:
    """Run `main` to completion in virtual time (the virtual-time `asyncio.run`)."""
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(env)) as runner:
        return runner.run(main)
