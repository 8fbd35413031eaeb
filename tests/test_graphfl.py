"""Graph-filter personalization (FedPnP, G-Fedfilt, FedProx, local): classifiers, filters,
partitions, the emulator against the vectorized reference, and late or sparse updates."""

import math

import numpy as np
import pytest

from helpers import WithTask, digits_task, graphfl_split
from references import graphfl as reference
from netemu import World
from netemu.algorithms.graphfl import VARIANTS, GraphFLParams, build
from netemu.config import ConfigError
from netemu.data.federated import FederatedDigits, make_federated_digits
from netemu.kernels.classifiers import MLP, Softmax, sgd
from netemu.kernels.graphfilter import (
    components, hard_filter, join_components, laplacian, paper_filter, position_graph, soft_filter, spectrum, statistics,
    statistics_graph, weighted_filter,
)
from netemu.engine.net import links as L
from netemu.engine.net.topology import star
from netemu.engine.rng import Streams
from netemu.wire.partial import PartialModel

K, R = 8, 6


def setup(variant="fedpnp-soft", seed=2, data=None, links=None, behaviours=None, rounds=R, **overrides):
    g = star(K)
    world = World(g, seed=seed, links=links(g) if links else None, behaviours=behaviours)
    data = data or FederatedDigits(partition="dirichlet", kappa=0.3, samples=60, test_samples=30)
    clients = [n for n, r in g.nodes(data="role") if r == "client"]
    task = make_federated_digits(data, clients, world.streams)
    params, keys = graphfl_split(variant, **overrides)
    learning = digits_task(world, task, **keys)
    build(world, params, learning, rounds)
    return world, WithTask(params, learning.p), task


def final_models(world):
    return world.actors["server"].Psi


def client_local(world, name):
    """Client `name`'s own state (GraphFLLocal), in its cohort or its own actor."""
    logic = getattr(world.hosts[name], "logic", world.hosts[name])  # a Solo actor's, or the cohort
    return logic.local[logic.member[name].index]


def test_classifier_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((7, 5)), rng.integers(0, 3, 7)
    for model in (Softmax(5, 3), MLP(5, 4, 3)):
        theta = model.init(rng) + 0.1 * rng.standard_normal(model.size)
        _, g = model.loss_grad(theta, X, y)
        h = 1e-6
        numeric = [(model.loss_grad(theta + h * e, X, y)[0] - model.loss_grad(theta - h * e, X, y)[0]) / (2 * h)
                   for e in np.eye(model.size)]
        np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-7)


def test_the_proximal_term_pulls_sgd_toward_its_anchor():
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((40, 5)), rng.integers(0, 3, 40)
    model, anchor = Softmax(5, 3), np.zeros(18)
    free = sgd(model, anchor, X, y, epochs=5, batch=8, lr=0.1, rng=np.random.default_rng(2))
    held = sgd(model, anchor, X, y, epochs=5, batch=8, lr=0.1, rng=np.random.default_rng(2), mu=5.0)
    assert 0 < np.linalg.norm(held - anchor) < 0.5 * np.linalg.norm(free - anchor)


def test_filters_reach_fedavg_and_local_training_at_their_limits():
    rng = np.random.default_rng(3)
    A = statistics_graph([statistics(rng.standard_normal((20, 4)) * (1 + k)) for k in range(6)])
    Lp, stack = spectrum(laplacian(A)), rng.standard_normal((6, 9))
    zeta = rng.uniform(1, 3, 6)
    zeta /= zeta.sum()
    np.testing.assert_allclose(weighted_filter(soft_filter(Lp, 1e9, 1e9), zeta, stack), np.tile(zeta @ stack, (6, 1)), atol=1e-7)
    np.testing.assert_allclose(weighted_filter(soft_filter(Lp, 0.0, 0.0), zeta, stack), stack, atol=1e-12)
    np.testing.assert_allclose(hard_filter(Lp, 6) @ stack, stack, atol=1e-12)
    np.testing.assert_allclose(hard_filter(Lp, 1) @ stack, np.tile(stack.mean(axis=0), (6, 1)), atol=1e-12)


