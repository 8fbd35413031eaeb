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
"""

from __future__ import annotations

import asyncio
import collections
import math
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

import simpy

__all__ = ["Deadlock", "VirtualEnvironment", "VirtualTimeLoop", "run"]

T = TypeVar("T")
# asyncio's cap on one select() wait (one day); private, so typeshed has no stub for it
_MAXIMUM_SELECT_TIMEOUT: float = asyncio.base_events.MAXIMUM_SELECT_TIMEOUT  # type: ignore[attr-defined]


class Deadlock(RuntimeError):
    """Every coroutine waits and nothing is scheduled: the emulation cannot progress."""


class VirtualEnvironment(simpy.Environment):
    """A SimPy environment whose clock can also be advanced by asyncio timers.

    Time is a float from the start (SimPy's default is the int 0), so logs are uniform.
    """

    def __init__(self, initial_time: float = 0.0) -> None:
        super().__init__(float(initial_time))

    def advance_to(self, t: float) -> None:
        """Move the clock to `t` without processing events (none may be due before `t`)."""
        if t < self._now or t > self.peek():
            raise ValueError(f"cannot advance virtual time from {self._now} to {t} (next event at {self.peek()})")
        self._now = t


class _VirtualSelector(selectors.DefaultSelector):
    """A selector whose `select` steps SimPy instead of waiting for I/O."""

    def __init__(self, env: VirtualEnvironment) -> None:
        super().__init__()
        self.env = env
        self.loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> list:
        if timeout == 0:
            return []
        loop = self.loop
        if loop is None:
            raise RuntimeError("a _VirtualSelector steps SimPy only for the VirtualTimeLoop it was attached to")
        env, ready = self.env, loop._ready  # noqa: SLF001 - the loop's own run queue
        deadline = math.inf if timeout is None else env.now + timeout
        if timeout is not None and timeout >= _MAXIMUM_SELECT_TIMEOUT:
            deadline = self._next_timer(loop)  # asyncio capped the wait: the real next timer (maybe inf)
        while (t := env.peek()) <= deadline and t != math.inf:
            env.step()
            if ready:  # a SimPy callback woke a coroutine: let asyncio run it now
                return []
        if deadline == math.inf:
            raise Deadlock(f"deadlock at virtual time {env.now:g}: every coroutine waits and nothing is scheduled")
        env.advance_to(deadline)
        return []

    @staticmethod
    def _next_timer(loop: VirtualTimeLoop) -> float:
        """When the earliest pending asyncio timer of `loop` is due (inf if none, or only at inf)."""
        scheduled = [h.when() for h in loop._scheduled if not h.cancelled()]  # noqa: SLF001
        return min(scheduled, default=math.inf)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio event loop running in the virtual time of `self.env`."""

    # BaseEventLoop's run queue and timer heap, read by the selector; typeshed leaves these private names out
    _ready: collections.deque[asyncio.Handle]
    _scheduled: list[asyncio.TimerHandle]

    def __init__(self, env: VirtualEnvironment | None = None) -> None:
        env = env if env is not None else VirtualEnvironment()
        selector = _VirtualSelector(env)
        super().__init__(selector)
        selector.loop = self
        self.env = env

    def time(self) -> float:
        return self.env.now

    @property
    def _clock_resolution(self) -> float:
        """How close a timer must be to count as due: 1 ns, or one float step of the clock
        once virtual time is so large (> ~1.6e7 s) that 1 ns no longer changes it — else a
        timer due exactly now would never fire and the loop would spin."""
        return max(1e-9, math.ulp(self.env.now))

    @_clock_resolution.setter
    def _clock_resolution(self, _value: float) -> None:
        """asyncio sets the wall clock's resolution in __init__; virtual time has its own."""


def run(main: Coroutine[Any, Any, T], env: VirtualEnvironment | None = None) -> T:
    """Run `main` to completion in virtual time (the virtual-time `asyncio.run`)."""
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(env)) as runner:
        return runner.run(main)
