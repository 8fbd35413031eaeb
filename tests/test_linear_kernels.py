"""The least-squares kernel stacked over clients gives each client's vector to the last bit
(what lets FedAvg's cohort train the clients of one sample count at once: `LeastSquaresTask.train_many`)."""

from __future__ import annotations

import numpy as np
import pytest

from netemu.data.synthetic import LinearData, make_linear
from netemu.engine.rng import Streams
from netemu.kernels.linear import LeastSquares, gradient_steps
from netemu.tasks.supervised import LeastSquaresTask, LinearParams


@pytest.mark.parametrize("n", [1, 2, 7, 20, 33, 64, 80])
def test_stacked_gradient_steps_give_each_clients_own_bits(n):
    rng = np.random.default_rng(n)
    X, y = rng.standard_normal((9, n, 10)), rng.standard_normal((9, n))
    w = rng.standard_normal(10)
    one = np.array([gradient_steps(w, X[i], y[i], 0.1, 5) for i in range(9)])
    shared = gradient_steps(w[:, None], X, y[:, :, None], 0.1, 5)[:, :, 0]  # one start for all
    own = gradient_steps(np.repeat(w[None, :, None], 9, axis=0), X, y[:, :, None], 0.1, 5)[:, :, 0]
    assert shared.tobytes() == one.tobytes() and own.tobytes() == one.tobytes()
    assert not np.array_equal(one[0], one[1])  # different clients: different vectors


def _task(in_memory: bool = True, **params) -> LeastSquaresTask:
    clients = [f"client-{i}" for i in range(60)]
    data = make_linear(LinearData(samples_min=3, samples_max=6, in_memory=in_memory), clients, Streams(4))
    return LeastSquaresTask(LeastSquares(10), LinearParams(**params), data, Streams(4), None)


@pytest.mark.parametrize(("params", "mu"), [({}, 0.0), ({"lr": 0.3}, 0.0), ({}, 0.01), ({"batch": 2}, 0.0), ({"lr_decay": 0.5}, 0.0),
                                            ({"in_memory": False}, 0.0)])  # parts drawn on use
def test_train_many_is_train_for_each_client_in_turn(params, mu):
    grouped, alone = _task(**params), _task(**params)
    clients = list(grouped.parts)[::2]
    w = np.random.default_rng(0).standard_normal(10)
    for _ in range(2):  # twice: the round counters (step-size decay, batch streams) advance alike
        many = grouped.train_many(w, clients, 3, mu=mu)
        one = [alone.train(w, c, 3, mu=mu) for c in clients]
        assert [v.tobytes() for v in many] == [v.tobytes() for v in one]
    assert len({v.tobytes() for v in many}) == len(clients)
