"""NFL, NPFL and NPFL-RL between peers: the emulator against the vectorized reference,
the corrected primal (6.11) and dual (6.6) updates, and the policies."""

import networkx as nx
import numpy as np
import pytest

from references import npfl as reference
from netemu import World
from netemu.algorithms.npfl import VARIANTS, NPFLParams, build
from netemu.config import ConfigError
from netemu.data.clustered import ClusteredLinearData, make_clustered_linear
from netemu.kernels.npfl import Inputs, RidgeClient, primal, value, value_slope
from netemu.engine.net.topology import random_peers
from netemu.engine.rng import Streams

K, N = 15, 25


def setup(variant="npfl", seed=4, rounds=N, data=None, **overrides):
    streams = Streams(seed)
    g = random_peers(K, 5.0, streams.generator("topology"))
    world = World(g, seed=seed)
    data = data or ClusteredLinearData(dim=10, clusters=3, samples_min=5, samples_max=35, spread=0.5, validation=True)
    task = make_clustered_linear(data, list(g.nodes), world.streams)
    params = NPFLParams(**{**VARIANTS[variant], **overrides})
    build(world, params, task, rounds)
    return world, params, task


def peers(world):
    return sorted(world.actors, key=lambda k: int(k.split("-")[1]))


def per_round(world, metric):
    rounds = sorted({r for _, r, _, m, _ in world.metrics if m == metric})
    return [float(np.mean([v for _, r, _, m, v in world.metrics if m == metric and r == n])) for n in rounds]


def run_both(variant, **overrides):
    world, params, task = setup(variant, **overrides)
    world.run()
    names = peers(world)
    adj = nx.to_numpy_array(nx.Graph(world.network.graph.to_undirected()), nodelist=names)
    draws = lambda k, n, epoch: world.streams.keyed(f"sac/{k}").uniform(n, epoch)
    ref = reference(task, adj, names, params, N, draws)
    return world, names, ref


@pytest.mark.parametrize("variant, overrides", [
    ("nfl", {}), ("npfl", {"tau": 0.0}), ("npfl", {"tau": 0.2}), ("npfl-rl-dpg", {"dpg_rate": 0.05}),
    ("npfl-rl-sac", {}), ("npfl-brl-dpg", {}), ("npfl-brl-sac", {}),
])
def test_in_an_ideal_network_the_emulator_matches_the_reference(variant, overrides):
    # D_k from 5 to 35 makes compute times differ: peers run up to one iteration ahead
    world, names, (W_ref, curve_ref, taus_ref) = run_both(variant, **overrides)
    W = np.array([world.actors[k].w for k in names])
    assert np.max(np.abs(W - W_ref)) <= 1e-10 * max(1.0, np.max(np.abs(W_ref)))
    np.testing.assert_allclose(per_round(world, "test_mse"), curve_ref, rtol=1e-9)
    if variant != "nfl":
        np.testing.assert_allclose(per_round(world, "tau"), [t.mean() for t in taus_ref], rtol=1e-9, atol=1e-15)


def test_the_policies_move_tau():
    world, _, (_, _, taus) = run_both("npfl-rl-sac")
    assert np.ptp(taus[-1]) > 0  # per-client values
    assert 0 <= taus[-1].min() and taus[-1].max() <= 1


def test_the_reference_comparison_can_fail():
    world, params, task = setup("npfl", tau=0.2)
    world.run()
    names = peers(world)
    adj = nx.to_numpy_array(nx.Graph(world.network.graph.to_undirected()), nodelist=names)
    W_ref, _, _ = reference(task, adj, names, NPFLParams(tau=0.2, rho=params.rho * 1.01), N)
    assert np.max(np.abs(np.array([world.actors[k].w for k in names]) - W_ref)) > 1e-6


def _inputs(rng, Q=3, others=2):
    return Inputs(rng.standard_normal(6), rng.standard_normal((2, 6)), rng.standard_normal((others, 6)),
                  rng.standard_normal(6), 0.05, 3.0, Q)


def test_the_corrected_primal_is_the_minimizer_of_6_5():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((8, 6)), rng.standard_normal(8)
    for others in (2, 1, 0):  # every other cluster heard, one, none
        inp, a = _inputs(rng, others=others), 0.3
        w = primal(RidgeClient.of(X, y), inp, a)
        grad = (2 / 8 * X.T @ (X @ w - y) + 2 * inp.lam * w + 2 * a / (inp.Q - 1) * sum(w - o for o in inp.others)
                + inp.gamma + 2 * inp.rho * sum(w - (inp.w_own + l) / 2 for l in inp.same))
        assert np.max(np.abs(grad)) < 1e-12


def test_the_policy_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    X, y, Xv, yv = rng.standard_normal((8, 6)), rng.standard_normal(8), rng.standard_normal((8, 6)), rng.standard_normal(8)
    client, inp, h = RidgeClient.of(X, y), _inputs(rng), 1e-6
    numeric = (value(primal(client, inp, 0.2 + h), Xv, yv, inp.lam) - value(primal(client, inp, 0.2 - h), Xv, yv, inp.lam)) / (2 * h)
    assert value_slope(client, inp, 0.2, Xv, yv) == pytest.approx(numeric, rel=1e-6)


@pytest.mark.parametrize("sign, converges", [(+1, True), (-1, False)])
def test_the_printed_dual_sign_diverges_and_the_corrected_one_converges(sign, converges):
    # NFL iterated with the kernels: γ ← γ + sign · ρ Σ_l (w_k − w_l); sign −1 is (6.6) as printed
    world, p, task = setup("nfl")
    names = peers(world)
    adj = nx.to_numpy_array(nx.Graph(world.network.graph.to_undirected()), nodelist=names)
    clients = [RidgeClient.of(*task.parts[k]) for k in names]
    W, G, deg = np.zeros((K, task.dim)), np.zeros((K, task.dim)), adj.sum(axis=1)
    spread = []
    for _ in range(300):
        W = np.array([primal(c, Inputs(W[k], W[adj[k] > 0], np.zeros((0, task.dim)), G[k], p.lam / K, p.rho, 1), 0.0)
                      for k, c in enumerate(clients)])
        G = G + sign * p.rho * (deg[:, None] * W - adj @ W)
        spread.append(np.max(np.abs(W - W.mean(axis=0))))  # distance from consensus
    assert (spread[-1] < 1e-6) == converges
    assert (spread[-1] > 1e3) == (not converges)


@pytest.mark.parametrize("bad, field", [({"policy": "greedy"}, "policy"), ({"tau": 1.5}, "tau"),
                                        ({"personalized": False, "policy": "dpg"}, "policy"), ({"epochs": 0}, "epochs")])
def test_bad_parameters_are_refused(bad, field):
    with pytest.raises(ConfigError) as e:
        NPFLParams(**bad)
    assert field in str(e.value)


def test_rl_needs_validation_sets():
    with pytest.raises(ConfigError) as e:
        setup("npfl-rl-dpg", data=ClusteredLinearData(dim=10, clusters=3, samples_min=5, samples_max=35))
    assert "validation" in str(e.value)
