"""FedPnP's personalized baselines in the graph-filter family: the pFedMe, Per-FedAvg and
FedBN kernels against their defining properties, and the emulator against the vectorized
reference in an ideal network."""

from dataclasses import dataclass

import numpy as np
import pytest

from helpers import WithTask, digits_task, graphfl_split
from references import personal_fl as reference
from test_graphfl import client_local
from netemu import World
from netemu.algorithms import graphfl_params
from netemu.algorithms.graphfl_params import check_task
from netemu.tasks import supervised
from netemu.tasks.supervised import CNNParams, MLPParams, SoftmaxParams
from netemu.algorithms.graphfl import VARIANTS, GraphFLParams, build
from netemu.config import ConfigError
from netemu.data.federated import FederatedDigits, make_federated_digits
from netemu.kernels.classifiers import Softmax, sgd
from netemu.kernels.personal import batch_stream, batches, merge_kept, perfedavg, personalize, pfedme
from netemu.engine.net.topology import star
from netemu.wire.codec import decode

K, R = 6, 4


@dataclass(frozen=True)
class BiasKept(Softmax):
    """A stand-in for a batch-norm model: its biases are the entries FedBN keeps local."""

    @property
    def local_mask(self) -> np.ndarray:
        mask = np.zeros(self.size, dtype=bool)
        mask[self.d * self.C :] = True
        return mask


