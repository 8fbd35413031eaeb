"""The graph-filter family learns through the task layer: its model and local training are the
`[task]` table's, old keys on `[[algorithm]]` are refused naming the new one, a task it cannot run
is refused in one line naming both, and the task layer gained what the family needed (batch norm,
lr_decay, precision and recall, a default task for digits_fl)."""

import numpy as np
import pytest

from netemu.kernels.classifiers import MLPBN, cross_entropy, minibatch_steps, sgd
from netemu.tasks.base import TaskSpec
from netemu.tasks.supervised import SoftmaxParams, _classifier

#: a task any data kind fits that the graph-filter family does not accept (it is not one of its NumPy models)
OTHER = TaskSpec("other", SoftmaxParams, _classifier, (), "a softmax under another name")

SCENARIO = """
[run]
rounds = 2
[topology]
kind = "star"
clients = 3
[data]
kind = "digits_fl"
samples = 30
test_samples = 10
partition = "dirichlet"
kappa = 0.5
{task}
[[algorithm]]
name = "{name}"
{extra}
"""


def problems(tmp_path, task='[task]\nname = "softmax"', name="fedpnp-soft", extra=""):
    from netemu.scenario import ScenarioError, load_scenario

    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(task=task, name=name, extra=extra))
    try:
        load_scenario(path)
    except ScenarioError as exc:
        return [str(i) for i in exc.issues]
    return []


@pytest.mark.parametrize("key, value, new", [("model", '"cnn_bn"', "task.name"), ("lr", "0.1", "task.lr"), ("epochs", "3", "task.epochs"),
                                             ("hidden", "16", "task.hidden"), ("metrics", '["accuracy"]', "task.metrics"),
                                             ("work_per_sample", "0.01", "task.work_per_sample"), ("lr_decay", "0.9", "task.lr_decay")])
def test_a_moved_key_on_the_algorithm_is_refused_naming_its_task_key(tmp_path, key, value, new):
    [issue] = problems(tmp_path, extra=f"{key} = {value}")
    assert f"algorithm[0].{key} = " in issue and f"moved to {new}" in issue and "fedpnp-soft's model and local training are the task's" in issue


def test_the_family_needs_a_written_task_table(tmp_path):
    """Without one, the data kind's default task (1 epoch, 1.0 work per sample) would silently replace
    the family's former defaults (5 epochs, 0.002): refused, saying what to write."""
    [issue] = problems(tmp_path, task="")
    assert issue.startswith("task = (required)") or "task" in issue.split("=")[0]
    assert "required: algorithm[0] = 'fedpnp-soft' learns the [task] table's model and training" in issue
    assert 'name = "softmax", epochs = 5, work_per_sample = 0.002' in issue
    assert problems(tmp_path, task="", name="fedavg") == []  # the general FedAvg takes the default task


def test_model_cnn_bn_is_named_as_the_cnn_task_with_batch_norm(tmp_path):
    [issue] = problems(tmp_path, extra='model = "cnn_bn"')
    assert 'task.name ("softmax", "mlp" or "cnn"; "mlp_bn" and "cnn_bn" are task.batchnorm = true)' in issue


def test_a_task_the_family_cannot_run_is_refused_in_one_line_naming_both(tmp_path):
    issues = problems(tmp_path, task='[task]\nname = "test_graphfl_task:OTHER"')
    assert len(issues) == 1
    assert "task.name = 'test_graphfl_task:OTHER'" in issues[0]
    assert "algorithm[0] = 'fedpnp-soft' accepts: softmax | mlp | cnn" in issues[0]
    assert problems(tmp_path, task='[task]\nname = "test_graphfl_task:OTHER"', name="fedavg") == []  # FedAvg learns any task


@pytest.mark.parametrize("task, key", [('[task]\nname = "mlp"\nsteps = 3', "task.steps"),
                                       ('[task]\nname = "softmax"\nbatch = 0', "task.batch")])
