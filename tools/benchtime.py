"""Timing for the benchmarks: CPU time (time.process_time) beside wall time, the
minimum of several repetitions, and ratios to a floor measured in the same process.

The machine may be shared: wall time then varies with the load, CPU time much less;
the ratios (emulated / floor, both measured here) are what to compare between runs.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


def timed(fn: Callable[..., Any], reps: int = 3, setup: Callable[[], Any] | None = None) -> tuple[float, float, Any]:
    """(min CPU seconds, min wall seconds, last result) of `reps` calls of `fn`.

    With `setup`, each repetition calls `fn(setup())` and only `fn` is timed.
    """
    cpu, wall, out = [], [], None
    for _ in range(max(1, reps)):
        args = () if setup is None else (setup(),)
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn(*args)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall), out


def ratios(emulated: tuple[float, float, Any], floor: tuple[float, float, Any], reps: int) -> dict:
    """The JSON fields every benchmark prints for an (emulated, floor) pair."""
    return {
        "reps": reps,
        "emulated_cpu_s": round(emulated[0], 3), "emulated_wall_s": round(emulated[1], 3),
        "floor_cpu_s": round(floor[0], 3), "floor_wall_s": round(floor[1], 3),
        "ratio_cpu": round(emulated[0] / floor[0], 2), "ratio_wall": round(emulated[1] / floor[1], 2),
    }


@contextmanager
def sampled(sample: Callable[[FrameType | None], None], tick: float = 0.001) -> Iterator[None]:
    """Call `sample(frame)` with the running Python frame at every SIGPROF while the block
    runs: once per `tick` of the process's CPU time as asked, at most once per scheduler
    tick as Linux delivers it (4 ms at HZ = 250).  Time spent in C counts for the Python
    frame that called it.  The previous SIGPROF handler is restored afterwards."""
    previous = signal.signal(signal.SIGPROF, lambda _signum, frame: sample(frame))
    signal.setitimer(signal.ITIMER_PROF, tick, tick)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, previous)