def test_client_graphs():
    rng = np.random.default_rng(4)
    A = statistics_graph([statistics(rng.standard_normal((30, 3)) + shift) for shift in (0, 0, 5)])
    assert np.allclose(A, A.T) and np.all(np.diag(A) == 0) and A[0, 1] > A[0, 2]  # alike data, stronger link
    P = position_graph(np.array([[0, 0], [3, 0], [30, 0]]), d_max=5.0)
    assert P.tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize("c", [2, 4, 10])
def test_label_partitions_give_each_client_c_labels(c):
    task = make_federated_digits(FederatedDigits(partition="labels", labels_per_client=c, samples=80), [f"c{k}" for k in range(5)], Streams(1))
    for X, y in task.parts.values():
        assert len(set(y.tolist())) == c and X.shape == (80, 64) and 0 <= X.min() and X.max() <= 1
    for k, (_, y) in task.local_tests.items():
        assert set(y.tolist()) <= set(np.flatnonzero(task.proportions[k]).tolist())


def test_rooms_setup_1_shares_labels_within_a_room_and_setup_2_does_not():
    clients = [f"c{k}" for k in range(12)]
    for setup_, shared in ((1, 3), (2, None)):
        task = make_federated_digits(FederatedDigits(partition="rooms", rooms=3, labels_per_client=4, setup=setup_, samples=40),
                                     clients, Streams(2))
        rooms = {}
        for k in clients:
            rooms.setdefault(int(task.positions[k][0] // 20), []).append(set(np.flatnonzero(task.proportions[k])))
        common = [len(set.intersection(*sets)) for sets in rooms.values()]
        if shared:
            assert all(n >= shared for n in common)
        else:
            assert min(common) < 3


@pytest.mark.parametrize("variant, overrides", [
    ("fedpnp-soft", {}), ("fedpnp-soft", {"nu0": 0.0, "beta1": 0.5, "beta2": 0.1}), ("fedpnp-hard", {"tau": 3}),
    ("g-fedfilt", {"graph": "statistics", "beta1": 1.0}), ("mean-filter", {}), ("mean-filter", {"mu": 0.0}), ("identity-filter", {}),
])
def test_in_an_ideal_network_the_emulator_matches_the_reference(variant, overrides):
    world, params, task = setup(variant, **overrides)
    world.run()
    st = world.actors["server"].state
    Psi_ref = reference(task, st.clients, params, st.A, st.theta0, world.streams, R)
    assert np.max(np.abs(final_models(world) - Psi_ref)) <= 1e-10


def test_the_reference_comparison_can_fail():
    world, params, task = setup()
    world.run()
    st = world.actors["server"].state
    wrong = WithTask(GraphFLParams(**{**VARIANTS["fedpnp-soft"], "mu": 0.21}), st.training)
    assert np.max(np.abs(final_models(world) - reference(task, st.clients, wrong, st.A, st.theta0, world.streams, R))) > 1e-6


def test_fedpnp_limits_in_the_emulator():
    runs = {}
    for label, variant, overrides in [("pnp0", "fedpnp-soft", {"beta1": 0.0, "beta2": 0.0, "nu0": 0.0, "mu": 0.0}),
                                      ("local", "identity-filter", {}),
                                      ("pnp-inf", "fedpnp-soft", {"beta1": 1e9, "beta2": 1e9, "mu": 0.0}),
                                      ("hard1", "fedpnp-hard", {"tau": 1, "mu": 0.0}),
                                      ("fedavg", "mean-filter", {"mu": 0.0})]:
        world, _, _ = setup(variant, **overrides)
        world.run()
        runs[label] = final_models(world)
    np.testing.assert_allclose(runs["pnp0"], runs["local"], atol=1e-12)  # β = 0: local training
    np.testing.assert_allclose(runs["pnp-inf"], runs["fedavg"], atol=1e-6)  # β → ∞: FedAvg
    # τ = 1 keeps the plain mean; with equal dataset sizes that is FedAvg
    np.testing.assert_allclose(runs["hard1"], runs["fedavg"], atol=1e-12)


def test_late_updates_are_dropped_or_carried_over():
    slow = lambda g: {e: L.Link(L.Constant(5.0) if "client-0" in e else L.Constant(0.1)) for e in g.edges}
    out = {}
    for late in ("drop", "carry"):
        world, _, _ = setup("mean-filter", links=slow, deadline=4.0, late=late, mu=0.0)
        world.run()
        assert sum(v for _, _, _, m, v in world.metrics if m == "late") == R  # client-0 misses every deadline
        out[late] = final_models(world)
    assert not np.allclose(out["drop"], out["carry"])


def test_sparse_updates_travel_as_partial_models_and_keep_a_residual():
    world, params, task = setup("mean-filter", sparsity=0.1, mu=0.0)
    sent = []
    send = world.network.send
    from netemu.wire.codec import decode

    def spy(src, dst, kind, rnd, data):
        if kind == "update":
            sent.append(decode(data)["u"])
        return send(src, dst, kind, rnd, data)

    world.network.send = spy
    world.run()
    size = world.actors["server"].state.model.size
    assert sent and all(isinstance(u, PartialModel) and len(u.indices) == math.ceil(0.1 * size) for u in sent)
    assert np.any(client_local(world, "client-0").residual != 0)


@pytest.mark.parametrize("bad, field", [({"filter": "median"}, "filter"), ({"sparsity": 0.0}, "sparsity"),
                                        ({"late": "queue"}, "late"), ({"deadline": 0.0}, "deadline")])
def test_bad_parameters_are_refused(bad, field):
    with pytest.raises(ConfigError) as e:
        GraphFLParams(**bad)
    assert field in str(e.value)


def test_emnist_named_idx_files_feed_digits_fl(tmp_path):
    from test_pgfl import fake_mnist, write_idx

    rng = np.random.default_rng(0)
    (xtr, ytr), (xte, yte) = fake_mnist(rng, 300), fake_mnist(rng, 100)
    for name, array in (("train-images-idx3-ubyte", xtr), ("train-labels-idx1-ubyte", ytr),
                        ("test-images-idx3-ubyte", xte), ("test-labels-idx1-ubyte", yte)):
        write_idx(tmp_path / f"emnist-digits-{name}.gz", array)
    task = make_federated_digits(FederatedDigits(source=str(tmp_path), samples=20, test_samples=10), ["a", "b"], Streams(0))
    assert task.dim == 36 and task.global_test[0].shape == (100, 36)


def test_g_fedfilt_reaches_fedavg_and_local_training_at_its_limits():
    runs = {}
    for label, variant, overrides in [("inf", "g-fedfilt", {"beta1": 1e9}), ("zero", "g-fedfilt", {"beta1": 0.0}),
                                      ("fedavg", "mean-filter", {"mu": 0.0}), ("local", "identity-filter", {})]:
        world, _, _ = setup(variant, **{"graph": "statistics", **overrides} if variant == "g-fedfilt" else overrides)
        world.run()
        runs[label] = final_models(world)
    np.testing.assert_allclose(runs["inf"], runs["fedavg"], atol=1e-6)
    np.testing.assert_allclose(runs["zero"], runs["local"], atol=1e-12)


def test_clients_send_their_statistics_and_the_server_builds_the_graph_from_the_messages():
    world, _, task = setup("fedpnp-soft")
    sent = []
    send = world.network.send

    def spy(src, dst, kind, rnd, payload):
        sent.append((src, dst, kind, rnd, len(payload)))
        return send(src, dst, kind, rnd, payload)

    world.network.send = spy
    world.run()
    st = world.actors["server"].state
    stats = [s for s in sent if s[2] == "stats"]
    assert sorted(s[0] for s in stats) == sorted(st.clients) and {(s[1], s[3]) for s in stats} == {("server", 0)}
    assert all(s[4] > 4 * 64 * 8 for s in stats)  # 4 statistics x 64 features of float64 travel
    expected = statistics_graph([statistics(task.parts[k][0]) for k in st.clients])
    np.testing.assert_allclose(st.A, expected, atol=1e-12)
    # and their bytes are in the network's count beside the models and updates
    assert world.network.message_counts()["total"]["payload_bytes"] == sum(s[4] for s in sent)


def test_a_client_whose_statistics_are_lost_gets_no_edges():
    lossy = lambda g: {e: L.Link(L.Constant(0.01), loss=L.Bernoulli(1.0) if e == ("client-3", "server") else None) for e in g.edges}
    world, _, _ = setup("fedpnp-soft", links=lossy, rounds=1, deadline=5.0)
    world.run()
    st = world.actors["server"].state
    i = st.clients.index("client-3")
    assert not st.A[i].any() and not st.A[:, i].any()
    assert st.components == 2


ROOMS = FederatedDigits(partition="rooms", rooms=2, room_size=10.0, labels_per_client=4, samples=60, test_samples=30)


def test_a_disconnected_graph_averages_each_component_on_its_own_or_is_joined():
    runs, comps = {}, {}
    for label, variant, overrides in [("components", "g-fedfilt", {"beta1": 1e9, "d_max": 10.0}),
                                      ("join", "g-fedfilt", {"beta1": 1e9, "d_max": 10.0, "disconnected": "join"}),
                                      ("join0", "g-fedfilt", {"beta1": 0.0, "d_max": 10.0, "disconnected": "join"}),
                                      ("fedavg", "mean-filter", {"mu": 0.0}), ("local", "identity-filter", {})]:
        world, _, _ = setup(variant, data=ROOMS, **overrides)
        world.run()
        runs[label] = final_models(world)
        st = world.actors["server"].state
        comps[label] = components(position_graph(np.array([st.task.positions[k] for k in st.clients]), 10.0))
    label = comps["components"]
    assert label.max() >= 1  # rooms 10 m apart never connect at d_max = 10 m
    for c in range(label.max() + 1):  # mu_s -> oo: FedAvg within each component ...
        rows = runs["components"][label == c]
        np.testing.assert_allclose(rows, np.tile(rows[0], (len(rows), 1)), atol=1e-6)
    assert not np.allclose(runs["components"], runs["fedavg"], atol=1e-3)  # ... which is not the global FedAvg
    np.testing.assert_allclose(runs["join"], runs["fedavg"], atol=1e-6)  # joined: the global FedAvg
    np.testing.assert_allclose(runs["join0"], runs["local"], atol=1e-12)  # and mu_s = 0 is still local training


def test_the_printed_g_fedfilt_filter_reaches_fedavg_but_not_local_training():
    rng = np.random.default_rng(5)
    A = statistics_graph([statistics(rng.standard_normal((20, 4)) * (1 + k)) for k in range(6)])
    spec, stack = spectrum(laplacian(A)), rng.standard_normal((6, 9))
    zeta = np.full(6, 1 / 6)
    mean = zeta @ stack
    np.testing.assert_allclose(paper_filter(soft_filter(spec, 1e9), zeta, stack), np.tile(mean, (6, 1)), atol=1e-7)
    # mu_s = 0: G/K + (1 - 1/K) mean (eqs. 45-46 with an all-pass h): the own update weighs 1/K
    np.testing.assert_allclose(paper_filter(soft_filter(spec, 0.0), zeta, stack), stack / 6 + (5 / 6) * mean, atol=1e-12)


def test_components_and_joining():
    A = np.zeros((5, 5))
    A[0, 1] = A[1, 0] = A[3, 4] = A[4, 3] = 1.0
    assert components(A).tolist() == [0, 0, 1, 2, 2]
    J = join_components(A, 0.01)
    assert components(J).max() == 0 and J[0, 1] == 1.0 and J[0, 2] == 0.01 and J[0, 0] == 0.0
