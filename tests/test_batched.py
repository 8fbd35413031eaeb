"""Many clients' softmax SGD in one batched computation equals each client's own `sgd`
exactly (a cohort relies on it: its runs write the same models and messages as one actor
per client)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netemu.kernels.batched import softmax_sgd_many
from netemu.kernels.classifiers import Softmax, passes, sgd


def both(K, n, d, C, epochs, batch, mu, seed):
    rng = np.random.default_rng(seed)
    model = Softmax(d, C)
    X, y = rng.random((K, n, d)), rng.integers(0, C, (K, n))
    w = 0.1 * rng.standard_normal((K, model.size))
    lr = rng.uniform(0.01, 0.2, K)
    alone = np.stack([sgd(model, w[k], X[k], y[k], epochs=epochs, batch=batch, lr=lr[k], rng=np.random.default_rng([seed, k]),
                          mu=mu, anchor=w[k]) for k in range(K)])
    together = softmax_sgd_many(model, w, X, y, epochs=epochs, batch=batch, lr=lr,
                                rngs=[np.random.default_rng([seed, k]) for k in range(K)], mu=mu, anchors=w)
    return alone, together


@pytest.mark.parametrize("K, n, d, C, epochs, batch, mu", [
    (20, 200, 64, 10, 5, 32, 0.2),  # FedPnP Table 1: 200 samples, a last batch of 8
    (1, 7, 3, 2, 2, 32, 0.0),  # one client, one short batch
    (5, 64, 784, 10, 1, 32, 0.01),  # MNIST-sized features, full batches
    (4, 50, 8, 3, 2.36, 16, 0.1),  # a relaxed α: two passes and a partial third (18 samples)
])
def test_batched_softmax_sgd_equals_each_clients_own_sgd_exactly(K, n, d, C, epochs, batch, mu):
    alone, together = both(K, n, d, C, epochs, batch, mu, seed=3)
    assert np.array_equal(alone, together)


@settings(max_examples=25, deadline=None)
@given(K=st.integers(1, 12), n=st.integers(1, 90), d=st.integers(1, 40), C=st.integers(2, 12), epochs=st.integers(1, 3),
       batch=st.integers(1, 40), mu=st.sampled_from([0.0, 0.2]), seed=st.integers(0, 2**16))
def test_batched_softmax_sgd_equals_each_clients_own_sgd_for_any_shape(K, n, d, C, epochs, batch, mu, seed):
    alone, together = both(K, n, d, C, epochs, batch, mu, seed)
    assert np.array_equal(alone, together)


def test_each_client_keeps_its_own_permutations():
    """Swapping two clients' Generators changes their results: the draws are per client."""
    rng = np.random.default_rng(1)
    model = Softmax(4, 3)
    X, y, w = rng.random((2, 30, 4)), rng.integers(0, 3, (2, 30)), np.zeros((2, model.size))
    kw = {"epochs": 2, "batch": 8, "lr": np.array([0.1, 0.1])}
    straight = softmax_sgd_many(model, w, X, y, rngs=[np.random.default_rng(k) for k in (0, 1)], **kw)
    swapped = softmax_sgd_many(model, w, X, y, rngs=[np.random.default_rng(k) for k in (1, 0)], **kw)
    assert not np.array_equal(straight, swapped)


def test_fractional_epochs_end_with_a_partial_pass():
    assert passes(3, 50) == [50, 50, 50]  # whole epochs: as before
    assert passes(2.36, 50) == [50, 50, 18] and passes(1.005, 50) == [50] and passes(0.5, 7) == [4]
    model, rng = Softmax(3, 2), np.random.default_rng(0)
    X, y, w = rng.random((40, 3)), rng.integers(0, 2, 40), np.zeros(model.size)
    run = lambda e: sgd(model, w, X, y, epochs=e, batch=8, lr=0.1, rng=np.random.default_rng(1))
    one, half, two = run(1), run(1.5), run(2)
    assert not np.array_equal(half, one) and not np.array_equal(half, two)
    # the partial pass is the first 20 samples of the second permutation
    again = np.random.default_rng(1)
    first = sgd(model, w, X, y, epochs=1, batch=8, lr=0.1, rng=again)
    rows = again.permutation(40)[:20]
    assert np.array_equal(half, sgd(model, first, X[rows], y[rows], epochs=1, batch=8, lr=0.1, rng=_Identity()))


class _Identity:
    """A Generator stand-in whose permutation keeps the order."""

    def permutation(self, n):
        return np.arange(n)
