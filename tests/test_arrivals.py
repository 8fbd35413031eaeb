"""`Arrivals` (netemu.engine.net.inflight): the arrival events of one send call queued as one
entry of the event queue are processed in exactly the order one `Due` each would be — by time,
priority, then the order they were made in — among events made before, between and after them,
and events that processing schedules (issue 40, item 1)."""

from __future__ import annotations

import numpy as np
import pytest
from simpy.core import URGENT

from netemu.engine.clock import VirtualEnvironment
from netemu.engine.net.inflight import Arrivals, Due


def _order(seed: int, columns: bool) -> list[tuple[float, str]]:
    """The (time, label) order in which a random mix of events is processed: calls of several
    arrival events (as one `Arrivals` each, or one `Due` each), single events between them, and
    processing that schedules more (URGENT and NORMAL, now and later)."""
    r = np.random.default_rng(seed)
    env = VirtualEnvironment()
    seen: list[tuple[float, str]] = []

    def fire(event: object) -> None:
        label = event._value  # type: ignore[attr-defined]
        seen.append((env.now, label))
        if label.endswith("!"):  # processing that schedules: the rest of a batch, or a new event
            env.schedule(Due((fire,), f"{label}u"), URGENT)
            env.schedule(Due((fire,), f"{label}n"), delay=float(r.choice([0.0, 0.5])))

    for call in range(int(r.integers(2, 8))):
        items = []
        for k in range(int(r.integers(1, 12))):
            t = float(r.choice([0.0, 0.5, 1.0, r.uniform(0, 2)]))  # ties, and distinct instants
            label = f"c{call}.{k}" + ("!" if r.random() < 0.2 else "")
            if r.random() < 0.25:  # an event made between the call's arrivals (a loss, another send)
                env.schedule_at(Due((fire,), f"s{call}.{k}"), t)
            items.append((t, env.reserve(), label))
        if columns and len(items) > 1:
            Arrivals(env, fire, items)
        else:
            for t, order, label in items:
                env.schedule_reserved(Due((fire,), label), t, order)
    while env.peek() != float("inf"):
        env.step()
    return seen


@pytest.mark.parametrize("seed", range(60))
def test_a_calls_arrivals_queued_as_one_entry_are_processed_as_one_event_each_would_be(seed):
    assert _order(seed, True) == _order(seed, False)


def test_one_entry_stands_for_a_whole_broadcast_in_the_queue():
    env = VirtualEnvironment()
    seen = []
    Arrivals(env, lambda e: seen.append(e._value), [(float(t), env.reserve(), t) for t in (3, 1, 2, 1)])
    assert len(env._events) == 1
    while env.peek() != float("inf"):
        env.step()
    assert seen == [1, 1, 2, 3]
