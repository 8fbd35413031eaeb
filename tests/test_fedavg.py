"""FedAvg in the emulator against its vectorized reference, and its deadline behaviour."""

import numpy as np

from helpers import linear_task
from references import fedavg as fedavg_reference
from netemu import NodeBehaviour, World, star
from netemu.algorithms.fedavg import SPEC, FedAvgParams


PARAMS = FedAvgParams()


def emulate(n_clients=6, rounds=8, behaviours=None, links=None, params=PARAMS):
    g = star(n_clients)
    world = World(g, seed=3, links=links, behaviours=behaviours)
    task = linear_task(world, [f"client-{k}" for k in range(n_clients)], lr=0.1, steps=3)
    SPEC.build(world, params, task, rounds)
    world.run()
    return world, task


def test_in_an_ideal_network_fedavg_matches_the_vectorized_reference():
    instant = {f"client-{k}": NodeBehaviour(speed=1e9) for k in range(6)}  # every update beats the deadline
    world, task = emulate(behaviours=instant)
    expected = fedavg_reference([task.parts[f"client-{k}"] for k in range(6)], 5, rounds=8, lr=0.1, steps=3)
    got = world.actors["server"].w
    # both compute the same sums in a different order: agreement to rounding error
    assert np.linalg.norm(got - expected) <= 1e-12 * np.linalg.norm(expected)


def test_updates_that_miss_the_round_deadline_are_not_aggregated():
    slow = {f"client-{k}": NodeBehaviour(speed=1.0) for k in range(3)}  # 3 steps x >= 20 samples > 10 s
    fast = {f"client-{k}": NodeBehaviour(speed=1e6) for k in range(3, 6)}
    world, _ = emulate(behaviours={**slow, **fast})
    participants = [v for _, _, _, name, v in world.metrics if name == "participants"]
    assert participants == [3.0] * 8
