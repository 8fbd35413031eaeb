"""The built-in tasks: a NumPy model trained by local SGD on each client's part of the data.

* `linear` — least-squares linear regression (netemu.kernels.linear.LeastSquares) on the
  `linear` data kind; metric `mse` (and `loss`, half of it).  Its defaults are the quick
  start's: 5 full-batch gradient steps of size 0.05.
* `softmax` — multinomial logistic regression; `mlp` — one hidden layer of `hidden` ReLU units;
  `cnn` — conv 3×3 (`channels`) → ReLU → max-pool 2×2 [→ a second such layer, `channels2`] →
  dense (netemu.kernels.classifiers, netemu.kernels.cnn), on the `classification` and
  `digits_fl` data kinds (a CNN needs square grey images).  `batchnorm = true` adds batch norm
  after the MLP's hidden product or after each convolution (its running statistics travel
  inside θ; FedBN keeps those entries on the client).  Metrics: `accuracy`, `loss` (mean
  cross-entropy), `precision`, `recall`, `f1` (macro scores over the classes present).

Mini-batches are drawn from the stream `train/<client>/<n>`, n counting the client's local rounds
in this run, so two algorithms that train a client as often see the same batches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from netemu.config import ConfigError, require
from netemu.data.base import part_sizes
from netemu.engine.rng import Streams
from netemu.kernels.classifiers import MLP, MLPBN, Softmax, accuracy, cross_entropy, macro_prf, minibatch_steps, predictions
from netemu.kernels.cnn import CNN, square_side
from netemu.kernels.linear import LeastSquares, gradient_steps, mse
from netemu.tasks.base import TaskSpec, Training, evaluated, local_steps

__all__ = ["CLASSIFIER_METRICS", "SPECS", "classifier", "CNNParams", "LinearParams", "MLPParams", "ModelTask", "SoftmaxParams"]

CLASSIFIER_METRICS = ("accuracy", "loss", "precision", "recall", "f1")
MACRO = ("precision", "recall", "f1")  # macro_prf's order
REGRESSION_METRICS = ("mse", "loss")
CLASSIFIED = ("classification", "digits_fl")  # the data kinds of labelled samples


def _metrics_ok(metrics: Any, known: tuple[str, ...]) -> bool:
    return isinstance(metrics, (list, tuple)) and len(metrics) > 0 and all(m in known for m in metrics)


class ModelTask:
    """A `Task` (netemu.tasks.base) for a NumPy model with `size`, `init(rng)`, `loss_grad(θ, X, y)`
    and, for a classifier, `logits(θ, X)`; a regression model has `predict(θ, X)`."""

    def __init__(self, model: Any, params: Training, data: Any, streams: Streams, classes: int | None) -> None:
        self.model, self.p, self.classes = model, params, classes
        #: the data the task was made over, its kind's own record (e.g. digits_fl's positions)
        self.data = data
        self.parts: Mapping[str, tuple[np.ndarray, np.ndarray]] = data.parts
        self.test: tuple[np.ndarray, np.ndarray] = data.test
        self.local_tests: Mapping[str, tuple[np.ndarray, np.ndarray]] = getattr(data, "local_tests", None) or {}
        if params.evaluate_on != "server" and not self.local_tests:
            raise ConfigError("evaluate_on", '"server": the data holds no client test splits (set data.client_test > 0)')
        self._streams = streams
        self._sizes = dict(zip(self.parts, part_sizes(self.parts, self.parts)))
        self._rounds: dict[str, int] = {}
        self._theta0 = model.init(streams.generator("task/init"))

    def init(self) -> np.ndarray:
        return self._theta0.copy()

    def samples(self, client: str) -> int:
        return self._sizes[client]

    def _full_steps(self, n: int) -> int:
        p = self.p
        if p.steps:
            return p.steps
        per_pass = 1 if p.batch <= 0 or p.batch >= n else -(-n // p.batch)
        return max(1, round(p.epochs * per_pass))

    def plan(self, client: str, fraction: float) -> tuple[int, float]:
        n = self._sizes[client]
        steps = local_steps(self._full_steps(n), fraction)
        b = n if self.p.batch <= 0 or self.p.batch >= n else self.p.batch
        per_pass = -(-n // b) if b else 1
        work = ((steps // per_pass) * n + min((steps % per_pass) * b, n)) * self.p.work_per_sample
        return steps, int(work) if work.is_integer() else work  # whole units log as integers

    def train(self, params: np.ndarray, client: str, steps: int, *, mu: float = 0.0) -> np.ndarray:
        X, y = self.parts[client]
        k = self._rounds.get(client, 0)
        self._rounds[client] = k + 1
        whole = self.p.batch <= 0 or self.p.batch >= y.shape[0]
        rng = None if whole else self._streams.generator(f"train/{client}/{k}")
        lr = self.p.lr if self.p.lr_decay is None else self.p.lr * self.p.lr_decay**k
        return minibatch_steps(self.model, np.asarray(params, dtype=float), X, y, steps=steps, batch=self.p.batch, lr=lr, rng=rng, mu=mu)

    def _scores(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> dict[str, float]:
        want = self.p.metrics
        if self.classes is None:
            value = mse(theta, X, y)
            return {name: (value if name == "mse" else value / 2) for name in want}
        out = {}
        for name in want:
            if name == "accuracy":
                out[name] = accuracy(self.model, theta, X, y)
            elif name == "loss":
                out[name] = cross_entropy(self.model, theta, X, y)
            else:
                out[name] = macro_prf(y, predictions(self.model, theta, X), self.classes)[MACRO.index(name)]
        return out

    def evaluate(self, params: np.ndarray | Mapping[str, np.ndarray]) -> dict[str, float]:
        return evaluated(self._scores, self.p, params, self.test, self.local_tests)

    def evaluates(self, round: int, rounds: int) -> bool:
        return self.p.evaluates(round, rounds)

    def step_cost(self) -> tuple[Callable[[], object], float]:
        clients = list(self.parts)
        ranked = sorted(zip(part_sizes(self.parts, clients), clients))  # by sample count, then name: no part drawn
        client = ranked[(len(ranked) - 1) // 2][1]
        X, y = self.parts[client]
        theta, n = self.init(), y.shape[0]
        b = n if self.p.batch <= 0 or self.p.batch >= n else self.p.batch
        rng = np.random.default_rng(0)  # the timing's own batches: nothing of the run's streams
        return (lambda: minibatch_steps(self.model, theta, X, y, steps=1, batch=self.p.batch, lr=self.p.lr, rng=rng)), b * self.p.work_per_sample


class LeastSquaresTask(ModelTask):
    """The `linear` task: a `ModelTask` of the least-squares model, which can also train many
    clients at once (`train_many`, what FedAvg's cohort uses for clients waiting on one model)."""

    def train_many(self, params: np.ndarray, clients: list[str], steps: int, *, mu: float = 0.0) -> list[np.ndarray]:
        """`train(params, c, steps, mu=mu)` for each client c, the same vectors to the last bit: the
        clients of each sample count in one stacked `gradient_steps` where every step is a
        whole-set gradient step (constant step size, no proximal term; the quick start), else one
        `train` each."""
        p = self.p
        if mu or steps < 1 or p.batch > 0 or p.lr_decay is not None:
            return [self.train(params, c, steps, mu=mu) for c in clients]
        theta = np.asarray(params, dtype=float)
        out: list[np.ndarray] = [theta] * len(clients)
        by_n: dict[int, list[int]] = {}  # sample count -> positions in clients
        for i, c in enumerate(clients):
            self._rounds[c] = self._rounds.get(c, 0) + 1  # (unused by whole-set steps at a constant step size)
            by_n.setdefault(self._sizes[c], []).append(i)
        for n, index in by_n.items():
            if n == 0:  # no data: the model unchanged (`minibatch_steps`)
                for i in index:
                    out[i] = theta.copy()
                continue
            # one sample count's parts at a time: parts drawn on use (`data.in_memory = false`) are
            # drawn here, never all of a large group at once
            parts = [self.parts[clients[i]] for i in index]
            X = np.stack([x for x, _ in parts])
            y = np.stack([y for _, y in parts])[:, :, None]
            W = gradient_steps(theta[:, None], X, y, p.lr, steps)[:, :, 0]
            for j, i in enumerate(index):
                out[i] = W[j]
        return out


@dataclass(frozen=True)
class LinearParams(Training):
    lr: float = 0.05
    batch: int = 0
    steps: int = 5
    metrics: tuple = ("mse",)

    def __post_init__(self) -> None:
        super().__post_init__()
        require(_metrics_ok(self.metrics, REGRESSION_METRICS), "metrics", 'a list of "mse", "loss"')


@dataclass(frozen=True)
class SoftmaxParams(Training):
    def __post_init__(self) -> None:
        super().__post_init__()
        require(_metrics_ok(self.metrics, CLASSIFIER_METRICS), "metrics", 'a list of "accuracy", "loss", "precision", "recall", "f1"')


@dataclass(frozen=True)
class MLPParams(SoftmaxParams):
    hidden: int = 64
    batchnorm: bool | None = None  # true: batch norm after the hidden layer's product (MLPBN); None: false

    def __post_init__(self) -> None:
        super().__post_init__()
        require(isinstance(self.hidden, int) and self.hidden >= 1, "hidden", "an integer >= 1")
        require(self.batchnorm is None or isinstance(self.batchnorm, bool), "batchnorm", "true or false")


@dataclass(frozen=True)
class CNNParams(SoftmaxParams):
    channels: int = 8
    channels2: int = 0
    batchnorm: bool | None = None  # true: batch norm after each convolution; None: false

    def __post_init__(self) -> None:
        super().__post_init__()
        require(isinstance(self.channels, int) and self.channels >= 1, "channels", "an integer >= 1")
        require(isinstance(self.channels2, int) and self.channels2 >= 0, "channels2", "an integer >= 0 (0: one convolution)")
        require(self.batchnorm is None or isinstance(self.batchnorm, bool), "batchnorm", "true or false")


def _linear(params: LinearParams, data: Any, streams: Streams) -> ModelTask:
    return LeastSquaresTask(LeastSquares(int(data.test[0].shape[1])), params, data, streams, None)


def _classifier(params: SoftmaxParams, data: Any, streams: Streams) -> ModelTask:
    return ModelTask(classifier(params, int(data.test[0].shape[1]), int(data.classes)), params, data, streams, int(data.classes))


def classifier(params: SoftmaxParams, d: int, C: int) -> Any:
    """The model `params` describe, for d features and C classes (netemu.kernels.classifiers, .cnn)."""
    if isinstance(params, CNNParams):
        side = square_side(d)
        if side is None or side < (4 if params.channels2 else 2):
            raise ConfigError("name", f'a model for {d} features: "cnn" reads square grey images (features = side² with side >= '
                              f'{4 if params.channels2 else 2}: 64 for the 8x8 digits, 784 for MNIST; RGB images are not accepted)')
        return CNN(side, C, params.channels, params.channels2, batchnorm=bool(params.batchnorm))
    if isinstance(params, MLPParams):
        return (MLPBN if params.batchnorm else MLP)(d, params.hidden, C)
    return Softmax(d, C)


SPECS = [
    TaskSpec("linear", LinearParams, _linear, ("linear",), "least-squares linear regression, full-batch gradient steps; mse"),
    TaskSpec("softmax", SoftmaxParams, _classifier, CLASSIFIED, "multinomial logistic regression; accuracy, loss, precision, recall, f1"),
    TaskSpec("mlp", MLPParams, _classifier, CLASSIFIED, "one hidden layer of ReLU units (batch norm with batchnorm = true); as softmax"),
    TaskSpec("cnn", CNNParams, _classifier, CLASSIFIED, "conv 3x3, ReLU, max-pool (x2 with channels2), dense (batch norm with batchnorm = true); "
             "square grey images"),
]
