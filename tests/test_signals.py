"""Ctrl-C and SIGTERM during a run: raised between two callbacks of the event loop, never
inside one, so nothing that must stay whole (a trace entry and its checksum, a record and its
count) is split; raised at once outside the loop, or when a callback never returns."""

import asyncio
import os
import signal

import pytest

from netemu import Actor, World, star
from netemu.run.signals import Terminated, raise_pending, stop_on_signals


def terminate_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before os.kill returns to Python code


class Stopper(Actor):
    """Sends itself SIGTERM in the middle of a step, then notes what ran after it."""

    def __init__(self, name: str, signals: int = 1) -> None:
        super().__init__(name)
        self.signals, self.ran = signals, []

    async def run(self) -> None:
        for _ in range(self.signals):
            terminate_self()
        self.ran.append("rest of the step")
        await self.sleep(1.0)
        self.ran.append("next step")


def world_of(actor: Actor) -> World:
    world = World(star(1), seed=1)
    world.add(actor)
    return world


def test_a_signal_during_a_step_lets_the_step_finish_and_stops_the_run_before_the_next():
    actor = Stopper("server")
    with stop_on_signals(), pytest.raises(Terminated):
        world_of(actor).run()
    assert actor.ran == ["rest of the step"]


def test_a_second_signal_while_the_first_waits_for_the_loop_raises_at_once():
    actor = Stopper("server", signals=2)  # a step that would never return is stopped by the second
    with stop_on_signals(), pytest.raises(Terminated):
        world_of(actor).run()
    assert actor.ran == []


def test_outside_a_running_loop_a_signal_waits_for_the_next_safe_point():
    """Raised at once it could land in a garbage-collection callback and be lost ("Exception
    ignored"): it is recorded, and raised by `raise_pending` (the runner's safe points)."""
    from netemu.run.signals import raise_pending

    reached = []
    with stop_on_signals(), pytest.raises(Terminated):
        terminate_self()
        reached.append(True)
        raise_pending()
        reached.append(False)
    assert reached == [True]


def test_sigint_raises_keyboard_interrupt_and_the_handlers_are_restored_after():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    actor = Stopper("server")
    actor_run = actor.run

    async def interrupted() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        await actor_run()

    actor.run = interrupted  # type: ignore[method-assign]
    with stop_on_signals(), pytest.raises(KeyboardInterrupt) as caught:
        world_of(actor).run()
    assert not isinstance(caught.value, Terminated)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_signal_in_a_loop_s_last_iteration_is_raised_before_the_next_world():
    loop = asyncio.new_event_loop()
    try:
        with stop_on_signals():
            loop.call_soon(lambda: (terminate_self(), loop.stop()))  # the loop stops before its next callback
            loop.run_forever()
            with pytest.raises(Terminated):
                raise_pending()
            raise_pending()  # raised once
    finally:
        loop.close()
