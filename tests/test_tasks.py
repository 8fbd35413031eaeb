"""The task layer: partitions, the classification data kind, the built-in tasks, and the general
algorithms (FedAvg, FedProx, the server optimizers, local-only) on a classifier against
vectorized references in an ideal network."""

import numpy as np
import pytest

from netemu import NodeBehaviour, World, star
from netemu.algorithms.fedavg import SPECS, FedAvgParams
from netemu.data.classification import ClassificationData, make_classification
from netemu.data.partitions import dirichlet, iid, labels, partition, powerlaw, shards
from netemu.engine.rng import Streams
from netemu.kernels.classifiers import MLP, minibatch_steps, sgd
from netemu.kernels.server_opt import ServerState, server_step
from netemu.plugins import task
from netemu.tasks.supervised import LinearParams, MLPParams, SoftmaxParams

VARIANT = {s.name: s for s in SPECS}
Y = np.repeat(np.arange(10), 60)  # 600 labels, 60 per class


# ------------------------------------------------------------------ partitions

@pytest.mark.parametrize("rows", [
    iid(Y, 7, np.random.default_rng(1)), dirichlet(Y, 7, np.random.default_rng(1), 0.5), shards(Y, 7, np.random.default_rng(1), 2),
    labels(Y, 7, np.random.default_rng(1), 3), powerlaw(Y, 7, np.random.default_rng(1), 1.2, 5),
], ids=["iid", "dirichlet", "shards", "labels", "powerlaw"])
def test_a_partition_gives_each_row_to_at_most_one_client(rows):
    taken = np.concatenate(rows)
    assert len(rows) == 7 and taken.size == np.unique(taken).size and taken.max() < Y.size


@pytest.mark.parametrize("kind", ["iid", "dirichlet", "shards", "powerlaw"])
def test_partitions_that_split_everything_use_every_row(kind):
    rows = partition(kind, Y, 9, np.random.default_rng(2), alpha=0.3)
    assert np.sort(np.concatenate(rows)).tolist() == list(range(Y.size))


def _label_entropy(rows) -> float:
    """Mean entropy (nats) of the clients' label distributions: lower is more skewed."""
    out = []
    for r in rows:
        p = np.bincount(Y[r], minlength=10) / r.size
        out.append(-(p[p > 0] * np.log(p[p > 0])).sum())
    return float(np.mean(out))


def test_a_smaller_dirichlet_alpha_skews_the_labels_more():
    skewed = np.mean([_label_entropy(dirichlet(Y, 10, np.random.default_rng(s), 0.1)) for s in range(5)])
    mild = np.mean([_label_entropy(dirichlet(Y, 10, np.random.default_rng(s), 10.0)) for s in range(5)])
    assert skewed < mild - 0.5 and mild > 0.9 * np.log(10)


def test_shards_give_each_client_few_labels_and_labels_exactly_its_own():
    for rows in shards(Y, 10, np.random.default_rng(3), 2):
        assert np.unique(Y[rows]).size <= 2 * 2  # two shards, each within at most two classes (60 rows, 60 per class)
    for rows in labels(Y, 10, np.random.default_rng(3), 3):
        held = set(np.unique(Y[rows]).tolist())
        assert any(held == {(s + i) % 10 for i in range(3)} for s in range(10))  # three consecutive classes


def test_powerlaw_sizes_fall_with_rank_and_keep_the_minimum():
    sizes = np.sort([r.size for r in powerlaw(Y, 8, np.random.default_rng(4), 1.5, 10)])[::-1]
    assert sizes.min() >= 10 and sizes[0] > 3 * sizes[-1] and sizes.sum() == Y.size


# ------------------------------------------------------------------ data kind and tasks

def clients(n):
    return [f"client-{k}" for k in range(n)]


def test_the_classification_kind_splits_the_bundled_digits_and_holds_out_client_tests():
    data = make_classification(ClassificationData(partition="dirichlet", alpha=0.5, client_test=0.2), clients(8), Streams(1))
    assert data.classes == 10 and data.dim == 64
    train = sum(y.size for _, y in data.parts.values())
    local = sum(y.size for _, y in data.local_tests.values())
    assert abs(local / (train + local) - 0.2) < 0.02
    assert max(X.max() for X, _ in data.parts.values()) <= 1.0  # pixels scaled to [0, 1]


