"""PGFL, GFL and ClusterFL: the emulator against the vectorized reference, privacy,
scheduling, and what happens when servers are slow, lossy or crash."""

import gzip
import io
from pathlib import Path

import numpy as np
import pytest

from helpers import records
from references import pgfl as reference
from netemu import Link, MessageLog, World
from netemu.algorithms.pgfl import VARIANTS, PGFLParams, build
from netemu.data.clustered import ClusteredLinearData, DigitsData, load_images, make_clustered_linear, make_digits
from netemu.kernels.admm import inter_cluster, logistic_primal, ridge_primal, ridge_system
from netemu.engine.net import links as L
from netemu.engine.net.topology import multi_server, random_connected_graph
from netemu.privacy import dynamic_total
from netemu.engine.rng import Streams

S, C = 5, 6


def setup(variant="pgfl", data=None, links=None, seed=3, log=None, **overrides):
    streams = Streams(seed)
    server_graph = random_connected_graph(S, 2.4, streams.generator("topology"))
    g = multi_server(server_graph, C)
    world = World(g, seed=seed, links=links(g) if links else None, log=log)
    clients = [n for n, r in g.nodes(data="role") if r == "client"]
    data = data or ClusteredLinearData(dim=12, samples_min=2, samples_max=6)
    make = make_digits if isinstance(data, DigitsData) else make_clustered_linear
    task = make(data, clients, world.streams)
    params = PGFLParams(**{**VARIANTS[variant], **overrides})
    build(world, params, task, N)
    return world, params, task, server_graph


N = 25


def per_round(world, metric):
    rounds = sorted({r for _, r, _, m, _ in world.metrics if m == metric})
    return [float(np.mean([v for _, r, _, m, v in world.metrics if m == metric and r == n])) for n in rounds]


def models(world):
    state = next(a for a in world.actors.values() if hasattr(a, "state")).state
    return state.W


@pytest.mark.parametrize(
    "variant, overrides",
    [("pgfl", {}), ("pgfl", {"tau": 0.0}), ("pgfl", {"tau": 0.4, "tau_decay": 0.9}), ("gfl", {}), ("clusterfl", {})],
)
def test_in_an_ideal_network_the_emulator_matches_the_reference(variant, overrides):
    world, params, task, server_graph = setup(variant, **overrides)
    world.run()
    server_of = {c: world.network.nodes[c].attrs["server"] for c in task.parts}
    W_ref, curve_ref = reference(task, server_of, server_graph, params, N)
    W = models(world)
    assert np.max(np.abs(W - W_ref)) <= 1e-10 * np.max(np.abs(W_ref))
    assert np.allclose(per_round(world, "nmsd"), curve_ref, rtol=1e-10, atol=0)


def test_logistic_pgfl_on_digits_matches_the_reference():
    world, params, task, server_graph = setup("pgfl", data=DigitsData(tasks="triplets", samples_min=3, samples_max=5))
    world.run()
    server_of = {c: world.network.nodes[c].attrs["server"] for c in task.parts}
    W_ref, curve_ref = reference(task, server_of, server_graph, params, N)
    W = models(world)
    assert np.max(np.abs(W - W_ref)) <= 1e-10 * np.max(np.abs(W_ref))
    assert np.allclose(per_round(world, "accuracy"), curve_ref, rtol=0, atol=1e-12)
    assert per_round(world, "accuracy")[-1] > 0.8  # the triplet tasks are learnable


def test_inter_cluster_learning_helps_and_the_runs_are_not_trivially_equal():
    curves = {}
    for tau in (0.0, 0.4):
        world, *_ = setup("pgfl", tau=tau, data=ClusteredLinearData(dim=12, samples_min=2, samples_max=4, noise=1.0))
        world.run()
        curves[tau] = per_round(world, "nmsd")
    assert curves[0.4][-1] < curves[0.0][-1]


# ------------------------------------------------------------------ kernels