def test_task_keys_the_family_does_not_honour_are_refused_at_the_task_key(tmp_path, task, key):
    issues = problems(tmp_path, task=task)
    assert issues and all(f": {key} = " in i and "algorithm[0] = 'fedpnp-soft' needs" in i for i in issues)


def test_pfedme_on_a_batch_norm_task_is_refused_at_task_batchnorm(tmp_path):
    [issue] = problems(tmp_path, task='[task]\nname = "mlp"\nbatchnorm = true', name="pfedme")
    assert ": task.batchnorm = True: algorithm[0] = 'pfedme' needs task.batchnorm = false" in issue
    assert problems(tmp_path, task='[task]\nname = "mlp"\nbatchnorm = true', name="fedbn") == []


def test_netemu_algorithms_says_which_tasks_each_algorithm_accepts(capsys):
    from netemu.cli import main

    assert main(["algorithms", "fedpnp-soft", "fedavg"]) == 0
    out = capsys.readouterr().out
    assert "task: softmax | mlp | cnn on data.kind: digits_fl" in out
    assert "task: any" in out  # fedavg
    fedpnp = out.split("fedavg  (")[0]
    assert "lr" not in fedpnp.split("parameters:")[1].split("\n")[0].split(", ")  # the model and training left the family


def test_the_general_fedavg_learns_digits_fl_with_its_default_task(tmp_path):
    from netemu.scenario import load_scenario
    from netemu.scenario.build import build_world

    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(task="[task]\nlr = 0.5\nepochs = 10", name="fedavg", extra="round_time = 5.0").replace("rounds = 2", "rounds = 3")
                    + "[nodes]\nspeed = 1000.0\n")
    sc = load_scenario(path)
    assert sc.settings.task.name == "softmax"
    world = build_world(sc, 0, 0)
    world.run()
    accuracy = [v for _, _, _, m, v in world.metrics if m == "accuracy"]
    assert len(accuracy) == 3 and accuracy[-1] > 0.5  # ten classes: chance is 0.1


def test_a_batch_norm_models_minibatch_steps_track_its_running_statistics_as_sgd_does():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((20, 5)), rng.integers(0, 3, 20)
    model = MLPBN(5, 4, 3)
    theta = model.init(np.random.default_rng(1))
    by_epochs = sgd(model, theta, X, y, epochs=2, batch=8, lr=0.1, rng=np.random.default_rng(7))
    by_steps = minibatch_steps(model, theta, X, y, steps=6, batch=8, lr=0.1, rng=np.random.default_rng(7))  # 2 passes of 3 batches
    np.testing.assert_array_equal(by_steps, by_epochs)
    assert not np.allclose(by_steps[model.running], theta[model.running])


def test_lr_decay_shrinks_the_step_of_each_later_local_round_of_a_client():
    from netemu.data.federated import FederatedDigits, make_federated_digits
    from netemu.engine.rng import Streams
    from netemu.plugins import task

    data = make_federated_digits(FederatedDigits(samples=20, test_samples=5), ["a"], Streams(0))
    made = {d: task("softmax").make(SoftmaxParams(lr=0.2, lr_decay=d, batch=0), data, Streams(0)) for d in (None, 0.5)}
    theta = made[None].init()
    first = {d: t.train(theta, "a", 1) for d, t in made.items()}
    second = {d: t.train(theta, "a", 1) for d, t in made.items()}
    np.testing.assert_array_equal(first[None], first[0.5])  # round 1: lr
    np.testing.assert_allclose(second[0.5] - theta, 0.5 * (second[None] - theta), rtol=1e-12)  # round 2: lr / 2, one full-batch step


WHOLE_BATCH = '[task]\nname = "{model}"\nbatch = 30\nepochs = 3\nlr = 0.1\nwork_per_sample = 0.01\nmetrics = ["loss"]\nevaluate_on = "both"'


