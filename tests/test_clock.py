"""Virtual time: every asyncio primitive runs on the SimPy clock."""

import asyncio
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netemu.engine import clock
from netemu.engine.clock import Deadlock, VirtualEnvironment, VirtualTimeLoop, run


def test_this_python_and_simpy_are_versions_the_clock_is_tested_on():
    import importlib.metadata
    import sys

    problem = clock.untested_versions(sys.version_info[:3], importlib.metadata.version("simpy"))
    assert problem is None, problem  # the loop uses asyncio's internals: test it here, then add the version


def test_on_an_untested_version_the_loop_refuses_to_start_naming_the_versions(monkeypatch):
    assert clock.untested_versions((3, 11, 7), "4.1.2") is None
    problem = clock.untested_versions((3, 14, 0), "4.1.2")
    assert problem is not None and "Python 3.11, 3.12, 3.13 with SimPy 4.1; this is Python 3.14.0 with SimPy 4.1.2" in problem
    assert "SimPy 4.2.0" in (clock.untested_versions((3, 12, 1), "4.2.0") or "")
    monkeypatch.setattr(clock, "TESTED_PYTHON", ())
    clock._check_versions.cache_clear()
    try:
        with pytest.raises(clock.UntestedVersion, match="tested on Python  with SimPy 4.1"):
            VirtualTimeLoop()
        clock._check_versions.cache_clear()
        monkeypatch.setenv("NETEMU_ALLOW_UNTESTED", "1")
        VirtualTimeLoop().close()
    finally:
        clock._check_versions.cache_clear()


@pytest.mark.asyncio
async def test_pytest_asyncio_tests_run_on_the_virtual_loop():
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualTimeLoop)
    start = loop.time()
    await asyncio.sleep(3600)
    assert loop.time() == start + 3600


def test_sleeping_a_million_virtual_seconds_costs_almost_no_wall_time():
    async def main():
        await asyncio.sleep(1e6)
        return asyncio.get_running_loop().time()

    wall = time.perf_counter()
    assert run(main()) == 1e6
    assert time.perf_counter() - wall < 0.1


@pytest.mark.asyncio
async def test_queue_gather_and_taskgroup_follow_virtual_time():
    loop = asyncio.get_running_loop()
    q: asyncio.Queue = asyncio.Queue()
    t0 = loop.time()

    async def producer():
        for i in range(3):
            await asyncio.sleep(2)
            await q.put((i, loop.time() - t0))

    async with asyncio.TaskGroup() as tg:
        tg.create_task(producer())
        got = [await q.get() for _ in range(3)]
    assert got == [(0, 2.0), (1, 4.0), (2, 6.0)]
    a, b = await asyncio.gather(asyncio.sleep(5, "a"), asyncio.sleep(1, "b"))
    assert (a, b, loop.time() - t0) == ("a", "b", 11.0)


@pytest.mark.asyncio
async def test_timeouts_and_events_expire_in_virtual_time():
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(7.5):
            await asyncio.Event().wait()
    assert loop.time() - t0 == 7.5
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.sleep(100), timeout=2.5)
    assert loop.time() - t0 == 10.0


@pytest.mark.asyncio
async def test_a_simpy_event_wakes_a_coroutine_at_its_own_time():
    loop = asyncio.get_running_loop()
    env = loop.env
    fut = loop.create_future()
    env.timeout(3.25, "done").callbacks.append(lambda ev: fut.set_result((ev.value, env.now)))
    await asyncio.sleep(1)  # an asyncio timer before the SimPy event
    assert await fut == ("done", 3.25)
    assert loop.time() == 3.25


def test_simpy_events_and_asyncio_timers_interleave_in_time_order():
    env = VirtualEnvironment()
    seen = []
    for t in (1.0, 3.0):
        env.timeout(t).callbacks.append(lambda ev, t=t: seen.append(("simpy", t, env.now)))

    async def main():
        for t in (0.5, 1.5, 2.0):
            await asyncio.sleep(t - env.now)
            seen.append(("asyncio", t, env.now))
        await asyncio.sleep(2)

    run(main(), env)
    assert [s[1] for s in seen] == [0.5, 1.0, 1.5, 2.0, 3.0]
    assert all(s[1] == s[2] for s in seen)


