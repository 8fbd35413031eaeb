"""The CNN and the batch-norm models: gradients against finite differences, evaluation
mode, the running-statistics hook of `sgd`, the FedBN mask, and learning."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netemu.kernels import batchnorm as bn
from netemu.kernels.classifiers import MLP, MLPBN, Softmax, accuracy, sgd
from netemu.kernels.cnn import CNN, _col2im, _im2col, _pool, _unpool, square_side

MODELS = [
    CNN(6, 3, c1=2),
    CNN(6, 3, c1=2, batchnorm=True),
    CNN(8, 3, c1=2, c2=3),
    CNN(9, 3, c1=2, c2=2, batchnorm=True),  # odd sides: 9 → 4 → 2, the last row/column dropped
    MLPBN(5, 4, 3),
]


def numeric_gradient(model, theta, X, y, h=1e-6):
    """Central differences of the training-mode loss, entry by entry."""
    out = np.zeros_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        out[i] = (model.loss_grad(theta + e, X, y)[0] - model.loss_grad(theta - e, X, y)[0]) / (2 * h)
    return out


@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_gradients_match_finite_differences(model):
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((5, model.d)), rng.integers(0, 3, 5)
    theta = model.init(rng) + 0.1 * rng.standard_normal(model.size)
    _, g = model.loss_grad(theta, X, y)
    # float64 central differences with h = 1e-6: truncation ~h² and rounding ~1e-16/h, both far below 1e-6
    np.testing.assert_allclose(g, numeric_gradient(model, theta, X, y), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("model", [m for m in MODELS if m.local_mask is not None], ids=repr)
def test_running_statistics_have_zero_gradient_and_do_not_change_the_training_loss(model):
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((6, model.d)), rng.integers(0, 3, 6)
    theta = model.init(rng)
    loss, g = model.loss_grad(theta, X, y)
    assert np.all(g[model.running] == 0)
    moved = theta.copy()
    moved[model.running] += rng.uniform(0.5, 2.0, moved[model.running].size)
    assert model.loss_grad(moved, X, y)[0] == loss
    assert not np.allclose(model.logits(moved, X), model.logits(theta, X))  # evaluation uses them


def test_the_local_mask_marks_exactly_the_batch_norm_entries():
    m = MLPBN(5, 4, 3)
    d, H, C = 5, 4, 3
    expected = np.r_[np.zeros(d * H), np.ones(2 * H), np.zeros(H * C + C), np.ones(2 * H)].astype(bool)
    assert np.array_equal(m.local_mask, expected)
    c = CNN(6, 3, c1=2, c2=3, batchnorm=True)
    # per convolution γ and β, plus running mean and variance: 4 values per channel
    assert c.local_mask.sum() == 4 * (2 + 3) and c.local_mask[c.running].all()
    assert Softmax(4, 3).local_mask is None and MLP(4, 5, 3).local_mask is None and CNN(6, 3).local_mask is None


def test_evaluation_with_the_batch_statistics_as_running_statistics_equals_training_mode():
    rng = np.random.default_rng(2)
    model = MLPBN(5, 4, 3)
    X = rng.standard_normal((8, 5))
    theta = model.init(rng) + 0.1 * rng.standard_normal(model.size)
    pre = X @ theta[: 20].reshape(5, 4)
    theta[model.running] = np.r_[pre.mean(axis=0), pre.var(axis=0)]  # biased variance, as training mode uses
    W1, gamma, beta, W2, b2, _, _ = model._split(theta)
    train_logits = np.maximum(bn.train(pre, gamma, beta)[0], 0) @ W2 + b2
    np.testing.assert_allclose(model.logits(theta, X), train_logits, rtol=1e-12, atol=1e-12)


def test_sgd_tracks_running_statistics_with_momentum_and_unbiased_variance():
    rng = np.random.default_rng(3)
    model = MLPBN(3, 2, 2)
    X, y = rng.standard_normal((4, 3)), np.array([0, 1, 0, 1])
    theta = model.init(rng)
    after = sgd(model, theta, X, y, epochs=1, batch=4, lr=0.1, rng=np.random.default_rng(0), mu=3.0)
    pre = X @ theta[:6].reshape(3, 2)  # one step on the whole batch: statistics of the starting weights
    expected = 0.9 * theta[model.running] + 0.1 * np.r_[pre.mean(axis=0), pre.var(axis=0, ddof=1)]
    np.testing.assert_allclose(after[model.running], expected, rtol=1e-12)
    _, g = model.loss_grad(theta, X, y)
    rest = ~np.isin(np.arange(model.size), np.arange(model.size)[model.running])
    np.testing.assert_allclose(after[rest], (theta - 0.1 * g)[rest], rtol=1e-12)  # anchor = start: no pull at step 1


def test_models_without_batch_norm_take_sgds_plain_path_unchanged():
    """Softmax/MLP results are what the loop before the batch-norm hook computed, bit for bit."""
    rng = np.random.default_rng(4)
    for model in (Softmax(16, 3), MLP(16, 4, 3), CNN(4, 3, c1=2)):
        X, y = rng.standard_normal((30, 16)), rng.integers(0, 3, 30)
        theta = model.init(np.random.default_rng(5))
        anchor = theta + 0.01
        got = sgd(model, theta, X, y, epochs=2, batch=7, lr=0.1, rng=np.random.default_rng(6), mu=0.3, anchor=anchor)
        ref, order_rng = theta.copy(), np.random.default_rng(6)
        for _ in range(2):
            order = order_rng.permutation(30)
            for s in range(0, 30, 7):
                r = order[s : s + 7]
                ref -= 0.1 * (model.loss_grad(ref, X[r], y[r])[1] + 0.3 * (ref - anchor))
        assert np.array_equal(got, ref)


def test_evaluation_survives_negative_running_variances():
    """A graph filter may mix running variances with negative weights; evaluation clips at 0."""
    model = MLPBN(3, 2, 2)
    theta = model.init(np.random.default_rng(0))
    theta[-2:] = -0.5
    assert np.all(np.isfinite(model.logits(theta, np.ones((2, 3)))))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), h=st.integers(1, 7), w=st.integers(1, 7), c=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_im2col_rows_are_the_padded_patches_and_col2im_is_its_adjoint(n, h, w, c, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, c))
    cols = _im2col(x)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    a, b = rng.integers(0, h), rng.integers(0, w)
    patch = padded[0, a : a + 3, b : b + 3, :].transpose(2, 0, 1).ravel()  # (channel, row, column) order
    assert np.array_equal(cols[a * w + b], patch)
    d = rng.standard_normal(cols.shape)
    np.testing.assert_allclose(np.sum(cols * d), np.sum(x * _col2im(d, x.shape)), rtol=1e-10)  # ⟨Ax, d⟩ = ⟨x, Aᵀd⟩


@settings(max_examples=25, deadline=None)
@given(h=st.integers(2, 9), w=st.integers(2, 9), seed=st.integers(0, 2**16))
def test_max_pool_takes_block_maxima_and_routes_gradients_to_them(h, w, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, h, w, 3))
    out, idx = _pool(x)
    p, q = h // 2, w // 2
    assert out.shape == (2, p, q, 3)
    assert np.array_equal(out[1, p - 1, q - 1], x[1, 2 * p - 2 : 2 * p, 2 * q - 2 : 2 * q].max(axis=(0, 1)))
    dx = _unpool(np.ones_like(out), idx, x.shape)
    routed = dx[:, : 2 * p, : 2 * q] == 1
    block_max = np.repeat(np.repeat(out, 2, axis=1), 2, axis=2)
    assert dx.sum() == out.size and np.array_equal(x[:, : 2 * p, : 2 * q][routed], block_max[routed])


def test_square_side():
    assert [square_side(d) for d in (64, 784, 900, 1, 65, 2352, 3072, 0)] == [8, 28, 30, 1, None, None, None, None]


@pytest.mark.parametrize("model", [CNN(8, 2, c1=4), CNN(8, 2, c1=4, batchnorm=True), MLPBN(64, 8, 2)], ids=repr)
def test_training_on_a_separable_set_raises_accuracy(model):
    """Bright left half against bright right half of 8×8 images, with noise: chance is 1/2."""
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 80)
    img = rng.uniform(0, 0.3, (80, 8, 8))
    img[y == 0, :, :4] += 0.7
    img[y == 1, :, 4:] += 0.7
    X = img.reshape(80, 64)
    theta = model.init(np.random.default_rng(8))
    before = accuracy(model, theta, X, y)
    trained = sgd(model, theta, X, y, epochs=10, batch=8, lr=0.05, rng=np.random.default_rng(9))
    assert accuracy(model, trained, X, y) >= 0.95 and accuracy(model, trained, X, y) > before


def test_a_cnn_too_small_to_pool_is_refused():
    with pytest.raises(ValueError, match="side 2"):
        CNN(2, 3, c2=4)


@pytest.mark.parametrize("model", [CNN(7, 3, c1=2), CNN(9, 3, c1=2, c2=2)], ids=repr)
def test_without_batch_norm_evaluation_and_training_compute_the_same_logits(model):
    from netemu.kernels.classifiers import _cross_entropy

    rng = np.random.default_rng(10)
    X, y = rng.standard_normal((6, model.d)), rng.integers(0, 3, 6)
    theta = model.init(rng)
    assert model.loss_grad(theta, X, y)[0] == _cross_entropy(model.logits(theta, X), y)[0]


# --- through graphfl: model selection, the emulator, validate and the shipped scenario ---


@pytest.mark.parametrize("model", ["cnn_bn", "mlp_bn", "cnn"])
def test_fedavg_with_the_model_in_an_ideal_network_matches_a_plain_loop(model):
    """Every client's sgd from its row, then the ζ-weighted mean — with the running
    statistics travelling inside θ and averaged like every other entry."""
    from test_graphfl import K, final_models, setup

    world, p, task = setup("mean-filter", mu=0.0, model=model, rounds=3, **({"channels": 3} if model.startswith("cnn") else {}))
    world.run()
    st = world.actors["server"].state
    assert type(st.model).__name__ == {"cnn_bn": "CNN", "mlp_bn": "MLPBN", "cnn": "CNN"}[model]
    Psi = np.tile(st.theta0, (K, 1))
    for t in range(1, 4):
        trained = np.stack([sgd(st.model, Psi[i], *task.parts[k], epochs=p.epochs, batch=p.batch, lr=p.lr,
                                rng=world.streams.generator(f"sgd/{k}/{t}"), anchor=Psi[i])
                            for i, k in enumerate(st.clients)])
        Psi = np.tile(st.zeta @ (Psi + (trained - Psi)), (K, 1))
    assert np.max(np.abs(final_models(world) - Psi)) <= 1e-12
    if st.model.running is not None:  # the running statistics were tracked, not left at their initial values
        assert not np.allclose(Psi[0, st.model.running], st.theta0[st.model.running])


def test_a_cnn_on_features_that_are_not_a_square_is_refused_when_built():
    from netemu.config import ConfigError
    from netemu.tasks.supervised import CNNParams, classifier

    with pytest.raises(ConfigError, match=r'a model for 65 features: "cnn" reads square grey images'):
        classifier(CNNParams(), 65, 10)
    with pytest.raises(ConfigError, match=r"side >= 4"):
        classifier(CNNParams(batchnorm=True, channels2=4), 9, 10)  # 3×3 cannot be pooled twice
    assert classifier(CNNParams(channels=5), 784, 10) == CNN(28, 10, 5, 0, False)
    assert classifier(CNNParams(channels=5, batchnorm=True), 784, 10) == CNN(28, 10, 5, 0, True)


@pytest.mark.parametrize("bad, field", [({"channels": 0}, "channels"), ({"channels2": -1}, "channels2"), ({"batchnorm": "yes"}, "batchnorm")])
def test_bad_model_params_are_refused_with_the_key_named(bad, field):
    from netemu.config import ConfigError
    from netemu.tasks.supervised import CNNParams

    with pytest.raises(ConfigError) as e:
        CNNParams(**bad)
    assert e.value.field == field


SCENARIO = __import__("pathlib").Path(__file__).parent.parent / "scenarios" / "fedpnp_cnn_digits.toml"


def scenario_with_source(tmp_path, source):
    text = SCENARIO.read_text().replace('kind = "digits_fl"', f'kind = "digits_fl"\nsource = "{source}"')
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def test_validate_refuses_a_cnn_on_rgb_or_cifar_images_naming_the_source(tmp_path, capsys):
    from test_data_loaders import cifar, medmnist

    from netemu.cli import main

    medmnist(tmp_path / "bloodmnist.npz", np.random.default_rng(0), rgb=True)
    cifar(tmp_path / "cifar", np.random.default_rng(0), batches=1)
    for source in ("bloodmnist.npz", "cifar"):  # 28×28×3 = 2352 and 3072 features
        assert main(["validate", str(scenario_with_source(tmp_path, source))]) == 2
        err = capsys.readouterr().err
        assert f"data.source = '{source}': algorithm[0] = 'fedpnp-soft' needs square grey images" in err
    medmnist(tmp_path / "organmnist.npz", np.random.default_rng(0))  # grey 28×28: accepted
    assert main(["validate", str(scenario_with_source(tmp_path, "organmnist.npz"))]) == 0


def test_a_data_file_is_read_relative_to_the_scenario_and_written_absolute_into_the_run_folder(tmp_path, monkeypatch):
    from test_data_loaders import medmnist

    from netemu.run.folder import resolved_toml
    from netemu.scenario import load_scenario

    (tmp_path / "scenarios").mkdir()
    medmnist(tmp_path / "organmnist.npz", np.random.default_rng(0))
    monkeypatch.chdir(tmp_path)  # from here "../organmnist.npz" is not the file
    sc = load_scenario(scenario_with_source(tmp_path / "scenarios", "../organmnist.npz"))
    assert sc.data_params().source == str(tmp_path / "scenarios" / "../organmnist.npz")
    assert __import__("tomllib").loads(resolved_toml(sc))["data"]["source"] == str((tmp_path / "organmnist.npz").resolve())


def test_the_cnn_scenario_runs_on_an_idx_folder_of_28x28_images(tmp_path):
    import json

    from test_data_loaders import mnist_folder

    from netemu.cli import main

    mnist_folder(tmp_path / "mnist", np.random.default_rng(0), n=(200, 60))
    out = tmp_path / "out"
    assert main(["run", str(scenario_with_source(tmp_path, "mnist")), "--out", str(out), "--quiet", "--set", "run.rounds=2",
                 "--set", "data.samples=20", "--set", "data.test_samples=10", "--set", "topology.clients=3"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"]
    # a CNN update over 28×28 images: 8·9 + 8 + 14·14·8·10 + 10 = 15,770 float64 values, ~126 KB on the wire
    messages = [json.loads(line) for line in (out / "messages.jsonl").read_text().splitlines()]
    updates = [m["bytes"] for m in messages if m.get("kind") == "update" and m.get("algorithm") == "fedpnp-cnn" and m["event"] == "send"]
    assert len(updates) == 2 * 3 and min(updates) > 15_770 * 8
