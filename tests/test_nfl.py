"""zCDP-NFL and its baselines between peers: the emulator against the vectorized
reference, the centralized solutions, the noise on the wire, and lossy or crashing peers."""

import math

import networkx as nx
import numpy as np
import pytest

from references import nfl as reference
from netemu import World
from netemu.algorithms.nfl import VARIANTS, NFLParams, build
from netemu.config import ConfigError
from netemu.data.synthetic import LinearData, make_linear
from netemu.kernels.nfl import Objective, centralized
from netemu.engine.net import links as L
from netemu.engine.net.topology import random_peers
from netemu.privacy import dynamic_total, epsilon_from_zcdp
from netemu.engine.rng import Streams
from netemu.wire.codec import decode

K, N = 12, 30


def setup(variant="zcdp-nfl", seed=5, links=None, labels="real", rounds=N, equal=False, **overrides):
    streams = Streams(seed)
    g = random_peers(K, 3.0, streams.generator("topology"))
    world = World(g, seed=seed, links=links(g) if links else None)
    data = LinearData(dim=5, samples_min=15 if equal else 10, samples_max=15 if equal else 20, noise=0.5, labels=labels)
    task = make_linear(data, list(g.nodes), world.streams)
    params = NFLParams(**{**VARIANTS[variant], **overrides})
    build(world, params, task, rounds)
    return world, params, task


def peers(world):
    return sorted(world.actors, key=lambda k: int(k.split("-")[1]))


def adjacency(world):
    names = peers(world)
    return nx.to_numpy_array(nx.Graph(world.network.graph.to_undirected()), nodelist=names)


def error_curve(world):
    rounds = sorted({r for _, r, _, m, _ in world.metrics if m == "error"})
    return [float(np.mean([v for _, r, _, m, v in world.metrics if m == "error" and r == n])) for n in rounds]


@pytest.mark.parametrize(
    "variant, overrides",
    [
        ("zcdp-nfl", {}),
        ("zcdp-nfl", {"objective": "lad"}),
        ("zcdp-nfl", {"objective": "ridge", "eta_power": 0.0}),
        ("zcdp-nfl", {"objective": "logistic"}),
        ("zcdp-grad-nfl", {"alpha_power": 0.5}),
        ("p-admm", {}),
        ("zcdp-nfl", {"phi1": 0.01}),
        ("epsdelta-nfl", {"phi1": 0.01, "objective": "lad"}),
        ("zcdp-grad-nfl", {"phi1": 0.01}),
        ("p-admm", {"phi1": 0.01, "zeta": 0.9}),
    ],
)
def test_in_an_ideal_network_the_emulator_matches_the_reference(variant, overrides):
    labels = "binary" if overrides.get("objective") == "logistic" else "real"
    world, params, task = setup(variant, labels=labels, **overrides)
    world.run()
    names = peers(world)
    state = world.actors[names[0]].state
    normals = lambda n: np.array([world.streams.generator(f"privacy/{k}/{n}").standard_normal(5) for k in names])
    W_ref, history = reference([task.parts[k] for k in names], adjacency(world), params, state.objective, N, normals)
    W = np.array([world.actors[k].w for k in names])
    assert np.max(np.abs(W - W_ref)) <= 1e-10 * max(1.0, np.max(np.abs(W_ref)))
    ref_error = [K * np.mean(np.sum((H - state.w_c) ** 2, axis=1)) / np.sum(state.w_c**2) for H in history]
    np.testing.assert_allclose(error_curve(world), ref_error, rtol=1e-8)


def test_the_reference_comparison_can_fail():
    world, params, task = setup()
    world.run()
    names = peers(world)
    state = world.actors[names[0]].state
    wrong = NFLParams(rho=params.rho * 1.01)
    W_ref, _ = reference([task.parts[k] for k in names], adjacency(world), wrong, state.objective, N)
    W = np.array([world.actors[k].w for k in names])
    assert np.max(np.abs(W - W_ref)) > 1e-6


@pytest.mark.parametrize("variant", ["p-admm", "zcdp-nfl"])
def test_without_noise_ridge_admm_converges_to_the_centralized_solution(variant):
    world, _, _ = setup(variant, rounds=300, objective="ridge")
    world.run()
    curve = error_curve(world)
    assert curve[-1] < 1e-9 < curve[10]


