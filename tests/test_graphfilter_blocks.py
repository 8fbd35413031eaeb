"""The statistics graph's distances (FedPnP eq. 28) are computed a block of client pairs at a
time, so the K × K × 4 × features differences never exist at once; the result must be the
one-shot computation's, bit for bit."""

import tracemalloc

import numpy as np
import pytest

from netemu.kernels.graphfilter import _distances, statistics_graph


def one_shot(S: np.ndarray) -> np.ndarray:
    """The formula as written before blocks: every pair's differences at once."""
    return np.mean(np.linalg.norm(S[:, None] - S[None, :], axis=-1), axis=-1)


@pytest.mark.parametrize("K, features", [(1, 5), (7, 1), (9, 13), (6, 300)])  # 300: numpy's pairwise sum recurses (> 128)
@pytest.mark.parametrize("pairs", [1, 4, 9, 20, 10_000])  # one pair, part of a row, one row, rows with a rest, all
def test_blocked_distances_equal_the_one_shot_formula_exactly(K, features, pairs):
    S = np.random.default_rng(K * 1000 + features).standard_normal((K, 4, features)) * 10.0 ** np.arange(-3, 4, 2)[None, :, None]
    blocked = _distances(S, block_bytes=pairs * S[0].nbytes)
    assert blocked.dtype == np.float64
    np.testing.assert_array_equal(blocked, one_shot(S))


def test_blocked_distances_keep_float32_statistics_in_float32_as_the_formula_does():
    S = np.random.default_rng(5).standard_normal((5, 4, 40)).astype(np.float32)
    blocked = _distances(S, block_bytes=3 * S[0].nbytes)
    assert blocked.dtype == np.float32
    np.testing.assert_array_equal(blocked, one_shot(S))


def test_the_statistics_graph_of_many_clients_does_not_hold_every_pair_at_once():
    """200 clients × 125 features: the one-shot differences are 160 MB; the blocks stay below
    16 MiB of temporaries (plus the 200 × 200 result)."""
    S = np.random.default_rng(6).standard_normal((200, 4, 125))
    stats = list(S)
    tracemalloc.start()
    try:
        A = statistics_graph(stats)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20 + 4 * A.nbytes