def test_ridge_primal_update_zeroes_the_gradient_of_5_4():
    rng = np.random.default_rng(0)
    X, y, phi, w_s = rng.normal(size=(5, 8)), rng.normal(size=5), rng.normal(size=8), rng.normal(size=8)
    rho, lam = 2.0, 0.3
    w = ridge_primal(ridge_system(X, y, rho, lam), phi, w_s, rho)
    grad = -2 / 5 * X.T @ (y - X @ w) + 2 * lam * w - phi + rho * (w - w_s)
    assert np.max(np.abs(grad)) < 1e-12


def test_logistic_primal_update_converges_to_the_minimizer():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(7, 5)), (rng.random(7) > 0.5).astype(float)
    phi, w_s = rng.normal(size=5), rng.normal(size=5)
    w = logistic_primal(X, y, phi, w_s, 1.0, 0.1, np.zeros(5), newton_steps=20)
    p = 1 / (1 + np.exp(-X @ w))
    grad = X.T @ (p - y) / 7 + 0.2 * w - phi + (w - w_s)
    assert np.max(np.abs(grad)) < 1e-12


def test_logistic_primal_update_with_fewer_samples_than_features_takes_the_dense_newton_steps():
    # the low-rank (Woodbury) step of few-image clients against Newton with the d × d Hessian
    rng = np.random.default_rng(4)
    D, d, rho, lam = 3, 200, 1.0, 0.01
    X, y = rng.random(size=(D, d)), np.array([1.0, 0.0, 1.0])
    phi, w_s, w = rng.normal(size=d), rng.normal(size=d) / 10, rng.normal(size=d) / 10
    start = w.copy()
    for _ in range(5):
        p = 1 / (1 + np.exp(-X @ w))
        grad = X.T @ (p - y) / D + 2 * lam * w - phi + rho * (w - w_s)
        w = w - np.linalg.solve(X.T @ np.diag(p * (1 - p)) @ X / D + (2 * lam + rho) * np.eye(d), grad)
    fast = logistic_primal(X, y, phi, w_s, rho, lam, start, newton_steps=5)
    assert np.max(np.abs(fast - w)) <= 1e-12 * np.max(np.abs(w))


def test_inter_cluster_step_keeps_the_cluster_mean_and_tau_zero_is_identity():
    hat = np.random.default_rng(2).normal(size=(3, 4))
    out = inter_cluster(hat, 0.4)
    assert np.allclose(out.sum(axis=0), hat.sum(axis=0))
    assert np.allclose(out[0], 0.6 * hat[0] + 0.2 * (hat[1] + hat[2]))
    assert np.array_equal(inter_cluster(hat, 0.0), hat)


# ------------------------------------------------------------------ privacy and scheduling


def test_privacy_ledger_follows_the_dynamic_schedule_and_noise_has_the_stated_variance():
    world, params, task, _ = setup("pgfl", phi0=0.01, zeta=0.95, grad_bound=0.5)
    world.run()
    c = next(iter(task.parts))
    assert world.privacy.total(c) == pytest.approx(dynamic_total(0.01, 0.95, N), rel=1e-12)
    assert world.privacy.spent[c][1] == pytest.approx(0.01) and world.privacy.spent[c][N] == pytest.approx(0.01 * 0.95 ** -(N - 1))
    # the noise of one release: N(0, Δ²/(2 φ0) ζ^(n−1)) with Δ = 2 C/(ρ D)
    D = task.parts[c][1].shape[0]
    delta = 2 * 0.5 / (params.rho * D)
    noise = world.streams.generator(f"privacy/{c}/1").standard_normal(100_000) * np.sqrt(delta**2 / 0.02)
    assert np.var(noise) == pytest.approx(delta**2 / 0.02, rel=0.02)


def test_privacy_noise_costs_accuracy():
    finals = {}
    for phi0 in (0.0, 0.05, 0.005):
        world, *_ = setup("pgfl", phi0=phi0, grad_bound=0.2)
        world.run()
        finals[phi0] = per_round(world, "nmsd")[-1]
    assert finals[0.0] < finals[0.05] < finals[0.005]


