"""PAO-Fed and its baselines: the emulator against the vectorized reference, and behaviour."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from references import online_fl as reference
from netemu import Link, NodeBehaviour, RoundDelay, World, star
from netemu.algorithms.online_fl import VARIANTS, OnlineFLParams, build
from netemu.data.online import OnlineData, make_online, nonlinear_target
from netemu.kernels.online import aggregate, rff, rff_features, selection
from netemu.engine.rng import Streams

K, N = 12, 60


def emulate(variant, participation=1.0, uplink=None, **overrides):
    params = OnlineFLParams(**{**VARIANTS[variant], **overrides})
    g = star(K)
    links = {(f"client-{k}", "server"): uplink() for k in range(K)} if uplink else None
    world = World(g, seed=5, links=links, behaviours={f"client-{k}": NodeBehaviour(participation=participation) for k in range(K)})
    data = make_online(OnlineData(iterations=N, group_samples=(20, 40, 60)), [f"client-{k}" for k in range(K)], world.streams)
    build(world, params, data, N)
    world.run()
    return world, params, data


def reference_of(world, params, data, participation=1.0):
    draws = world.streams.keyed("participation")
    available = lambda n: np.array([participation >= 1 or draws.uniform(f"client-{k}", n) < participation for k in range(K)])
    omega, phase = rff(4, params.rff_dim, params.kernel_width, world.streams.generator("rff"))
    return reference(data, params, N, available, omega, phase, data.test)


def assert_matches_reference(world, params, data, participation=1.0):
    w_ref, curve_ref = reference_of(world, params, data, participation)
    w = world.actors["server"].w
    assert np.linalg.norm(w - w_ref) <= 1e-10 * np.linalg.norm(w_ref)
    curve = [v for _, _, _, name, v in world.metrics if name == "mse_db"]
    assert np.allclose(curve, curve_ref, rtol=0, atol=1e-9)


@pytest.mark.parametrize("variant", ["pao-fed-u1", "pao-fed-c1", "online-fedsgd"])
def test_with_full_availability_no_delays_and_m_equal_d_the_emulator_matches_the_reference(variant):
    assert_matches_reference(*emulate(variant, m=200))


@pytest.mark.parametrize("variant", ["pao-fed-u1", "pao-fed-c0", "pao-fed-u2", "online-fedsgd"])
def test_with_partial_sharing_and_autonomous_updates_the_emulator_matches_the_reference(variant):
    assert_matches_reference(*emulate(variant, participation=0.4), participation=0.4)


def test_partial_models_with_explicit_indices_give_the_same_result():
    assert_matches_reference(*emulate("pao-fed-u1", participation=0.4, send_indices=True), participation=0.4)


def test_scheduled_partial_messages_carry_m_values_a_fiftieth_of_a_full_model():
    from netemu.wire import encode

    pao, _, _ = emulate("pao-fed-u1")
    sgd, _, _ = emulate("online-fedsgd")
    up = lambda w: w.network.message_counts()["by_link_class"]["uplink"]
    assert up(pao)["sent"] == up(sgd)["sent"]  # same participation, same number of updates
    partial, full = len(encode(np.zeros(4))), len(encode(np.zeros(200)))
    envelope = up(sgd)["bytes"] / up(sgd)["sent"] - full  # id, names, kind, round, time
    assert partial - 4 * 8 <= 16 and full - 200 * 8 <= 16  # array headers; the values are 4/200 = 2 %
    assert partial / full < 0.03
    assert up(pao)["bytes"] == pytest.approx(up(pao)["sent"] * (partial + envelope), rel=0.01)


def test_delayed_updates_are_aggregated_with_their_delay_and_expire_beyond_l_max():
    world, params, _ = emulate("pao-fed-u2", uplink=lambda: Link(RoundDelay(0.5, l_max=2), link_class="uplink"))
    delayed = sum(v for _, _, _, name, v in world.metrics if name == "delayed")
    counts = world.network.message_counts()["by_link_class"]["uplink"]
    assert delayed > 0 and counts.get("dropped_expired", 0) > 0


def test_weight_decrease_scales_delayed_deviations_by_a_to_the_l():
    w = np.zeros(6)
    fresh = (0, 0, np.array([0, 1]), np.array([1.0, 1.0]))
    late = (1, 2, np.array([2, 3]), np.array([1.0, 1.0]))
    out = aggregate(w, [fresh, late], alphas=0.2 ** np.arange(4))
    assert np.allclose(out, [1, 1, 0.04, 0.04, 0, 0])


def test_only_the_most_recent_update_of_a_client_counts_on_a_shared_entry():
    w = np.zeros(4)
    recent = (7, 0, np.array([0, 1]), np.array([1.0, 1.0]))
    old = (7, 3, np.array([1, 2]), np.array([5.0, 5.0]))
    other = (8, 3, np.array([1]), np.array([9.0]))
    out = aggregate(w, [old, recent, other], alphas=np.ones(5), overlap="client")
    # entry 1: the client's recent value; the older update keeps only entry 2; another client's entry counts
    assert np.allclose(out, [1.0, 1.0 + 9.0 / 2, 5.0 / 2, 0.0])
    out_all = aggregate(w, [old, recent, other], alphas=np.ones(5), overlap="all")
    assert np.allclose(out_all, [1.0, 1.0, 5.0 / 2, 0.0])


def test_selection_matrices_shift_by_m_each_iteration_and_by_m_k_for_uncoordinated_sharing():
    assert list(selection(10, 3, 0, 0, True)) == [0, 1, 2]
    assert list(selection(10, 3, 1, 5, True)) == [3, 4, 5]
    assert list(selection(10, 3, 1, 2, False)) == [9, 0, 1]


def aggregate_one_update_at_a_time(w, updates, alphas, overlap):
    """Eqs. (4.13)-(4.14) written out, one `delta[sel] += ...` per update: the specification
    the vectorized `aggregate` must reproduce bit for bit."""
    groups = {}
    for u in updates:
        groups.setdefault(u[1], []).append(u)
    delta, covered = np.zeros_like(w), {}
    for l in sorted(groups):
        alpha = alphas[l] if l < alphas.size else 0.0
        for client, _, idx, values in groups[l]:
            mask = covered.get(client if overlap == "client" else -1)
            keep = slice(None) if mask is None else ~mask[idx]
            sel = idx[keep]
            if alpha:
                delta[sel] += alpha * (values[keep] - w[sel]) / len(groups[l])
        for client, _, idx, _ in groups[l]:
            covered.setdefault(client if overlap == "client" else -1, np.zeros(w.size, dtype=bool))[idx] = True
    return w + delta


@settings(max_examples=60, deadline=None)
@given(hs.integers(0, 2**32 - 1), hs.integers(0, 12), hs.sampled_from(["client", "all"]))
def test_aggregation_in_one_scatter_per_delay_equals_one_update_at_a_time_bit_for_bit(seed, count, overlap):
    rng = np.random.default_rng(seed)
    d = 9
    w = rng.standard_normal(d)
    updates = []
    for _ in range(count):  # clients 0..3, delays 0..4 (4 is beyond l_max = 3: weight 0), distinct indices
        idx = rng.permutation(d)[: rng.integers(1, d + 1)]
        updates.append((int(rng.integers(4)), int(rng.integers(5)), idx, rng.standard_normal(idx.size)))
    alphas = 0.3 ** np.arange(4)
    assert np.array_equal(aggregate(w, updates, alphas, overlap), aggregate_one_update_at_a_time(w, updates, alphas, overlap))


@pytest.mark.parametrize("coordinated", [True, False])
def test_the_shared_index_arrays_are_the_selection_matrices(coordinated):
    world, params, data = emulate("pao-fed-c1" if coordinated else "pao-fed-u1")
    state = world.actors["server"].state
    for n in range(0, 130, 7):  # past d / m = 50 iterations: the shifts wrap around
        for k in range(K):
            assert np.array_equal(state.selected(n, k), selection(params.rff_dim, params.m, n, k, coordinated))
    with pytest.raises(ValueError, match="read-only"):
        state.selected(0, 0)[0] = 1


@pytest.mark.parametrize("coordinated", [True, False])
def test_the_selection_rows_of_many_clients_are_their_selection_matrices(coordinated):
    world, params, _ = emulate("pao-fed-c1" if coordinated else "pao-fed-u1", m=7)
    state, ks = world.actors["server"].state, np.arange(K)
    for n in range(0, 130, 9):  # the shifts wrap around d = 200
        rows = state.selection_rows(n, ks)
        assert all(np.array_equal(rows[k], selection(params.rff_dim, params.m, n, k, coordinated)) for k in range(K))
        assert np.array_equal((rows + params.m) % params.rff_dim, state.selection_rows(n + 1, ks))  # M⁽ⁿ⁺¹⁾: the next shift


@pytest.mark.parametrize("inputs", [1, 3, 4, 7])
def test_features_of_stacked_single_rows_are_each_rows_own_bit_for_bit(inputs):
    # one 1 x L row alone and a stack of them make the same BLAS call per row (a plain
    # R x L matrix would not: gemm may round differently), so batching keeps the logs
    rng = np.random.default_rng(inputs)
    omega, phase = rff(inputs, 200, 1.0, rng)
    X = rng.standard_normal((300, inputs))
    stacked = rff_features(X[:, None, :], omega, phase)[:, 0]
    assert all(np.array_equal(stacked[i], rff_features(X[i : i + 1], omega, phase)[0]) for i in range(len(X)))


def test_a_client_computes_its_features_as_a_stacked_call_would_bit_for_bit():
    world, _, _ = emulate("pao-fed-u1")
    state, n = world.actors["server"].state, 7
    ks = [int(k) for k in state.stream.with_data(n)]
    assert len(ks) >= 2
    X, y = state.stream.samples(n, np.array(ks))
    stacked = rff_features(X[:, None, :], state.omega, state.phase)[:, 0]  # as the server computed them once for its clients
    for i, k in enumerate(ks):
        z, y1 = state.feature(n, k)
        assert np.array_equal(z, stacked[i]) and y1 == y[i]


@pytest.mark.parametrize("variant, overrides", [("pao-fed-u1", {}), ("pao-fed-c0", {}), ("pao-fed-u1", {"send_indices": True}),
                                                ("online-fedsgd", {})])
def test_the_server_announces_its_model_without_reading_the_clients_models(variant, overrides):
    # the clients' rows of W are theirs: the clients compute their steps, the server only sends
    world, _, _ = emulate(variant, **overrides)
    state = world.actors["server"].state
    n, ks = 7, [int(k) for k in state.stream.with_data(7)]
    W, state.W = state.W, None  # any read of the clients' models by the server raises
    try:
        payloads = state.announce(n, ks, np.arange(200.0))
    finally:
        state.W = W
    assert len(payloads) == len(ks)


def test_the_stream_gives_each_client_its_own_next_sample_at_its_arrival_iterations():
    data = make_online(OnlineData(iterations=N, group_samples=(20, 40, 60)), [f"c{k}" for k in range(5)], Streams(3))
    stream = data.stream()
    seen = [0] * 5
    for n in range(N):
        ks = stream.with_data(n)
        assert list(ks) == [k for k in range(5) if n in data.arrival[k]]
        X, y = stream.samples(n, ks)
        for row, k in enumerate(ks):
            assert np.array_equal(X[row], data.inputs[k][seen[k]]) and y[row] == data.outputs[k][seen[k]]
            x1, y1 = stream.sample(n, k)
            assert np.array_equal(x1, data.inputs[k][seen[k]][None, :]) and y1 == y[row]
            seen[k] += 1
    assert seen == [len(a) for a in data.arrival]


@pytest.mark.parametrize("formula, expected", [("product", 1.0 + (0.8 - 0.5 * np.exp(-1.0)) * 2.0), ("printed", 1.0 + 0.8 - 0.5 * np.exp(-1.0) * 2.0)])
def test_both_readings_of_the_target_formula(formula, expected):
    x = np.array([[1.0, 1.0, 2.0, 0.0]])  # x1 = 1, x2 = 1, x3 = 2, x4 = 0
    assert nonlinear_target(x, formula)[0] == pytest.approx(expected)


def test_a_bad_variant_parameter_names_its_field():
    with pytest.raises(ValueError, match="m: between 1 and rff_dim = 200"):
        dataclasses.replace(OnlineFLParams(), m=0)


def test_a_csv_stream_replaces_the_synthetic_data(tmp_path):
    from netemu.engine.rng import Streams

    rows = np.column_stack([np.arange(40.0), np.arange(40.0) * 2, np.arange(40.0) + 0.5])
    path = tmp_path / "stream.csv"
    np.savetxt(path, rows, delimiter=",", header="x1,x2,y", comments="")
    data = make_online(OnlineData(iterations=30, test_samples=10, csv=str(path)), ["a", "b"], Streams(0))
    assert data.inputs[0].shape == (15, 2) and list(data.outputs[1][:2]) == [1.5, 3.5]
    assert data.test[0].shape == (10, 2) and data.test[1][0] == 30.5
    assert all(np.all(np.diff(a) > 0) for a in data.arrival)


def test_a_bad_csv_names_the_file(tmp_path):
    from netemu.engine.rng import Streams

    path = tmp_path / "bad.csv"
    path.write_text("x,y\n1,oops\n")
    with pytest.raises(ValueError, match="bad.csv"):
        make_online(OnlineData(csv=str(path)), ["a"], Streams(0))
