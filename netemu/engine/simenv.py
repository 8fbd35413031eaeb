"""The SimPy side of the one clock: `VirtualEnvironment`, a SimPy environment with its own
event queue whose time asyncio's timers can also advance (netemu.engine.clock's loop steps it)."""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Protocol

import simpy
import simpy.core
from simpy.core import NORMAL, URGENT

__all__ = ["Scheduled", "VirtualEnvironment"]


class Scheduled(Protocol):
    """What `VirtualEnvironment` processes: a SimPy event, or anything with callbacks that
    cannot fail (e.g. the network's `Due`)."""

    callbacks: Any  # a list of callables, or None once processed

    @property
    def ok(self) -> bool: ...


class VirtualEnvironment(simpy.Environment):
    """A SimPy environment whose clock can also be advanced by asyncio timers.

    Time is a float from the start (SimPy's default is the int 0), so logs are uniform.
    It keeps its own event queue: it implements an environment's `now`, `schedule`, `peek`
    and `step` as SimPy's `Environment` does, in the same order (time, priority, then
    scheduling order), and adds `schedule_at` (an event at an instant: ``now + (t - now)``
    can miss `t` by a float step), `reserve` / `schedule_reserved` (an event keyed where it
    was made, queued later: netemu.engine.net.inflight's `Arrivals`), `advance_to` (asyncio's
    timers move the clock) and `urgent_due` (what the loop's `run_now` must know).  SimPy's events only call `schedule`.
    """

    def __init__(self, initial_time: float = 0.0) -> None:
        super().__init__(float(initial_time))
        self._time = float(initial_time)
        self._events: list[tuple[float, int, int, Scheduled]] = []  # a heap
        self._ids = itertools.count()  # scheduling order: ties of time and priority

    @property
    def now(self) -> float:
        return self._time

    def schedule(self, event: Scheduled, priority: int = NORMAL, delay: float = 0) -> None:
        """Schedule `event` after `delay` with `priority` (URGENT before NORMAL at one instant)."""
        heapq.heappush(self._events, (self._time + delay, priority, next(self._ids), event))

    def schedule_at(self, event: Scheduled, t: float, priority: int = NORMAL) -> None:
        """Schedule `event` at virtual time `t` exactly (not before now)."""
        if t < self._time:
            raise ValueError(f"cannot schedule an event at {t}, before the current time {self._time}")
        heapq.heappush(self._events, (t, priority, next(self._ids), event))

    def reserve(self) -> int:
        """The scheduling order an event scheduled now would get, taken for one scheduled later
        with `schedule_reserved` (the arrivals of a send, queued as one run at its end)."""
        return next(self._ids)

    def schedule_reserved(self, event: Scheduled, t: float, order: int) -> None:
        """Schedule `event` (NORMAL) at virtual time `t` (not before now) in the `order` `reserve` gave."""
        heapq.heappush(self._events, (t, NORMAL, order, event))

    def peek(self) -> float:
        """The time of the next event (inf if there is none)."""
        events = self._events
        return events[0][0] if events else math.inf

    def step(self) -> None:
        """Process the next event: SimPy's `Environment.step`."""
        try:
            self._time, _, _, event = heapq.heappop(self._events)
        except IndexError:
            raise simpy.core.EmptySchedule from None
        callbacks, event.callbacks = event.callbacks, None
        try:
            for callback in callbacks:
                callback(event)
        except simpy.core.StopSimulation:  # resumed later: the rest of its callbacks first
            event.callbacks = callbacks[callbacks.index(callback) + 1 :]
            self.schedule(event, -1)
            raise
        if not event.ok and not event.defused:  # type: ignore[attr-defined]  # a failed SimPy event nobody handled
            value = event.value  # type: ignore[attr-defined]
            exc = type(value)(*value.args)
            exc.__cause__ = value
            raise exc

    def urgent_due(self) -> bool:
        """Whether the next event is an URGENT one due now (e.g. a process just started)."""
        events = self._events
        return bool(events) and events[0][1] == URGENT and events[0][0] <= self._time

    def advance_to(self, t: float) -> None:
        """Move the clock to `t` without processing events (none may be due before `t`)."""
        if t < self._time or t > self.peek():
            raise ValueError(f"cannot advance virtual time from {self._time} to {t} (next event at {self.peek()})")
        self._time = t