def update_rounds(buf):
    return [(r["src"], r["round"]) for r in records(buf) if r["event"] == "send" and r["kind"] == "update"]


def test_scheduling_picks_the_same_clients_for_every_algorithm():
    picks = {}
    for variant in ("pgfl", "gfl", "clusterfl"):
        buf = io.BytesIO()
        world, *_ = setup(variant, scheduled=2, log=MessageLog(buf))
        world.run()
        picks[variant] = sorted(update_rounds(buf))
    assert picks["pgfl"] == picks["gfl"] == picks["clusterfl"]
    per = {}
    for src, rnd in picks["pgfl"]:
        key = (world.network.nodes[src].attrs["server"], rnd)
        per[key] = per.get(key, 0) + 1
    assert set(per.values()) == {2} and len(per) == S * N


# ------------------------------------------------------------------ slow, lossy and crashing servers


def slow_server_link(graph):
    """Every link instantaneous except server-0's outgoing server-server links: 100 s late."""
    out = {}
    for u, v, cls in graph.edges(data="link_class"):
        slow = cls == "server-server" and u == "server-0"
        out[(u, v)] = Link(L.Constant(100.0 if slow else 0.0), link_class=cls)
    return out


@pytest.mark.parametrize("policy", ["reuse", "exclude"])
def test_a_slow_server_link_delays_nobody_beyond_the_deadline(policy):
    world, params, task, server_graph = setup("pgfl", links=slow_server_link, missing=policy, server_timeout=5.0)
    result = world.run()
    assert result.complete
    for p in server_graph.neighbors(0):  # server-0's aggregates are never fresh: its neighbours go on without
        assert all(v >= 1 for a, _, _, m, v in world.metrics if m == "missing" and a == f"server-{p}")
    # the run takes about N deadlines, not N × 100 s
    assert result.virtual_time < N * (6 + params.client_timeout)


def test_reuse_and_exclude_policies_differ_only_when_aggregates_are_late():
    finals = {}
    for policy in ("reuse", "exclude"):
        world, *_ = setup("pgfl", links=slow_server_link, missing=policy, server_timeout=5.0)
        world.run()
        finals[policy] = models(world).copy()
    assert not np.array_equal(finals["reuse"], finals["exclude"])
    on_time = {}
    for policy in ("reuse", "exclude"):
        world, *_ = setup("pgfl", missing=policy)
        world.run()
        on_time[policy] = models(world).copy()
    assert np.array_equal(on_time["reuse"], on_time["exclude"])


def test_a_server_crash_mid_run_stops_nobody_and_its_clients_keep_their_models():
    world, params, task, server_graph = setup("pgfl", server_timeout=5.0)
    world.crash("server-1", at=40.0)
    result = world.run()
    assert result.complete
    crashed_rounds = {r for a, r, _, m, _ in world.metrics if a == "server-1" and m == "nmsd"}
    assert 0 < max(crashed_rounds) < N
    others = {r for a, r, _, m, _ in world.metrics if a == "server-0" and m == "nmsd"}
    assert max(others) == N
    neighbours = {f"server-{p}" for p in server_graph.neighbors(1)}
    late = {a for a, r, _, m, v in world.metrics if m == "missing" and v > 0}
    assert neighbours <= late  # (and, by the lag that waiting causes, possibly their neighbours)


def test_a_crashed_server_that_recovers_resumes_where_it_stopped():
    world, *_ = setup("pgfl", server_timeout=5.0, client_timeout=20.0)
    world.crash("server-2", at=30.0, recover_at=90.0)
    world.run()
    rounds = sorted(r for a, r, _, m, _ in world.metrics if a == "server-2" and m == "nmsd")
    assert rounds == list(range(1, N + 1))  # each iteration exactly once, before and after the crash


# ------------------------------------------------------------------ data


