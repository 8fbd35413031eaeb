"""The loop's timers run by (time, order set), and a `Column` of timers runs each exactly where
a timer of its own would have run (netemu.engine.timers)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from netemu.engine.clock import VirtualEnvironment, VirtualTimeLoop, run
from netemu.engine.timers import Column


def test_timers_due_at_the_same_instant_run_in_the_order_they_were_set():
    seen = []

    async def main():
        loop = asyncio.get_running_loop()
        for k in range(40):  # pushed and popped around: asyncio's own heap order would shuffle them
            loop.call_later(1.0 if k % 3 else 2.0, seen.append, k)
            loop.call_later(0.5, lambda: None).cancel()
        await asyncio.sleep(3.0)

    run(main())
    assert seen == [k for k in range(40) if k % 3] + [k for k in range(40) if not k % 3]


def _program(seed: int, columns: bool) -> list:
    """Callbacks that set timers (ties, 1e-10 s apart, due now), cancel some (enough for the loop to
    rebuild its heap) and ask `next_due`, each timer set with `call_at` or, when `columns`, in one of
    two columns.  Returns what ran, in order, with the time."""
    rng = np.random.default_rng(seed)
    delays = rng.choice([0.0, 1e-10, 0.25, 0.5, 1.0], size=400)
    which = rng.integers(0, 3, size=400)  # 0: the loop, 1 and 2: a column each (when `columns`)
    cancel = rng.random(400) < 0.45
    env = VirtualEnvironment()
    loop = VirtualTimeLoop(env)
    seen: list = []
    handles: list = []
    count = iter(range(400))
    cols = [None, Column(loop), Column(loop)]

    def fired(k: int) -> None:
        seen.append(("fired", k, env.now, loop.next_due()))
        for _ in range(2):
            i = next(count, None)
            if i is None:
                return
            when = env.now + float(delays[i])
            col = cols[which[i]] if columns else None
            handles.append(loop.call_at(when, fired, i) if col is None else col.call_at(when, fired, i))
            if cancel[i] and len(handles) > 3:
                handles[int(rng.integers(0, len(handles)))].cancel()

    def simpy_side(_):  # a SimPy event between the timers, as the network's deliveries are
        seen.append(("simpy", env.now, loop.next_due()))

    for t in (0.25, 0.5, 1.0, 1.75):
        env.timeout(t).callbacks.append(simpy_side)

    async def main():
        for _ in range(120):  # many timers set and cancelled: the loop rebuilds its heap
            loop.call_later(1000.0, seen.append, "never").cancel()
        fired(-1)
        await asyncio.sleep(100.0)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return seen


@pytest.mark.parametrize("seed", range(30))
def test_a_column_runs_each_timer_where_a_timer_of_its_own_would_run(seed):
    plain = _program(seed, columns=False)
    assert len(plain) > 100
    assert _program(seed, columns=True) == plain


def test_an_error_in_a_columns_callback_goes_to_the_loops_exception_handler():
    errors = []

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: errors.append(str(context["exception"])))
        Column(loop).call_at(loop.time() + 1.0, lambda: 1 / 0)
        await asyncio.sleep(2.0)

    run(main())
    assert errors == ["division by zero"]
