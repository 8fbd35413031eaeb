"""Named streams and keyed draws: reproducible, independent, stable across processes."""

import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from netemu.engine.rng import Streams, name_words, seed_states


def test_the_same_seed_and_name_give_the_same_stream():
    a = Streams(7).generator("data/client-3").random(5)
    b = Streams(7).generator("data/client-3").random(5)
    assert np.array_equal(a, b)


def test_different_names_or_seeds_give_different_streams():
    base = Streams(7).generator("data/client-3").random(5)
    assert not np.array_equal(base, Streams(7).generator("data/client-4").random(5))
    assert not np.array_equal(base, Streams(8).generator("data/client-3").random(5))


def test_keyed_draws_depend_only_on_their_coordinates():
    draws = Streams(1).keyed("link/a->b")
    first = [draws.uniform(r, i) for r in range(3) for i in range(3)]
    # drawing other coordinates in between changes nothing
    draws.uniform(99, 99)
    again = [Streams(1).keyed("link/a->b").uniform(r, i) for r in range(3) for i in range(3)]
    assert first == again
    assert len(set(first)) == 9


def test_keyed_uniforms_are_uniform():
    draws = Streams(3).keyed("x")
    u = np.array([draws.uniform(i) for i in range(20000)])
    # mean 1/2, variance 1/12; standard errors 0.002 and 0.0006: 5-sigma bounds
    assert abs(u.mean() - 0.5) < 0.011
    assert abs(u.var() - 1 / 12) < 0.003
    assert u.min() >= 0 and u.max() < 1


def test_stream_names_are_not_hashed_with_the_salted_builtin_hash():
    code = "from netemu.engine.rng import name_words, Streams; print(name_words('link/a->b'), Streams(5).keyed('n').uniform(1, 2))"
    outs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONHASHSEED": s}).stdout
        for s in ("1", "2")
    }
    assert len(outs) == 1
    assert str(name_words("link/a->b")) in outs.pop()


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_a_bad_seed_is_refused(seed):
    with pytest.raises(ValueError, match="seed"):
        Streams(seed)


def test_uniforms_are_the_uniform_of_each_coordinate_tuple():
    from netemu.engine.rng import Streams

    draws = Streams(5).keyed("participation")
    coords = [(f"client-{k}", 3) for k in range(20)] + [(1, 2, "loss"), ("only",), (1, 2, 3, 4)]
    assert draws.uniforms(coords).tolist() == [draws.uniform(*c) for c in coords]


@given(st.lists(st.lists(st.one_of(st.text(max_size=8), st.integers(-10**20, 10**20), st.floats(allow_nan=False)), min_size=1, max_size=5).map(tuple), max_size=30))
def test_uniforms_equal_uniform_for_any_coordinates(coords):
    draws = Streams(11).keyed("any")
    got = draws.uniforms(coords)
    assert got.dtype == np.float64 and got.tolist() == [draws.uniform(*c) for c in coords]


@given(st.integers(0, 2**140), st.lists(st.integers(0, 2**32 - 1), min_size=0, max_size=9), st.integers(1, 6))
def test_seed_states_are_numpys_seedsequence_states(seed, key, n):
    """Every seed size (one to five 32-bit words) and spawn-key length: numpy's own states."""
    keys = [[(w + 7 * i) % 2**32 for w in key] for i in range(n)]
    want = [np.random.SeedSequence(seed, spawn_key=tuple(k)).generate_state(4, np.uint64) for k in keys]
    assert np.array_equal(seed_states(seed, keys), np.array(want, dtype=np.uint64).reshape(n, 4))


def test_seed_states_refuse_keys_that_are_not_32_bit_words():
    with pytest.raises(ValueError, match="32-bit words"):
        seed_states(1, [[2**32]])


@pytest.mark.parametrize("seed", [0, 1, 2**63 - 1])
def test_generators_give_the_streams_generator_gives(seed):
    names = [f"data/client-{k}" for k in range(5000)] + ["", "data/truth"]  # more than one chunk of names
    streams = Streams(seed)
    for name, rng in zip(names, streams.generators(names), strict=True):
        one = streams.generator(name)
        assert rng.bit_generator.state == one.bit_generator.state, name
    last = list(streams.generators(names[-3:]))
    assert [g.standard_normal(4).tolist() for g in last] == [streams.generator(n).standard_normal(4).tolist() for n in names[-3:]]


def test_a_batched_generator_spawns_pickles_and_reports_its_seed_sequence_as_the_one_of_generator():
    rng, one = next(Streams(9).generators(["actor/a/x"])), Streams(9).generator("actor/a/x")
    assert rng.bit_generator.seed_seq.spawn_key == one.bit_generator.seed_seq.spawn_key == name_words("actor/a/x")
    assert rng.bit_generator.seed_seq.entropy == 9
    assert rng.spawn(2)[1].random() == one.spawn(2)[1].random()
    rng.random(3), one.random(3)
    assert pickle.loads(pickle.dumps(rng)).random() == one.random()