def test_clustered_linear_data_splits_clusters_evenly_around_a_base_model():
    streams = Streams(4)
    clients = [f"c{k}" for k in range(30)]
    task = make_clustered_linear(ClusteredLinearData(dim=20, clusters=3, spread=0.15), clients, streams)
    assert sorted(np.bincount(list(task.clusters.values()))) == [10, 10, 10]
    ratios = task.w_star / task.w_star.mean(axis=0)  # w*_q = (1 + γ_q) ⊙ w0, |γ| ≤ 0.15
    assert np.ptp(ratios, axis=0).max() <= 0.3 + 1e-12 and np.ptp(ratios, axis=0).max() > 0.05
    assert all(2 <= y.size <= 9 for _, y in task.parts.values())


def test_digit_clients_get_balanced_classes_of_their_cluster_task():
    task = make_digits(DigitsData(tasks="pairs", samples_min=2, samples_max=4), [f"c{k}" for k in range(9)], Streams(1))
    for X, y in task.parts.values():
        assert X.shape[1] == 65 and np.all(X[:, -1] == 1) and X.max() <= 1
        assert y.sum() * 2 == y.size and 4 <= y.size <= 8
    assert len(task.tests) == 3 and all(0 < y.mean() < 1 for _, y in task.tests)


def write_idx(path, array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def fake_mnist(rng, n):
    labels = np.arange(n) % 10
    images = rng.integers(0, 256, size=(n, 6, 6))
    return images, labels


def test_mnist_idx_and_npz_files_load_the_same_images(tmp_path):
    rng = np.random.default_rng(0)
    (xtr, ytr), (xte, yte) = fake_mnist(rng, 200), fake_mnist(rng, 60)
    idx = tmp_path / "mnist"
    idx.mkdir()
    write_idx(idx / "train-images-idx3-ubyte.gz", xtr)
    write_idx(idx / "train-labels-idx1-ubyte.gz", ytr)
    write_idx(idx / "t10k-images-idx3-ubyte", xte)
    write_idx(idx / "t10k-labels-idx1-ubyte", yte)
    np.savez(tmp_path / "mnist.npz", x_train=xtr, y_train=ytr, x_test=xte, y_test=yte)
    a = load_images(str(idx), 0.3, rng)
    b = load_images(str(tmp_path / "mnist.npz"), 0.3, rng)
    for u, v in zip(a[0] + a[1], b[0] + b[1]):
        assert np.array_equal(u, v)
    assert a[0][0].shape == (200, 36)
    task = make_digits(DigitsData(source=str(idx), tasks="pairs", samples_min=1, samples_max=3), ["a", "b", "c"], Streams(0))
    assert task.dim == 37


def test_bad_image_files_are_refused_with_the_file_named(tmp_path):
    bad = tmp_path / "train-images-idx3-ubyte"
    bad.write_bytes(b"\x00\x00\x0d\x03" + b"\x00" * 20)
    with pytest.raises(ValueError, match="train-images-idx3-ubyte: not an unsigned-byte IDX file"):
        load_images(str(tmp_path), 0.3, np.random.default_rng(0))
    np.savez(tmp_path / "x.npz", x_train=np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"x.npz: missing arrays \['x_test', 'y_test', 'y_train'\]"):
        load_images(str(tmp_path / "x.npz"), 0.3, np.random.default_rng(0))
    with pytest.raises(FileNotFoundError, match="nowhere.npz"):
        load_images(str(tmp_path / "nowhere.npz"), 0.3, np.random.default_rng(0))


def test_a_missing_image_source_is_reported_when_the_scenario_is_loaded(tmp_path):
    from netemu.scenario import load_scenario
    from netemu.scenario.schema import ScenarioError

    text = (Path(__file__).parent.parent / "scenarios" / "pgfl_fig5_5a.toml").read_text()
    path = tmp_path / "s.toml"
    path.write_text(text.replace('source = "sklearn"', 'source = "mnist.npz"'))
    with pytest.raises(ScenarioError, match=r"data.source = 'mnist.npz'.*existing .npz file"):
        load_scenario(path)