def _parts(seed=0, k=6, m=15, d=4, binary=False):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    out = []
    for _ in range(k):
        X = rng.standard_normal((m, d))
        y = X @ w + 0.3 * rng.standard_normal(m)
        out.append((X, (y > 0).astype(float) if binary else y))
    return out


def _total(obj, parts, w):
    return sum(obj.local(X, y, w, len(parts)) for X, y in parts)


@pytest.mark.parametrize("obj", [Objective("ridge", l2=0.5), Objective("elastic_net", l1=0.3, l2=1.0),
                                 Objective("lad"), Objective("logistic", l2=0.1)])
def test_the_centralized_solution_is_optimal(obj):
    parts = _parts(binary=obj.name == "logistic")
    w_c = centralized(obj, parts)
    best = _total(obj, parts, w_c)
    rng = np.random.default_rng(1)
    for scale in (1e-2, 1e-4):  # no nearby point is better (the objectives are convex)
        for _ in range(200):
            assert _total(obj, parts, w_c + scale * rng.standard_normal(w_c.size)) >= best - 1e-12
    if obj.name in ("ridge", "logistic"):  # smooth: the gradient vanishes
        grad = sum(obj.local_grad(X, y, w_c, len(parts)) for X, y in parts)
        assert np.max(np.abs(grad)) < 1e-9