def test_the_same_seed_makes_the_same_partition_and_another_seed_another():
    a = make_classification(ClassificationData(source="synthetic", partition="shards"), clients(5), Streams(3))
    b = make_classification(ClassificationData(source="synthetic", partition="shards"), clients(5), Streams(3))
    c = make_classification(ClassificationData(source="synthetic", partition="shards"), clients(5), Streams(4))
    assert all(np.array_equal(a.parts[k][1], b.parts[k][1]) for k in a.parts)
    assert any(not np.array_equal(a.parts[k][1], c.parts[k][1]) for k in a.parts)


def test_minibatch_steps_over_whole_epochs_are_sgd_epochs():
    rng = np.random.default_rng(5)
    model, X, y = MLP(6, 5, 3), rng.standard_normal((23, 6)), rng.integers(0, 3, 23)
    theta = model.init(rng)
    a = minibatch_steps(model, theta, X, y, steps=2 * 3, batch=8, lr=0.1, rng=np.random.default_rng(9))
    b = sgd(model, theta, X, y, epochs=2, batch=8, lr=0.1, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(a, b)


def test_a_round_plan_counts_the_samples_processed_and_partial_work_does_fewer_steps():
    data = make_classification(ClassificationData(source="synthetic", samples=400, partition="iid"), clients(4), Streams(1))
    t = task("softmax").make(SoftmaxParams(batch=32, epochs=2, work_per_sample=0.5), data, Streams(1))
    n = t.samples("client-0")  # 75 samples: 3 batches per pass
    assert t.plan("client-0", 1.0) == (6, 2 * n * 0.5)
    assert t.plan("client-0", 0.5) == (3, n * 0.5)
    assert t.plan("client-0", 0.01) == (1, 32 * 0.5)


def test_metrics_on_the_clients_splits_are_named_and_refused_without_splits():
    data = make_classification(ClassificationData(partition="iid", client_test=0.25), clients(4), Streams(1))
    t = task("softmax").make(SoftmaxParams(metrics=("accuracy", "f1"), evaluate_on="both"), data, Streams(1))
    assert list(t.evaluate(t.init())) == ["accuracy", "f1", "accuracy_clients", "f1_clients"]
    plain = make_classification(ClassificationData(partition="iid"), clients(4), Streams(1))
    with pytest.raises(ValueError, match="client_test"):
        task("softmax").make(SoftmaxParams(evaluate_on="clients"), plain, Streams(1))


# ------------------------------------------------------------------ algorithms on a classifier

LR, BATCH, EPOCHS = 0.2, 16, 2


def emulate(name, rounds=6, n=6, **values):
    world = World(star(n), seed=11, behaviours={c: NodeBehaviour(speed=1e9) for c in clients(n)})  # ideal: every update in time
    data = make_classification(ClassificationData(source="synthetic", samples=600, dim=8, classes=4, partition="dirichlet", alpha=1.0,
                                                  min_size=20), clients(n), world.streams)
    t = task("mlp").make(MLPParams(hidden=7, lr=LR, batch=BATCH, epochs=EPOCHS), data, world.streams)
    spec = VARIANT[name]
    spec.build(world, spec.make_params(values), t, rounds)
    world.run()
    return world, t


def local_round(t, streams, k, theta, calls, mu=0.0):
    """Client k's local round as the reference writes it: EPOCHS passes of mini-batch SGD with
    fresh permutations from the stream train/<client>/<call>, the proximal gradient added."""
    X, y = t.parts[f"client-{k}"]
    rng = streams.generator(f"train/client-{k}/{calls}")
    anchor, theta = theta, theta.copy()
    for _ in range(EPOCHS):
        order = rng.permutation(y.size)
        for s in range(0, y.size, BATCH):
            rows = order[s : s + BATCH]
            _, g = t.model.loss_grad(theta, X[rows], y[rows])
            theta = theta - LR * (g + mu * (theta - anchor))
    return theta


def reference(t, streams, rounds, n, *, mu=0.0, step=None):
    x = t.init()
    sizes = np.array([t.samples(f"client-{k}") for k in range(n)], dtype=float)
    for r in range(rounds):
        models = np.stack([local_round(t, streams, k, x, r, mu) for k in range(n)])
        mean = sizes @ models / sizes.sum()
        x = mean if step is None else step(x, mean)
    return x


@pytest.mark.parametrize(("name", "mu"), [("fedavg", 0.0), ("fedprox", 0.01)])
def test_in_an_ideal_network_fedavg_and_fedprox_on_an_mlp_match_the_reference(name, mu):
    world, t = emulate(name)
    expected = reference(t, world.streams, 6, 6, mu=mu)
    got = world.actors["server"].w
    assert np.linalg.norm(got - expected) <= 1e-12 * np.linalg.norm(expected)


def _adaptive(kind, lr, beta1=0.9, beta2=0.99, tau=1e-3):
    """Reddi et al. 2021, Algorithm 2, written out: m, v with v_{-1} = τ², no bias correction."""
    state = {"m": 0.0, "v": tau * tau}

    def step(x, mean):
        d = mean - x
        if kind == "avgm":
            state["m"] = beta1 * state["m"] + d
            return x + lr * state["m"]
        state["m"] = beta1 * state["m"] + (1 - beta1) * d
        state["v"] = beta2 * state["v"] + (1 - beta2) * d * d if kind == "adam" else state["v"] - (1 - beta2) * d * d * np.sign(state["v"] - d * d)
        return x + lr * state["m"] / (np.sqrt(state["v"]) + tau)
    return step


@pytest.mark.parametrize(("name", "kind", "lr"), [("fedavgm", "avgm", 1.0), ("fedadam", "adam", 0.01), ("fedyogi", "yogi", 0.01)])
def test_in_an_ideal_network_the_server_optimizers_match_reddi_et_al(name, kind, lr):
    world, t = emulate(name)
    expected = reference(t, world.streams, 6, 6, step=_adaptive(kind, lr))
    got = world.actors["server"].w
    assert np.linalg.norm(got - expected) <= 1e-12 * np.linalg.norm(expected)


def test_fedavgm_without_momentum_and_unit_step_is_fedavg():
    x, mean = np.arange(4.0), np.ones(4)
    assert np.array_equal(server_step("avgm", x, mean, ServerState.start(4, 1e-3), lr=1.0, beta1=0.0, beta2=0.99, tau=1e-3), mean)


def test_local_only_clients_never_see_each_other_and_the_metric_is_their_mean():
    world, t = emulate("local-only", rounds=3)
    server = world.actors["server"]
    accuracies = [v for *_, name, v in world.metrics if name == "accuracy"]
    alone = [reference_alone(t, world.streams, k, 3) for k in range(6)]
    assert accuracies[-1] == pytest.approx(np.mean([t.evaluate(w)["accuracy"] for w in alone]), abs=1e-12)
    assert server.p.aggregate is False


def test_local_only_scores_each_clients_own_model_on_that_clients_own_split():
    """Personalized evaluation: `accuracy_clients` is the mean over clients of client k's model on
    client k's split (not every model on every split); `accuracy` the models' mean on the server's set."""
    n, rounds = 6, 3
    world = World(star(n), seed=11, behaviours={c: NodeBehaviour(speed=1e9) for c in clients(n)})
    data = make_classification(ClassificationData(source="synthetic", samples=600, dim=8, classes=4, partition="dirichlet", alpha=0.3,
                                                  min_size=20, client_test=0.25), clients(n), world.streams)
    t = task("mlp").make(MLPParams(hidden=7, lr=LR, batch=BATCH, epochs=EPOCHS, metrics=("accuracy",), evaluate_on="both"), data, world.streams)
    VARIANT["local-only"].build(world, VARIANT["local-only"].make_params({}), t, rounds)
    world.run()
    got = {name: v for *_, name, v in world.metrics}
    alone = {f"client-{k}": reference_alone(t, world.streams, k, rounds) for k in range(n)}
    own = [float(np.mean(np.argmax(t.model.logits(w, t.local_tests[k][0]), axis=1) == t.local_tests[k][1])) for k, w in alone.items()]
    on_test = [float(np.mean(np.argmax(t.model.logits(w, t.test[0]), axis=1) == t.test[1])) for w in alone.values()]
    assert got["accuracy_clients"] == pytest.approx(np.mean(own), abs=1e-12)
    assert got["accuracy"] == pytest.approx(np.mean(on_test), abs=1e-12)
    everyone = np.mean([t.evaluate(w)["accuracy_clients"] for w in alone.values()])  # each model on every split
    assert abs(everyone - got["accuracy_clients"]) > 0.01  # skewed labels: one's own split is what a personal model knows


def reference_alone(t, streams, k, rounds):
    x = t.init()
    for r in range(rounds):
        x = local_round(t, streams, k, x, r)
    return x


def test_partial_work_and_measured_compute_come_from_the_task():
    spec = VARIANT["fedavg"]
    assert spec.partial_work and spec.task
    data = make_classification(ClassificationData(source="synthetic", samples=300, partition="iid"), clients(3), Streams(1))
    t = task("mlp").make(MLPParams(batch=10), data, Streams(1))
    step, work = spec.step_cost(FedAvgParams(), t)
    assert work == 10 and step() is not None


def test_linear_task_defaults_are_the_quick_starts_local_training():
    p = LinearParams()
    assert (p.lr, p.batch, p.steps, tuple(p.metrics)) == (0.05, 0, 5, ("mse",))


# ------------------------------------------------------------------ scenarios

BASE = """
[run]
rounds = 2
[topology]
kind = "star"
clients = 4
[data]
kind = "{kind}"
{task}
[[algorithm]]
name = "{name}"
{extra}
"""


def problems(tmp_path, kind="classification", task="", name="fedavg", extra=""):
    from netemu.scenario import ScenarioError, load_scenario

    path = tmp_path / "s.toml"
    path.write_text(BASE.format(kind=kind, task=task, name=name, extra=extra))
    try:
        load_scenario(path)
    except ScenarioError as exc:
        return [str(i) for i in exc.issues]
    return []


def test_a_moved_algorithm_key_is_refused_naming_its_new_key(tmp_path):
    assert problems(tmp_path, extra="lr = 0.1\nlocal_steps = 3") == [
        f"{tmp_path / 's.toml'}: algorithm[0].lr = 0.1: moved to task.lr: fedavg's model and local training are the task's ([task] table)",
        f"{tmp_path / 's.toml'}: algorithm[0].local_steps = 3: moved to task.steps: fedavg's model and local training are the task's ([task] table)",
    ]


def test_a_task_that_does_not_learn_the_data_is_refused_naming_both(tmp_path):
    [issue] = problems(tmp_path, kind="linear", task='[task]\nname = "mlp"')
    assert "task.name = 'mlp': a task for data.kind = 'linear'" in issue


def test_a_seed_family_beside_a_task_is_refused_naming_the_algorithm_and_the_task(tmp_path):
    issues = problems(tmp_path, kind="online", task='[task]\nname = "linear"', name="pao-fed-c0")
    assert any("algorithm[0].name = 'pao-fed-c0': an algorithm that learns task 'linear'" in i for i in issues)


def test_a_task_table_without_a_name_tunes_the_data_kinds_default(tmp_path):
    from netemu.scenario import load_scenario

    path = tmp_path / "s.toml"
    path.write_text(BASE.format(kind="classification", task="[task]\nlr = 0.3", name="fedbuff", extra=""))
    sc = load_scenario(path)
    assert sc.settings.task.name == "softmax" and sc.task_params().lr == 0.3


def test_task_parameters_out_of_range_are_refused_at_their_key(tmp_path):
    [issue] = problems(tmp_path, task='[task]\nname = "mlp"\nhidden = 0')
    assert issue.endswith("task.hidden = 0: an integer >= 1")


def test_a_small_mnist_like_run_learns_end_to_end(tmp_path):
    """The bundled digits, FedAvg and FedBuff on an MLP: both learn well past chance (10 %) in 6 rounds."""
    from netemu import run_folder
    from netemu.scenario import load_scenario

    path = tmp_path / "s.toml"
    path.write_text(BASE.format(kind="classification", task='[task]\nname = "mlp"\nhidden = 16\nlr = 0.2', name="fedavg",
                                extra='round_time = 5.0\n[[algorithm]]\nname = "fedbuff"\nround_time = 5.0\nbuffer = 2')
                    .replace("rounds = 2", "rounds = 6").replace('kind = "classification"', 'kind = "classification"\npartition = "dirichlet"\nalpha = 1.0')
                    + "[nodes]\nspeed = 1000.0\n[output]\nplots = false\n")
    summary = run_folder(load_scenario(path), tmp_path / "run")
    assert summary["complete"]
    assert all(summary["final"][a]["accuracy"] > 0.5 for a in ("fedavg", "fedbuff"))


def test_a_synthetic_source_is_data_netemu_draws_not_a_file_to_look_for(tmp_path):
    assert problems(tmp_path, task='[task]\nname = "mlp"').__len__() == 0
    path = tmp_path / "s.toml"
    path.write_text(BASE.format(kind="classification", task="", name="fedavg", extra="").replace(
        'kind = "classification"', 'kind = "classification"\nsource = "synthetic"'))
    from netemu.scenario import load_scenario

    assert load_scenario(path).data_params().source == "synthetic"


def test_metrics_on_the_clients_splits_without_splits_are_refused_by_validate(tmp_path):
    [issue] = problems(tmp_path, task='[task]\nname = "softmax"\nevaluate_on = "both"')
    assert "task.evaluate_on = 'both': \"server\": the clients hold no test splits" in issue
