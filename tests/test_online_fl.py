"""PAO-Fed and its baselines: the emulator against the vectorized reference, and behaviour."""

import dataclasses

import numpy as np
import pytest

from references import online_fl as reference
from netemu import Link, NodeBehaviour, RoundDelay, World, star
from netemu.algorithms.online_fl import VARIANTS, OnlineFLParams, build
from netemu.data.online import OnlineData, make_online, nonlinear_target
from netemu.kernels.online import aggregate, rff, selection

K, N = 12, 60


def emulate(variant, participation=1.0, uplink=None, **overrides):
    params = OnlineFLParams(**{**VARIANTS[variant], **overrides})
    g = star(K)
    links = {("client-%d" % k, "server"): uplink() for k in range(K)} if uplink else None
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


@pytest.mark.parametrize("formula, expected", [("product", 1.0 + (0.8 - 0.5 * np.exp(-1.0)) * 2.0), ("printed", 1.0 + 0.8 - 0.5 * np.exp(-1.0) * 2.0)])
def test_both_readings_of_the_target_formula(formula, expected):
    x = np.array([[1.0, 1.0, 2.0, 0.0]])  # x1 = 1, x2 = 1, x3 = 2, x4 = 0
    assert nonlinear_target(x, formula)[0] == pytest.approx(expected)


def test_a_bad_variant_parameter_names_its_field():
    with pytest.raises(ValueError, match="m: between 1 and rff_dim = 200"):
        dataclasses.replace(OnlineFLParams(), m=0)


def test_a_csv_stream_replaces_the_synthetic_data(tmp_path):
    from netemu.rng import Streams

    rows = np.column_stack([np.arange(40.0), np.arange(40.0) * 2, np.arange(40.0) + 0.5])
    path = tmp_path / "stream.csv"
    np.savetxt(path, rows, delimiter=",", header="x1,x2,y", comments="")
    data = make_online(OnlineData(iterations=30, test_samples=10, csv=str(path)), ["a", "b"], Streams(0))
    assert data.inputs[0].shape == (15, 2) and list(data.outputs[1][:2]) == [1.5, 3.5]
    assert data.test[0].shape == (10, 2) and data.test[1][0] == 30.5
    assert all(np.all(np.diff(a) > 0) for a in data.arrival)


def test_a_bad_csv_names_the_file(tmp_path):
    from netemu.rng import Streams

    path = tmp_path / "bad.csv"
    path.write_text("x,y\n1,oops\n")
    with pytest.raises(ValueError, match="bad.csv"):
        make_online(OnlineData(csv=str(path)), ["a"], Streams(0))