@pytest.mark.parametrize("obj", [Objective("ridge", l2=0.5), Objective("logistic", l2=0.1), Objective("elastic_net", l1=0.3, l2=1.0)])
def test_gradients_match_finite_differences(obj):
    X, y = _parts(binary=obj.name == "logistic")[0]
    w = np.array([0.3, -0.7, 1.1, 0.4])  # away from kinks of ‖w‖₁
    h = 1e-6
    numeric = [(obj.local(X, y, w + h * e, 3) - obj.local(X, y, w - h * e, 3)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(obj.local_grad(X, y, w, 3), numeric, rtol=1e-6, atol=1e-8)


def test_the_noise_on_the_wire_follows_the_schedule():
    phi1, zeta = 0.05, 0.9
    world, params, task = setup(phi1=phi1, zeta=zeta, rounds=20)
    sent = []
    send = world.network.send

    def spy(src, dst, kind, rnd, data):
        sent.append((src, rnd, decode(data)["w"] - world.actors[src].w))
        return send(src, dst, kind, rnd, data)

    world.network.send = spy
    world.run()
    deg = {k: len(world.network.neighbours(k)) for k in world.actors}
    z = []
    for src, n, noise in sent:  # each message carries w_k + ξ with ξ ~ N(0, σ² I)
        eta = params.eta0 / n**params.eta_power
        sens = 2 * params.grad_bound / (task.parts[src][1].size * (2 * params.rho * deg[src] + 1 / eta))
        var = sens**2 / (2 * phi1 * zeta ** -(n - 1))
        z.append(noise / math.sqrt(var))
    z = np.concatenate(z)
    assert z.size > 1000 and abs(np.var(z) - 1) < 0.1 and abs(np.mean(z)) < 0.1
    for k in world.actors:  # the accountant: Σ_n φ1 ζ^−(n−1) for each peer
        assert world.privacy.total(k) == pytest.approx(dynamic_total(phi1, zeta, 20), rel=1e-12)


def test_epsilon_delta_calibration_spends_the_same_budget_with_more_noise():
    phi1, zeta, T = 0.01, 0.95, 20
    zc, _, _ = setup("zcdp-nfl", phi1=phi1, zeta=zeta, rounds=T)
    ed, _, _ = setup("epsdelta-nfl", phi1=phi1, zeta=zeta, rounds=T)
    state = ed.actors["peer-0"].state
    eps = epsilon_from_zcdp(dynamic_total(phi1, zeta, T), 1e-5)
    assert math.fsum(state.noise.epsilons) == pytest.approx(eps)  # Theorem 2.2: ε_n add up to the budget
    for n in (1, 10, 20):
        assert state.noise.variance(0.1, n) > zc.actors["peer-0"].state.noise.variance(0.1, n)


def test_lossy_links_and_a_crash_stop_nobody():
    lossy = lambda g: {e: L.Link(L.Constant(0.1), loss=L.Bernoulli(0.3)) for e in g.edges}
    results = {}
    for missing in ("reuse", "exclude"):
        world, _, _ = setup(links=lossy, missing=missing, timeout=5.0, rounds=60, objective="ridge")
        world.crash("peer-3", at=20.0)
        world.run()
        late = [v for _, _, _, m, v in world.metrics if m == "missing"]
        assert sum(late) > 0
        assert max(r for a, r, _, m, _ in world.metrics if m == "error" and a != "peer-3") == 60
        results[missing] = error_curve(world)[-1]
    assert results["reuse"] != results["exclude"]


@pytest.mark.parametrize("sync", [True, False])
def test_dual_steps_pair_same_iteration_models_so_the_duals_sum_to_zero(sync):
    # links slower than nothing, equal compute times: asynchronous peers never wait and
    # always see their neighbours' models one iteration old, yet converge
    slow = lambda g: {e: L.Link(L.Constant(0.5)) for e in g.edges}
    world, _, _ = setup(links=slow, rounds=80, sync=sync, objective="ridge", equal=True)
    world.run()
    assert world.env.now == (120.0 if not sync else 160.0)  # 80 × 1.5 s of compute, + 0.5 s waits when synchronous
    assert np.max(np.abs(sum(a.gamma for a in world.actors.values()))) < 1e-12  # Σ_k γ_k = 0
    curve = error_curve(world)
    assert curve[-1] < 1e-4 * curve[0]


@pytest.mark.parametrize("bad, field", [({"step": "exact", "objective": "lad"}, "step"),
                                        ({"sync": False, "missing": "exclude"}, "missing"),
                                        ({"calibration": "renyi"}, "calibration"),
                                        ({"objective": "hinge"}, "objective")])
def test_bad_parameters_are_refused(bad, field):
    with pytest.raises(ConfigError) as e:
        NFLParams(**bad)
    assert field in str(e.value)


def test_a_peer_running_an_iteration_ahead_does_not_mix_iterations():
    # peer-0 computes fast and only waits for peer-1; peer-1 also waits for the slow peer-2,
    # so peer-0's model of iteration n + 1 reaches peer-1 while it still collects iteration n.
    from netemu.data.synthetic import LinearTask
    from netemu.engine.net.topology import from_graph

    g = from_graph(nx.relabel_nodes(nx.path_graph(3), lambda k: f"peer-{k}"))
    rng = np.random.default_rng(0)
    w = rng.standard_normal(3)
    parts = {}
    for k, m in enumerate((5, 10, 200)):
        X = rng.standard_normal((m, 3))
        parts[f"peer-{k}"] = (X, X @ w + 0.1 * rng.standard_normal(m))
    world = World(g, seed=1)
    params = NFLParams(objective="ridge", step="exact")
    build(world, params, LinearTask(w, parts, parts["peer-0"]), 10)
    ahead = []
    send = world.network.send
    world.network.send = lambda src, dst, kind, rnd, data: (ahead.append(rnd > world.actors[dst].done + 1), send(src, dst, kind, rnd, data))[1]
    world.run()
    assert any(ahead)
    names = ["peer-0", "peer-1", "peer-2"]
    state = world.actors["peer-0"].state
    W_ref, _ = reference([parts[k] for k in names], nx.to_numpy_array(nx.path_graph(3)), params, state.objective, 10)
    assert np.max(np.abs(np.array([world.actors[k].w for k in names]) - W_ref)) <= 1e-10


def test_lost_models_cost_both_ends_the_same_dual_pair():
    # two links drop everything for a while; receipts make the sender retract the pairs
    # its lost models would have mirrored, so the duals still sum to zero afterwards
    def links(g):
        out = {e: L.Link(L.Constant(0.1)) for e in g.edges}
        for e in sorted(g.edges)[:2]:
            out[e] = L.Link(L.Constant(0.1), outages=[(3.0, 20.0)])
        return out

    world, _, _ = setup(links=links, rounds=60, objective="ridge", equal=True)
    world.run()
    assert sum(v for _, _, _, m, v in world.metrics if m == "missing") > 0
    assert np.max(np.abs(sum(a.gamma for a in world.actors.values()))) < 1e-12
    assert error_curve(world)[-1] < 1e-6
