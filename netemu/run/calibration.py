"""Measured compute (`[nodes] compute = "measured"`): time an algorithm's local step on this
machine once, before a run, and turn it into seconds per work unit.

The algorithm's `AlgorithmSpec.step_cost(params, data)` (for a task-learning family, the task's
`step_cost`) gives one local step of a client on representative data and the work units it counts; the calibration is the median of
`REPETITIONS` timings (after one untimed warm-up) divided by those units.  Every client's
compute time is then calibration × work / speed — deterministic within the run.  The value
is recorded in summary.json and in the trace header (`calibration`), and a replay uses the
recorded one, never a new measurement, so a replay is exact.  This is the one place where
wall-clock time enters an emulation, and only through that recorded number.
"""

from __future__ import annotations

import math
import statistics
import time

from netemu import plugins
from netemu.errors import InputError
from netemu.scenario.build import learning, run_seed
from netemu.scenario.graph import build_graph, release
from netemu.scenario.load import Scenario

__all__ = ["REPETITIONS", "calibrate", "measure"]

REPETITIONS = 5


def measure(sc: Scenario, algorithm: int, repetitions: int = REPETITIONS) -> float:
    """Seconds per work unit of algorithm entry `algorithm`'s local step on this machine,
    on run 0's data: the median of `repetitions` timings over the step's work units."""
    from netemu.engine.rng import Streams

    name = sc.settings.algorithms[algorithm].name
    spec = plugins.algorithm(name)
    if spec.step_cost is None:
        raise InputError(f"{sc.path}: nodes.compute = \"measured\": algorithm[{algorithm}] = {name!r} has no local step to time")
    streams = Streams(run_seed(sc.settings.run.seed, 0))
    graph = build_graph(sc, streams)
    step, work = spec.step_cost(sc.algorithm_params(algorithm), learning(sc, spec, graph, streams))
    release(graph)
    if not work > 0:
        raise InputError(f"{name}: step_cost returned {work!r} work units for one local step; expected > 0")
    step()  # warm-up: caches, lazy imports, BLAS threads
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return max(statistics.median(times), 1e-9) / work  # a clock too coarse to see the step: 1 ns, not 0


def calibrate(sc: Scenario, recorded: dict | None = None) -> dict[str, float]:
    """Seconds per work unit of every algorithm label: the `recorded` one (a replay's trace
    header) when there is one for the label, else measured now."""
    recorded = recorded or {}
    out = {}
    for i, label in enumerate(sc.settings.labels):
        value = recorded.get(label)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
            out[label] = float(value)
        else:  # none recorded for this algorithm, or a damaged value: measured now
            out[label] = measure(sc, i)
    return out
