"""PGFL, GFL and ClusterFL: the emulator against the vectorized reference, privacy,
scheduling, and what happens when servers are slow, lossy or crash."""

import gzip
import io

import numpy as np
import pytest

from helpers import records
from references import pgfl as reference
from netemu import Link, MessageLog, World
from netemu.algorithms.pgfl import VARIANTS, PGFLParams, build
from netemu.data.clustered import ClusteredLinearData, DigitsData, load_images, make_clustered_linear, make_digits
from netemu.kernels.admm import inter_cluster, logistic_primal, ridge_primal, ridge_system
from netemu.net import links as L
from netemu.net.topology import multi_server, random_connected_graph
from netemu.privacy import dynamic_total
from netemu.rng import Streams

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


def models(world, task):
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
    W = models(world, task)
    assert np.max(np.abs(W - W_ref)) <= 1e-10 * np.max(np.abs(W_ref))
    assert np.allclose(per_round(world, "nmsd"), curve_ref, rtol=1e-10, atol=0)


def test_logistic_pgfl_on_digits_matches_the_reference():
    world, params, task, server_graph = setup("pgfl", data=DigitsData(tasks="triplets", samples_min=3, samples_max=5))
    world.run()
    server_of = {c: world.network.nodes[c].attrs["server"] for c in task.parts}
    W_ref, curve_ref = reference(task, server_of, server_graph, params, N)
    W = models(world, task)
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
