"""The PyTorch task plug-in (examples/netemu-torch-task): a deep-learning framework behind netemu's
`Task` protocol.  It satisfies the protocol with the built-in tasks' meanings, its parameters
round-trip through the flat vector, a FedAvg run on it is deterministic, and it trains exactly as
netemu's NumPy `cnn` task (same architecture) from the same parameters on the same batches."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "netemu-torch-task"
MNIST = ROOT.parent / "shared" / "data" / "mnist10k"  # the studies' data.source (scenarios/../../shared/data/mnist10k)

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))  # importable without installing the example package
ntt = pytest.importorskip("netemu_torch_task", reason="the example package examples/netemu-torch-task is not importable")

import netemu  # noqa: E402 - after the skips: nothing below runs without torch
from netemu.data.classification import ClassificationData, make_classification  # noqa: E402
from netemu.engine.rng import Streams  # noqa: E402
from netemu.plugins import task  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.tasks.supervised import CNNParams  # noqa: E402

CLIENTS = [f"client-{k}" for k in range(3)]


def digits(**keys):
    return make_classification(ClassificationData(partition="iid", **keys), CLIENTS, Streams(5))


def to_torch_layout(theta: np.ndarray, side: int, c1: int, c2: int, classes: int) -> np.ndarray:
    """netemu.kernels.cnn.CNN's θ (per convolution W ((c_in·9) × c_out, rows (channel, row, column))
    then b; then dense W (features × classes, features (row, column, channel)) and b) in the plug-in's
    order (torch's state_dict: conv weight (c_out, c_in, 3, 3), bias; dense weight (classes, features
    (channel, row, column)), bias)."""
    out, at, s = [], 0, side
    convs = [(1, c1)] + ([(c1, c2)] if c2 else [])
    for cin, cout in convs:
        W = theta[at : at + 9 * cin * cout].reshape(9 * cin, cout)
        at += 9 * cin * cout
        out += [W.T.ravel(), theta[at : at + cout]]
        at += cout
        s //= 2
    last = convs[-1][1]
    Wd = theta[at : at + s * s * last * classes].reshape(s, s, last, classes)
    at += s * s * last * classes
    out += [Wd.transpose(3, 2, 0, 1).ravel(), theta[at : at + classes]]
    assert at + classes == theta.size
    return np.concatenate(out)


# ------------------------------------------------------------------ the protocol


def test_the_plugin_task_satisfies_the_protocol_with_the_built_in_meanings():
    data = digits(client_test=0.2)
    keys = {"channels": 4, "lr": 0.1, "batch": 16, "epochs": 2, "work_per_sample": 0.5, "metrics": ("accuracy", "loss", "f1"),
            "evaluate_on": "both", "evaluate_every": 3}
    mine = ntt.make(ntt.TorchCNNParams(**keys), data, Streams(7))
    theirs = task("cnn").make(CNNParams(**keys), data, Streams(7))
    theta = mine.init()
    assert theta.dtype == np.float64 and theta.shape == (ntt.vector_size(mine.module),) == (theirs.init().size,)
    assert mine.parts is data.parts
    for c in CLIENTS:
        assert mine.samples(c) == theirs.samples(c)
        for fraction in (1.0, 0.5, 0.01):
            assert mine.plan(c, fraction) == theirs.plan(c, fraction)
    assert [r for r in range(10) if mine.evaluates(r, 10)] == [r for r in range(10) if theirs.evaluates(r, 10)] == [2, 5, 8, 9]
    assert list(mine.evaluate(theta)) == list(theirs.evaluate(theirs.init()))
    new = mine.train(theta, "client-0", 3)
    assert new.dtype == np.float64 and new.shape == theta.shape and not np.array_equal(new, theta)
    assert np.array_equal(mine.init(), theta)  # training did not touch the initial parameters
    step, work = mine.step_cost()
    step()
    assert work == 16 * 0.5


def test_the_registered_name_and_the_dotted_reference_give_the_same_spec():
    spec = netemu.plugins.resolve("netemu_torch_task:SPEC", netemu.tasks.TaskSpec)
    assert spec.name == "torch-cnn" and spec.datasets == ("classification",) and spec.params is ntt.TorchCNNParams
    with pytest.raises(ValueError, match="dtype"):
        ntt.TorchCNNParams(dtype="float16")


def test_netemu_and_loading_the_plugin_do_not_import_torch():
    """netemu reads every installed plug-in's spec at start: that must not cost a torch import."""
    code = ("import sys; import netemu.plugins as p; p.registry(); spec = p.resolve('netemu_torch_task:SPEC', p.TaskSpec); "
            "spec.params(channels=2); print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]", out.stdout[:300]


# ------------------------------------------------------------------ the flat vector


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parameters_round_trip_through_the_flat_vector(dtype):
    module = ntt.SmallCNN(8, 10, 3, 5).to(getattr(torch, dtype))
    v = np.random.default_rng(3).standard_normal(ntt.vector_size(module))
    if dtype == "float32":
        v = v.astype(np.float32).astype(np.float64)  # what a float32 module can hold exactly
    ntt.load_vector(module, v)
    assert np.array_equal(ntt.to_vector(module), v)
    names = list(module.state_dict())
    assert names == ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "dense.weight", "dense.bias"]  # the documented order
    assert np.array_equal(module.conv1.weight.detach().double().numpy().ravel(), v[: 3 * 9])
    with pytest.raises(ValueError, match="entries expected"):
        ntt.load_vector(module, v[:-1])