def problem(seed=0, n=40, d=6, C=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(0, C, n)
    model = Softmax(d, C)
    return model, 0.3 * rng.standard_normal(model.size), X, y


def setup(variant, seed=3, **overrides):
    g = star(K)
    world = World(g, seed=seed)
    clients = [n for n, r in g.nodes(data="role") if r == "client"]
    task = make_federated_digits(FederatedDigits(partition="dirichlet", kappa=0.3, samples=50, test_samples=20),
                                 clients, world.streams)
    params, keys = graphfl_split(variant, **overrides)
    learning = digits_task(world, task, **keys)
    build(world, params, learning, R)
    return world, WithTask(params, learning.p), task


@pytest.fixture
def bias_kept(monkeypatch):
    """The softmax task builds BiasKept, and FedBN accepts it."""
    monkeypatch.setattr(supervised, "Softmax", BiasKept)
    without_fedbn_check = tuple(c for c in graphfl_params.TASK_CHECKS if "keep_local" not in c[1])
    monkeypatch.setattr(graphfl_params, "TASK_CHECKS", without_fedbn_check)


# ---------------------------------------------------------------- kernels


def test_batch_stream_takes_the_batches_of_one_permutation_after_another():
    stream = batch_stream(10, 4, np.random.default_rng(2))
    taken = [next(stream) for _ in range(6)]
    rng = np.random.default_rng(2)
    expected = [*batches(10, 4, rng), *batches(10, 4, rng)]
    assert [b.tolist() for b in taken] == [b.tolist() for b in expected]
    assert [len(b) for b in taken] == [4, 4, 2, 4, 4, 2]


def test_pfedme_with_a_stiff_proximal_term_takes_fedavgs_gradient_step():
    # θ̂ = w − ∇f(θ̂)/λ, so w − ηλ(w − θ̂) = w − η∇f(θ̂) → w − η∇f(w) as λ → ∞; 40 samples in
    # batches of 8 are 5 batches a pass, so R = 10 rounds of one batch are sgd's 2 epochs
    model, w, X, y = problem()
    lam = 1e6
    w_local, theta = pfedme(model, w, X, y, rounds=10, batch=8, lr=0.1, lam=lam, inner_steps=3, personal_lr=1 / lam,
                            rng=np.random.default_rng(5))
    plain = sgd(model, w, X, y, epochs=2, batch=8, lr=0.1, rng=np.random.default_rng(5))
    assert np.max(np.abs(w_local - plain)) < 1e-5
    assert np.max(np.abs(w_local - w)) > 1e-2  # the comparison is not between two unmoved models


def test_pfedme_takes_one_mini_batch_per_local_round():
    model, w, X, y = problem()
    kw = {"batch": 8, "lr": 0.1, "lam": 15.0, "inner_steps": 5, "personal_lr": 0.01}
    one, _ = pfedme(model, w, X, y, rounds=1, rng=np.random.default_rng(5), **kw)
    rows = batches(len(y), 8, np.random.default_rng(5))[0]
    alone, _ = pfedme(model, w, X[rows], y[rows], rounds=1, rng=np.random.default_rng(0), **{**kw, "batch": len(rows)})
    np.testing.assert_allclose(one, alone, rtol=0, atol=1e-15)  # the first round saw the first batch only
    two, _ = pfedme(model, w, X, y, rounds=2, rng=np.random.default_rng(5), **kw)
    assert np.max(np.abs(two - one)) > 1e-4  # and a second round moves on


def test_pfedme_solves_the_inner_problem_and_steps_toward_its_solution():
    model, w, X, y = problem()
    lam, lr = 2.0, 0.05
    w_local, theta = pfedme(model, w, X, y, rounds=1, batch=len(y), lr=lr, lam=lam, inner_steps=400, personal_lr=0.2,
                            rng=np.random.default_rng(0))
    _, g = model.loss_grad(theta, X, y)
    assert np.linalg.norm(g + lam * (theta - w)) < 1e-9  # θ̂ = argmin f(θ) + λ/2 ‖θ − w‖² (one batch, one round)
    np.testing.assert_allclose(w_local, w - lr * lam * (w - theta), rtol=0, atol=1e-15)
    assert np.linalg.norm(theta - w) > 1e-2


def test_perfedavg_with_alpha_zero_steps_by_beta_on_every_second_batch():
    # α = 0: w ← w − β∇f(w; D'), D' the second batch of each round's pair (D, D'); 40 samples
    # in batches of 10 are 4 a pass, so 6 rounds take 3 passes and use batches 2, 4 of each
    model, w, X, y = problem()
    rng = np.random.default_rng(9)
    outer = [b for _ in range(3) for b in batches(len(y), 10, rng)[1::2]]
    expected = w.copy()
    for rows in outer:
        expected = expected - 0.2 * model.loss_grad(expected, X[rows], y[rows])[1]
    maml = perfedavg(model, w, X, y, rounds=6, batch=10, beta=0.2, alpha=0.0, rng=np.random.default_rng(9))
    np.testing.assert_allclose(maml, expected, rtol=0, atol=1e-14)
    assert np.max(np.abs(maml - w)) > 1e-2


def meta_gradient(model, w, X, y, alpha, h=1e-5):
    """∇F(w) for F(w) = f(w − α∇f(w)), by central differences of loss values."""
    def F(v):
        return model.loss_grad(v - alpha * model.loss_grad(v, X, y)[1], X, y)[0]
    return np.array([(F(w + h * e) - F(w - h * e)) / (2 * h) for e in np.eye(w.size)])


def test_perfedavg_hf_follows_the_maml_gradient_and_fo_drops_its_hessian_term():
    model, w, X, y = problem()
    alpha, lr = 0.8, 1.0
    exact = meta_gradient(model, w, X, y, alpha)
    steps = {order: (w - perfedavg(model, w, X, y, rounds=1, batch=len(y), beta=lr, alpha=alpha,
                                   rng=np.random.default_rng(0), order=order)) / lr for order in ("hf", "fo")}
    # central differences of F (h = 1e-5) and of ∇f (δ = 1e-3) are both accurate to ~1e-7 here
    assert np.max(np.abs(steps["hf"] - exact)) < 1e-6
    assert np.max(np.abs(steps["fo"] - exact)) > 1e-3


def test_personalize_takes_one_local_gradient_step():
    model, w, X, y = problem()
    np.testing.assert_array_equal(personalize(model, w, X, y, 0.0), w)
    stepped = personalize(model, w, X, y, 0.1)
    np.testing.assert_allclose(stepped, w - 0.1 * model.loss_grad(w, X, y)[1], rtol=0, atol=0)
    assert model.loss_grad(stepped, X, y)[0] < model.loss_grad(w, X, y)[0]


def test_merge_kept_puts_the_shared_entries_around_the_kept_ones():
    own = np.array([10.0, 11.0, 12.0, 13.0])
    mask = np.array([False, True, False, True])
    np.testing.assert_array_equal(merge_kept(np.array([1.0, 2.0]), own, mask), [1.0, 11.0, 2.0, 13.0])


# ---------------------------------------------------------------- emulator


CASES = [
    ("pfedme", {}), ("pfedme", {"server_mix": 0.5, "inner_steps": 2}),
    ("perfedavg", {}), ("perfedavg", {"maml": "hf", "alpha": 0.1}),
    ("fedbn", {}),
]


@pytest.mark.parametrize("variant, overrides", CASES)
def test_in_an_ideal_network_the_emulator_matches_the_reference(variant, overrides, bias_kept):
    world, params, task = setup(variant, **overrides)
    world.run()
    server = world.actors["server"]
    st = server.state
    Psi, used = reference(task, st.clients, params, st.theta0, world.streams, R, kept=st.kept)
    shared = slice(None) if st.kept is None else ~st.kept  # FedBN: the server's copy of kept entries is never used
    assert np.max(np.abs(server.Psi[:, shared] - Psi[:, shared])) <= 1e-10
    assert np.max(np.abs(server.used_models() - used)) <= 1e-10


@pytest.mark.parametrize("variant, wrong", [("pfedme", {"lam": 14.9}), ("perfedavg", {"maml": "hf"}), ("fedbn", {"keep_local": False})])
def test_the_reference_comparison_can_fail(variant, wrong, bias_kept):
    world, params, task = setup(variant)
    world.run()
    server = world.actors["server"]
    st = server.state
    other = WithTask(GraphFLParams(**{**VARIANTS[variant], **wrong}), st.training)
    _, used = reference(task, st.clients, other, st.theta0, world.streams, R, kept=None if wrong.get("keep_local") is False else st.kept)
    assert np.max(np.abs(server.used_models() - used)) > 1e-6


def test_personalized_models_differ_from_the_shared_one():
    for variant in ("pfedme", "perfedavg"):
        world, _, _ = setup(variant)
        world.run()
        server = world.actors["server"]
        Psi, used = server.Psi, server.used_models()
        assert np.allclose(Psi, Psi[0])  # FedAvg's server: one model for all
        assert not np.allclose(used, used[0])  # each client uses its own


def test_fedbn_kept_entries_never_travel_and_stay_per_client(bias_kept):
    world, params, task = setup("fedbn")
    sizes = {"model": set(), "update": set()}
    send = world.network.send

    def spy(src, dst, kind, rnd, data):
        if kind in sizes:
            sizes[kind].add(np.asarray(next(iter(decode(data).values()))).size)
        return send(src, dst, kind, rnd, data)

    world.network.send = spy
    world.run()
    st = world.actors["server"].state
    assert sizes == {"model": {st.shared_size}, "update": {st.shared_size}}
    assert st.shared_size == st.model.size - task.classes
    used = world.actors["server"].used_models()
    assert np.allclose(used[:, ~st.kept], used[0, ~st.kept])  # shared entries: averaged
    assert not np.allclose(used[:, st.kept], used[0, st.kept])  # kept entries: each client's own
    np.testing.assert_array_equal(used[0, st.kept], client_local(world, st.clients[0]).own[st.kept])


def test_fedbn_sends_fewer_bytes_than_fedavg(bias_kept):
    def bytes_of(variant, **o):
        world, _, _ = setup(variant, **o)
        total = 0
        send = world.network.send

        def spy(src, dst, kind, rnd, data):
            nonlocal total
            total += len(data) if kind in ("model", "update") else 0
            return send(src, dst, kind, rnd, data)

        world.network.send = spy
        world.run()
        return total

    fedbn, fedavg = bytes_of("fedbn"), bytes_of("mean-filter", mu=0.0)
    per_entry = 8 * 2 * K * R  # float64 entries, model and update, every client and round
    assert fedavg - fedbn == pytest.approx(10 * per_entry, abs=64 * K * R)  # 10 kept biases (msgpack headers differ)


def test_pfedme_and_perfedavg_cost_their_extra_gradients_in_compute_time():
    def compute(variant, **o):
        world, _, _ = setup(variant, **o)
        world.run()
        return sum(v for node, _, _, m, v in world.metrics if m == "compute_s" and node == "client-0")

    base = compute("mean-filter", mu=0.0)  # E epochs of 50 samples each
    assert base > 0
    batch = 32 / 50  # pFedMe and Per-FedAvg: R = E rounds of one mini-batch of 32 of the 50 samples
    assert compute("pfedme", inner_steps=3) == pytest.approx(3 * batch * base)
    assert compute("perfedavg") == pytest.approx(2 * batch * base)
    assert compute("perfedavg", maml="hf") == pytest.approx(4 * batch * base)


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("bad, field", [({"local": "ditto"}, "local"), ({"local": "pfedme", "mu": 0.2}, "mu"),
                                        ({"lam": 0.0}, "lam"), ({"inner_steps": 0}, "inner_steps"),
                                        ({"server_mix": 0.0}, "server_mix"), ({"alpha": -0.1}, "alpha"), ({"meta_lr": 0.0}, "meta_lr"),
                                        ({"maml": "so"}, "maml")])
def test_bad_parameters_are_refused(bad, field):
    with pytest.raises(ConfigError) as e:
        GraphFLParams(**bad)
    assert field in str(e.value)


@pytest.mark.parametrize("task", [MLPParams(), CNNParams(), SoftmaxParams()], ids=repr)
def test_fedbn_refuses_a_task_without_batch_norm(task):
    with pytest.raises(ConfigError) as e:
        check_task(GraphFLParams(**VARIANTS["fedbn"]), task)
    assert e.value.field == "batchnorm"
    check_task(GraphFLParams(filter="mean", mu=0.01), task)  # the mean filter (FedAvg's rule) runs it


def test_fedbn_with_the_batch_norm_mlp_keeps_its_batch_norm_entries_home():
    world, params, task = setup("fedbn", model="mlp_bn", hidden=8)
    world.run()
    st = world.actors["server"].state
    assert 0 < st.kept.sum() < st.model.size
    used = world.actors["server"].used_models()
    assert np.allclose(used[:, ~st.kept], used[0, ~st.kept])
    assert not np.allclose(used[:, st.kept], used[0, st.kept])


@pytest.mark.parametrize("local", ["pfedme", "perfedavg"])
def test_pfedme_and_perfedavg_refuse_batch_norm_models(local):
    with pytest.raises(ConfigError, match="pfedme|perfedavg") as e:
        check_task(GraphFLParams(local=local, mu=0.0), MLPParams(batchnorm=True))
    assert e.value.field == "batchnorm"


def test_fedbn_with_a_model_without_a_local_mask_is_refused_when_built(monkeypatch):
    # the params check passes; the built model has no mask
    monkeypatch.setattr(graphfl_params, "TASK_CHECKS", tuple(c for c in graphfl_params.TASK_CHECKS if "keep_local" not in c[1]))
    with pytest.raises(ConfigError, match="keep_local"):
        setup("fedbn")