def _ideal_runs(tmp_path, family, general, rounds=4, model="softmax"):
    """One scenario, ideal network (every update in time), digits_fl data, whole-batch steps: the
    graph-filter family's server with `family`'s keys and a general algorithm: the two worlds."""
    from netemu.scenario import load_scenario
    from netemu.scenario.build import build_world

    extra = f"{family}\ndeadline = 60.0\n[[algorithm]]\n{general}\nround_time = 60.0"
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(task=WHOLE_BATCH.format(model=model), name="fedpnp-soft", extra=extra).replace("rounds = 2", f"rounds = {rounds}"))
    sc = load_scenario(path)
    worlds = [build_world(sc, i, 0) for i in range(2)]
    for world in worlds:
        world.run()
    return worlds


def _reference(task, clients, rounds, mu, average):
    """A vectorized NumPy reference of FedAvg/FedProx (McMahan et al. 2017, Algorithm 1; Li et al.
    2020, eq. 2) with whole-batch gradient steps, or of local training (`average` false): every
    client's model after `rounds` rounds, as a K × B array."""
    X = [task.parts[k][0] for k in clients]
    y = [task.parts[k][1] for k in clients]
    n = np.array([v.size for v in y], dtype=float)
    steps = int(task.p.epochs)  # one whole-batch step per epoch
    models = np.tile(task.init(), (len(clients), 1))
    for _ in range(rounds):
        start = models.copy()
        for _ in range(steps):
            grads = np.stack([task.model.loss_grad(m, Xk, yk)[1] for m, Xk, yk in zip(models, X, y, strict=True)])
            models = models - task.p.lr * (grads + mu * (models - start))
        if average:
            models = np.tile(n @ models / n.sum(), (len(clients), 1))
    return models


def _final(world, name):
    return [v for *_, m, v in world.metrics if m == name][-1]


@pytest.mark.parametrize("family, general, mu, average, model", [
    ('filter = "mean"\nmu = 0.0', 'name = "fedavg"', 0.0, True, "softmax"),
    ('filter = "mean"\nmu = 0.05', 'name = "fedprox"\nmu = 0.05', 0.05, True, "softmax"),
    ('filter = "identity"\nmu = 0.0', 'name = "local-only"', 0.0, False, "softmax"),
    ('filter = "mean"\nmu = 0.0', 'name = "fedavg"', 0.0, True, "mlp"),  # a drawn ω⁰, the task's for both
])
def test_the_general_arms_compute_what_the_family_server_with_its_limit_filters_computes(tmp_path, family, general, mu, average, model):
    """FedAvg, FedProx and local training are the general algorithms in the graph-filter scenarios:
    in an ideal network with whole-batch steps they match a vectorized NumPy reference and the
    family's server with the mean (β → ∞) or identity (β = 0) filter to rounding — the models and
    the losses on the global test set and each client's own (each client's model on its split).
    Both start from the task's ω⁰."""
    family_world, general_world = _ideal_runs(tmp_path, family, general, model=model)
    server = family_world.actors["server"]
    st = server.state
    expected = _reference(st.learning, st.clients, 4, mu, average)
    assert np.max(np.abs(server.Psi - expected)) <= 1e-12
    if average:
        assert np.max(np.abs(general_world.actors["server"].w - expected[0])) <= 1e-12
    assert np.max(np.abs(expected - st.learning.init())) > 0.1  # they learnt
    task = st.learning
    own = np.mean([cross_entropy(task.model, expected[i], *task.local_tests[k]) for i, k in enumerate(st.clients)])
    on_test = np.mean([cross_entropy(task.model, w, *task.test) for w in expected])
    for name, value in (("loss", on_test), ("loss_clients", own)):  # the family's round 4 is the general algorithm's round 3
        assert _final(general_world, name) == pytest.approx(value, rel=1e-12)
        assert _final(family_world, name) == pytest.approx(value, rel=1e-12)


def test_the_retired_presets_are_refused_naming_the_general_algorithm(tmp_path):
    [fedprox] = problems(tmp_path, name="graphfl-fedprox")
    assert "algorithm[0].name = 'graphfl-fedprox': use \"fedprox\" (mu = 0.01) or \"fedavg\" over the same [task]" in fedprox
    [local] = problems(tmp_path, name="local")
    assert "algorithm[0].name = 'local': use \"local-only\" over the same [task]" in local