# ------------------------------------------------------------------ against netemu's NumPy CNN

# Both sides compute in float64; they differ only in summation order (im2col matmuls against torch's
# convolution kernels), a few ulps per operation.  Measured: ≤ 4e-16 after 58 steps on the digits.
# 1e-11 leaves that growth 10^4 of room yet is 10^10 below what training moves (‖Δθ‖∞ > 0.1, asserted),
# so a wrong layout, batch, proximal term or pooling tie rule fails by many orders of magnitude.
TOL = 1e-11


@pytest.mark.parametrize(("source", "side", "c1", "c2", "mu"), [
    ("sklearn", 8, 4, 0, 0.0), ("sklearn", 8, 3, 5, 0.5), ("mnist", 28, 3, 2, 0.0),
], ids=["digits", "digits-two-convs-fedprox", "mnist-two-convs"])
def test_torch_and_the_numpy_cnn_train_to_the_same_parameters(source, side, c1, c2, mu):
    if source == "mnist":
        if not MNIST.is_dir():
            pytest.skip(f"no MNIST folder at {MNIST}")
        data = digits(source=str(MNIST), max_train=240)  # 28 → 14 → 7: the second pooling floors an odd side
    else:
        data = digits()
    keys = {"channels": c1, "channels2": c2, "lr": 0.1, "batch": 16, "epochs": 2}
    numpy_task = task("cnn").make(CNNParams(**keys), data, Streams(7))
    torch_task = ntt.make(ntt.TorchCNNParams(dtype="float64", **keys), data, Streams(7))
    theta = numpy_task.init()
    steps, _ = numpy_task.plan("client-0", 1.0)
    for _ in range(2):  # two local rounds: the second draws its batches from train/client-0/1
        trained = numpy_task.train(theta, "client-0", steps, mu=mu)
        ours = torch_task.train(to_torch_layout(theta, side, c1, c2, 10), "client-0", steps, mu=mu)
        expected = to_torch_layout(trained, side, c1, c2, 10)
        assert np.abs(expected - to_torch_layout(theta, side, c1, c2, 10)).max() > 0.1  # training moved it
        np.testing.assert_allclose(ours, expected, rtol=0, atol=TOL)
        theta = trained
    mine, theirs = torch_task.evaluate(ours), numpy_task.evaluate(trained)
    assert mine["accuracy"] == theirs["accuracy"]
    assert mine["loss"] == pytest.approx(theirs["loss"], rel=1e-12)  # the same logits to TOL, a mean of logs


# ------------------------------------------------------------------ determinism in a run

SCENARIO = """
[run]
name = "torch_determinism"
seed = 3
rounds = 3
runs = 1

[topology]
kind = "star"
clients = 6

[links.uplink]
latency = { model = "lognormal", mu = -1.0, sigma = 0.5 }
loss = { model = "bernoulli", p = 0.1 }

[nodes]
participation = 0.8
speed = { model = "pareto", alpha = 1.5, speed = 400.0 }

[data]
kind = "classification"
source = "sklearn"
partition = "dirichlet"
alpha = 0.5

[task]
name = "netemu_torch_task:SPEC"
channels = 4
lr = 0.1
batch = 32
epochs = 1
metrics = ["accuracy", "loss", "f1"]

[[algorithm]]
name = "fedavg"
round_time = 4.0
"""


def test_a_fedavg_run_on_the_torch_task_is_deterministic(tmp_path):
    path = tmp_path / "torch.toml"
    path.write_text(SCENARIO)
    for name, seed in (("a", 0), ("b", 12345)):
        torch.manual_seed(seed)  # torch's own generator decides nothing: another seed, the same run
        summary = netemu.run_folder(load_scenario(path, ["output.plots=false"]), tmp_path / name)
        assert summary["complete"]
    for name in ("messages.jsonl", "metrics.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    metrics = (tmp_path / "a" / "metrics.csv").read_text()
    assert "accuracy" in metrics and "f1" in metrics and (tmp_path / "a" / "messages.jsonl").stat().st_size > 0