@pytest.mark.parametrize("in_column", [False, True])
def test_a_timer_set_by_a_simpy_callback_fires_at_its_time_before_later_simpy_events(in_column):
    """A SimPy event's callback (not one run at once) sets a timer between two SimPy events:
    the loop's wait must stop stepping SimPy at it, not jump past it (a timer at 1.5 once
    fired at 3.0, after the event at 2.0).  A cohort's column of timers, too."""
    from netemu.engine.timers import Column

    env = VirtualEnvironment()
    seen = []

    async def main():
        loop = asyncio.get_running_loop()
        call_at = Column(loop).call_at if in_column else loop.call_at
        env.timeout(1.0).callbacks.append(lambda ev: call_at(1.5, lambda: seen.append(("timer", env.now))))
        env.timeout(2.0).callbacks.append(lambda ev: seen.append(("simpy", env.now)))
        await asyncio.sleep(3)

    run(main(), env)
    assert seen == [("timer", 1.5), ("simpy", 2.0)]


def _simpy_story(env, plan: list[list[tuple[float, bool]]]) -> list[tuple[float, str]]:
    """Processes that wait the delays of `plan` (and trigger an event others wait on, when
    asked), each writing (time, what) when it resumes; then a failing event and
    `run(until=...)`.  What happened, in order."""
    seen: list[tuple[float, str]] = []
    shared = env.event()
    shared.callbacks.append(lambda ev: seen.append((env.now, f"shared {ev.value}")))

    def proc(i, steps):
        for j, (delay, trigger) in enumerate(steps):
            yield env.timeout(delay)
            seen.append((env.now, f"p{i}.{j}"))
            if trigger and not shared.triggered:
                shared.succeed(i)
                env.process(child(i))  # an Initialize event: URGENT, now

    def child(i):
        seen.append((env.now, f"child of p{i}"))
        yield env.timeout(0)

    for i, steps in enumerate(plan):
        env.process(proc(i, steps))
    horizon = sum(d for steps in plan for d, _ in steps) / 2 + 1
    env.run(until=horizon)
    seen.append((env.now, "until"))
    env.run()
    bad = env.event()
    bad.fail(ValueError("boom"))
    try:
        env.run()
    except ValueError as exc:
        seen.append((env.now, f"raised {exc}"))
    return seen


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.5]), st.booleans()), max_size=5), max_size=6))
def test_the_virtual_environment_processes_events_in_simpys_order(plan):
    import simpy

    assert _simpy_story(VirtualEnvironment(), plan) == _simpy_story(simpy.Environment(0.0), plan)


def test_an_event_scheduled_at_an_instant_lands_on_it_where_a_delay_from_now_cannot():
    now, t = 16.25, 3224237085417721.5
    assert now + (t - now) != t  # SimPy's schedule(event, delay=t - now) would miss t by a float step
    env = VirtualEnvironment(now)
    seen: list[float] = []

    class At:  # anything with callbacks that cannot fail (`netemu.engine.clock.Scheduled`)
        ok = True
        callbacks = [lambda ev: seen.append(env.now)]

    env.schedule_at(At(), t)
    env.run()
    assert seen == [t]
    with pytest.raises(ValueError, match="before the current time"):
        env.schedule_at(At(), t - 1)


def test_waiting_forever_with_nothing_scheduled_is_a_deadlock_not_a_hang():
    async def main():
        await asyncio.sleep(4)
        await asyncio.Event().wait()

    with pytest.raises(Deadlock, match="virtual time 4"):
        run(main())


def test_a_timer_at_infinity_never_fires_so_waiting_on_it_alone_is_a_deadlock():
    async def main():
        await asyncio.sleep(2)
        async with asyncio.timeout(math.inf):  # e.g. a round deadline of inf
            await asyncio.Event().wait()

    with pytest.raises(Deadlock, match="virtual time 2"):
        run(main())


def test_a_timer_far_away_is_reached_in_one_jump_not_one_virtual_day_at_a_time():
    env = VirtualEnvironment()
    waits = []
    loop = VirtualTimeLoop(env)
    advance = loop._advance
    loop._advance = lambda timeout: waits.append(timeout) or advance(timeout)

    async def main():
        await asyncio.sleep(1e12)  # 11.6 million virtual days
        return env.now

    try:
        assert loop.run_until_complete(main()) == 1e12
    finally:
        loop.close()
    assert 1 <= len(waits) < 10


def _program_run(seed: int, n_events: int, at_once: bool, debug: bool = False) -> list:
    """A random mix of SimPy events (ties included) that wake callbacks, and callbacks that
    set, cancel and chain timers (ties, due-now and 1e-10 s timers, enough cancelled ones
    to make asyncio rebuild its heap), and tasks awaiting futures that SimPy events
    resolve (one with a second callback).  A woken callback is either scheduled with
    `call_soon` or, when `at_once`, run at once where `run_now` allows.  Returns the
    order and time of everything that ran."""
    rng = np.random.default_rng(seed)
    env = VirtualEnvironment()
    loop = VirtualTimeLoop(env)
    loop.set_debug(debug)
    seen: list = []
    timers: list = []
    at_once_now = [False]
    plan = {
        "delays": rng.choice([0.0, 1e-10, 0.25, 0.5, 1.0, 3.0], size=(4 * n_events + 8, 3)),
        "cancel": rng.random(4 * n_events + 8) < 0.6,
        "soon": rng.random(4 * n_events + 8) < 0.2,
    }
    counter = iter(range(10**9))

    def wake(fn, *args):
        """Wake `fn`: the last thing the running callback does (`run_now`'s contract)."""
        at_once_now[0] = True  # `fn` runs at once if it runs before run_now returns
        woke = loop.run_now(fn, *args) if at_once else None
        at_once_now[0] = False
        if woke is None:
            loop.call_soon(fn, *args)
            return True
        return woke

    def woken(k):
        seen.append(("woken", k, env.now))
        i = next(counter) % len(plan["cancel"])
        if i % 4 == 1:  # wakes a callback before the rest of this one (`run_now` may be asked only here,
            nested = 2000 + k  # running at once, where it must refuse: the callback runs after this one)
            if not (at_once_now[0] and loop.run_now(seen.append, ("nested", nested, env.now)) is not None):
                loop.call_soon(seen.append, ("nested", nested, env.now))
        for d in plan["delays"][i][:2]:
            timers.append(loop.call_later(d, fired, len(timers)))
        if plan["cancel"][i] and timers:
            timers[len(timers) // 2].cancel()
        if plan["soon"][i]:
            loop.call_soon(seen.append, ("soon", k, env.now))

    def fired(j):
        seen.append(("fired", j, env.now))
        if j % 3 == 0:
            wake(woken, 1000 + j)

    waiting: dict[int, asyncio.Future] = {}

    async def task(j):  # awaits futures that SimPy events resolve, as an actor awaits a message
        for _ in range(n_events):
            fut = waiting[j] = loop.create_future()
            if j == 0:
                fut.add_done_callback(lambda f: f.cancelled() or seen.append(("second callback", f.result(), env.now)))
            value = await fut
            seen.append(("task", j, value, env.now))
            pause = plan["delays"][value % len(plan["cancel"])][2]
            if pause:
                await asyncio.sleep(pause if j % 2 else float(pause > 0.3) * 1e-10)

    def resolve(k):
        fut = waiting.get(k % 3)
        if fut is None or fut.done():
            seen.append(("missed", k, env.now))
        else:
            fut.set_result(k)

    times = rng.choice([0.0, 0.5, 1.0, 1.5, 2.25], size=n_events)
    for k, t in enumerate(times):
        event = env.timeout(float(t) + 0.01 * (k % 2))
        event.callbacks.append(lambda ev, k=k: wake(woken, k) if k % 3 else resolve(k))

    async def main():
        for _ in range(150):  # many timers set and cancelled: asyncio rebuilds its heap
            loop.call_later(1000.0, seen.append, "never").cancel()
        tasks = [asyncio.ensure_future(task(j)) for j in range(3)]
        await asyncio.sleep(50.0)
        for t in tasks:
            t.cancel()

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return seen


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_events=st.integers(1, 40))
def test_a_callback_run_at_once_runs_exactly_where_call_soon_would_run_it(seed, n_events):
    scheduled = _program_run(seed, n_events, at_once=False)
    assert _program_run(seed, n_events, at_once=True) == scheduled
    assert len(scheduled) > n_events


def test_the_loop_iterates_as_asyncio_does_in_debug_mode_too():
    """asyncio's own iteration (debug mode, over the selector) and the loop's lean one
    run the same program in the same order."""
    assert _program_run(7, 30, at_once=False, debug=True) == _program_run(7, 30, at_once=False)
    assert _program_run(7, 30, at_once=True, debug=True) == _program_run(7, 30, at_once=False)


def test_next_due_is_the_earliest_live_timer_whatever_was_cancelled_before_it():
    seen = []

    async def main():
        loop = asyncio.get_running_loop()
        early = [loop.call_later(d, lambda: None) for d in (1.0, 2.0, 3.0)]
        loop.call_later(5.0, lambda: None)
        loop.call_later(4.0, lambda: None)
        env = loop.env

        def probe(_):  # a SimPy callback (where netemu.ns3 asks), after the loop pruned its heap
            seen.append((env.now, loop.next_due()))
            for h in early:
                h.cancel()
            seen.append((env.now, loop.next_due()))
        env.timeout(0.5).callbacks.append(probe)
        await asyncio.sleep(6.0)

    run(main())
    assert seen == [(0.5, 1.0), (0.5, 4.0)]
