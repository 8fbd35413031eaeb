"""Pure-NumPy classifiers whose parameters travel as one flat vector.

* `Softmax(d, C)` — multinomial logistic regression: logits = X W + b.
* `MLP(d, H, C)` — one hidden layer: logits = relu(X W1 + b1) W2 + b2.
* `MLPBN(d, H, C)` — the same with batch norm after the hidden layer's product:
  logits = relu(BN(X W1)) W2 + b2 (netemu.kernels.batchnorm; no b1, which BN cancels).
* `CNN` (netemu.kernels.cnn) — a small convolutional network with the same interface.

Both use the mean softmax cross-entropy over a batch.  `loss_grad` returns the loss
and its gradient with respect to the flat parameter vector (checked against finite
differences in tests/test_classifiers.py); `sgd` runs epochs of mini-batch SGD on

    loss(θ) + (mu/2) ‖θ − anchor‖²

(the proximal term of FedProx and of FedPnP's local step, FedPnP eq. 9; mu = 0 is plain
SGD).  Labels are integers 0 … C−1.

Every model has `local_mask`: None, or (models with batch norm) a bool vector over θ
marking the batch-norm scales, shifts and running statistics — the entries FedBN keeps
on the client.  A batch-norm model keeps its running statistics inside θ at `running`
(zero gradient) and has `loss_grad_stats`, which `sgd` calls to update them (see `sgd`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netemu.kernels import batchnorm as bn

__all__ = ["MLP", "MLPBN", "Softmax", "accuracy", "batches", "confusion", "cross_entropy", "macro_prf", "minibatch_steps", "passes", "predictions", "sgd"]


def _cross_entropy(logits: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy and its gradient with respect to the logits."""
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    n = y.shape[0]
    loss = float(-np.mean(np.log(p[np.arange(n), y] + 1e-300)))
    p[np.arange(n), y] -= 1.0
    return loss, p / n


@dataclass(frozen=True)
class Softmax:
    d: int
    C: int
    local_mask = None  # no batch norm: nothing for FedBN to keep local

    @property
    def size(self) -> int:
        return self.d * self.C + self.C

    def init(self, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(self.size)

    def _split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return theta[: self.d * self.C].reshape(self.d, self.C), theta[self.d * self.C :]

    def logits(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        W, b = self._split(theta)
        return X @ W + b

    def loss_grad(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        loss, g = _cross_entropy(self.logits(theta, X), y)
        return loss, np.concatenate([(X.T @ g).ravel(), g.sum(axis=0)])


@dataclass(frozen=True)
class MLP:
    d: int
    H: int
    C: int
    local_mask = None

    @property
    def size(self) -> int:
        return self.d * self.H + self.H + self.H * self.C + self.C

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """He-initialized weights, zero biases."""
        W1 = rng.standard_normal((self.d, self.H)) * np.sqrt(2.0 / self.d)
        W2 = rng.standard_normal((self.H, self.C)) * np.sqrt(2.0 / self.H)
        return np.concatenate([W1.ravel(), np.zeros(self.H), W2.ravel(), np.zeros(self.C)])

    def _split(self, theta: np.ndarray):
        d, H, C = self.d, self.H, self.C
        i = d * H
        W1, b1 = theta[:i].reshape(d, H), theta[i : i + H]
        W2, b2 = theta[i + H : i + H + H * C].reshape(H, C), theta[i + H + H * C :]
        return W1, b1, W2, b2

    def logits(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        W1, b1, W2, b2 = self._split(theta)
        return np.maximum(X @ W1 + b1, 0.0) @ W2 + b2

    def loss_grad(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        W1, b1, W2, b2 = self._split(theta)
        pre = X @ W1 + b1
        hidden = np.maximum(pre, 0.0)
        loss, g = _cross_entropy(hidden @ W2 + b2, y)
        g_hidden = (g @ W2.T) * (pre > 0)
        return loss, np.concatenate([(X.T @ g_hidden).ravel(), g_hidden.sum(axis=0), (hidden.T @ g).ravel(), g.sum(axis=0)])


@dataclass(frozen=True)
class MLPBN:
    """One hidden layer with batch norm: logits = relu(BN(X W1)) W2 + b2.  θ = [W1, γ, β,
    W2, b2, running mean, running variance]; training mode (`loss_grad`) normalizes with the
    batch's statistics, evaluation (`logits`) with the running ones."""

    d: int
    H: int
    C: int

    @property
    def size(self) -> int:
        return self.d * self.H + 2 * self.H + self.H * self.C + self.C + 2 * self.H

    @property
    def running(self) -> slice:
        return slice(self.size - 2 * self.H, self.size)

    @property
    def local_mask(self) -> np.ndarray:
        mask = np.zeros(self.size, dtype=bool)
        i = self.d * self.H
        mask[i : i + 2 * self.H] = True  # γ, β
        mask[self.running] = True
        return mask

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """He-initialized weights, γ = 1, β = 0, zero biases, running mean 0 and variance 1."""
        W1 = rng.standard_normal((self.d, self.H)) * np.sqrt(2.0 / self.d)
        W2 = rng.standard_normal((self.H, self.C)) * np.sqrt(2.0 / self.H)
        H = self.H
        return np.concatenate([W1.ravel(), np.ones(H), np.zeros(H), W2.ravel(), np.zeros(self.C), np.zeros(H), np.ones(H)])

    def _split(self, theta: np.ndarray):
        d, H, C = self.d, self.H, self.C
        i = d * H
        j = i + 2 * H + H * C
        return (theta[:i].reshape(d, H), theta[i : i + H], theta[i + H : i + 2 * H],
                theta[i + 2 * H : j].reshape(H, C), theta[j : j + C], theta[j + C : j + C + H], theta[j + C + H :])

    def logits(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        W1, gamma, beta, W2, b2, mean, var = self._split(theta)
        return np.maximum(bn.evaluate(X @ W1, gamma, beta, mean, var), 0.0) @ W2 + b2

    def loss_grad_stats(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Training mode: loss, gradient (zero on the running statistics), the batch's [mean, variance]."""
        W1, gamma, beta, W2, b2, _, _ = self._split(theta)
        pre, cache, stats = bn.train(X @ W1, gamma, beta)
        hidden = np.maximum(pre, 0.0)
        loss, g = _cross_entropy(hidden @ W2 + b2, y)
        dpre, dgamma, dbeta = bn.backward((g @ W2.T) * (pre > 0), cache)
        grad = np.concatenate([(X.T @ dpre).ravel(), dgamma, dbeta, (hidden.T @ g).ravel(), g.sum(axis=0), np.zeros(2 * self.H)])
        return loss, grad, stats

    def loss_grad(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grad, _ = self.loss_grad_stats(theta, X, y)
        return loss, grad


def passes(epochs: float, n: int) -> list[int]:
    """The samples each pass over n samples covers in `epochs` epochs: ⌊epochs⌋ full passes
    and, for a fractional epochs (G-Fedfilt's relaxed α), a last pass over the first
    round(frac · n) samples of its permutation (none when that rounds to 0)."""
    full = int(epochs)
    part = round((epochs - full) * n)
    return [n] * full + ([part] if part > 0 else [])


def sgd(
    model, theta: np.ndarray, X: np.ndarray, y: np.ndarray, *, epochs: float, batch: int, lr: float,
    rng: np.random.Generator, mu: float = 0.0, anchor: np.ndarray | None = None,
) -> np.ndarray:
    """`epochs` passes of mini-batch SGD (a fresh permutation per epoch from `rng`; a
    fractional epochs ends with a partial pass, `passes`) on the loss plus
    (mu/2)‖θ − anchor‖²; returns a new vector.

    The batch-norm hook: a model whose `running` is not None (the slice of θ holding its
    running statistics) is stepped through `loss_grad_stats`, and after each step those
    entries are set to (1 − m) r + m s — r their value before the step, s the batch's
    statistics, m = `bn.MOMENTUM` — instead of the gradient step (their gradient is zero,
    and the proximal term does not pull them).  Other models take the plain path below."""
    theta = theta.copy()
    anchor = theta.copy() if anchor is None else anchor
    n = y.shape[0]
    running = getattr(model, "running", None)
    for size in passes(epochs, n):
        order = rng.permutation(n)[:size]
        for start in range(0, size, batch):
            rows = order[start : start + batch]
            if running is None:
                _, g = model.loss_grad(theta, X[rows], y[rows])
                theta -= lr * (g + mu * (theta - anchor))
            else:
                _batchnorm_step(model, theta, X[rows], y[rows], lr, mu, anchor, running)
    return theta


def _batchnorm_step(model, theta: np.ndarray, X: np.ndarray, y: np.ndarray, lr: float, mu: float, anchor: np.ndarray,
                    running: slice) -> None:
    """One step of a batch-norm model in place: the gradient step on the loss plus (mu/2)‖θ − anchor‖²,
    then the running statistics set to (1 − m) r + m s (`sgd` explains the hook)."""
    _, g, stats = model.loss_grad_stats(theta, X, y)
    tracked = (1 - bn.MOMENTUM) * theta[running] + bn.MOMENTUM * stats
    theta -= lr * (g + mu * (theta - anchor))
    theta[running] = tracked


def batches(n: int, batch: int, steps: int, rng: np.random.Generator | None):
    """The rows of each of `steps` mini-batches over n samples: a fresh permutation from `rng`
    per pass, cut into batches of `batch` (the last of a pass smaller) — the batches `sgd`
    takes for whole epochs; `batch` 0 (or >= n) is the whole set in order, with no draw."""
    if batch <= 0 or batch >= n:
        for _ in range(steps):
            yield slice(None)
        return
    assert rng is not None
    done = 0
    while done < steps:
        order = rng.permutation(n)
        for start in range(0, n, batch):
            if done == steps:
                return
            yield order[start : start + batch]
            done += 1


def minibatch_steps(
    model, theta: np.ndarray, X: np.ndarray, y: np.ndarray, *, steps: int, batch: int, lr: float,
    rng: np.random.Generator | None, mu: float = 0.0,
) -> np.ndarray:
    """`steps` SGD steps (mini-batches from `batches`) on the loss plus (mu/2)‖θ − θ₀‖²
    (FedProx's proximal term around the starting θ₀, Li et al. MLSys 2020, eq. 2); a new
    vector.  A batch-norm model tracks its running statistics as in `sgd`.  A model with `full_batch_steps` takes that path for whole-set steps without a
    proximal term (the least-squares kernel's own loop)."""
    if y.shape[0] == 0:
        return theta.copy()
    if mu == 0 and (batch <= 0 or batch >= y.shape[0]) and hasattr(model, "full_batch_steps"):
        return model.full_batch_steps(theta, X, y, lr, steps)
    anchor = theta
    theta = theta.copy()
    running = getattr(model, "running", None)
    for rows in batches(y.shape[0], batch, steps, rng):
        if running is not None:  # a batch-norm model: its running statistics tracked as in `sgd`
            _batchnorm_step(model, theta, X[rows], y[rows], lr, mu, anchor, running)
            continue
        _, g = model.loss_grad(theta, X[rows], y[rows])
        theta -= lr * (g + mu * (theta - anchor)) if mu else lr * g
    return theta


def cross_entropy(model, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """The mean softmax cross-entropy of the model's logits (evaluation mode) on (X, y)."""
    return _cross_entropy(model.logits(theta, X), y)[0]


def accuracy(model, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(model.logits(theta, X), axis=1) == y))


def confusion(y: np.ndarray, pred: np.ndarray, classes: int) -> np.ndarray:
    """Confusion counts C[true, predicted] of integer labels in range(classes)."""
    y, pred = np.asarray(y, dtype=int), np.asarray(pred, dtype=int)
    return np.bincount(y * classes + pred, minlength=classes * classes).reshape(classes, classes)


def macro_prf(y: np.ndarray, pred: np.ndarray, classes: int) -> tuple[float, float, float]:
    """Macro precision, recall and F1 (G-Fedfilt Table VI) over the classes present in y or pred.

    Per class c: precision = C[c,c] / Σ_t C[t,c], recall = C[c,c] / Σ_p C[c,p],
    F1 = 2 P R / (P + R) (0 where undefined); each is averaged over the classes that occur
    as a label or a prediction, so classes absent from both do not dilute the mean."""
    C = confusion(y, pred, classes)
    tp = np.diag(C).astype(float)
    col, row = C.sum(axis=0), C.sum(axis=1)
    seen = (col + row) > 0
    if not seen.any():
        return 0.0, 0.0, 0.0
    p = np.divide(tp, col, out=np.zeros(classes), where=col > 0)
    r = np.divide(tp, row, out=np.zeros(classes), where=row > 0)
    f = np.divide(2 * p * r, p + r, out=np.zeros(classes), where=(p + r) > 0)
    return float(p[seen].mean()), float(r[seen].mean()), float(f[seen].mean())


def predictions(model, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The class each row of X is assigned (the arg-max logit)."""
    return np.argmax(model.logits(theta, X), axis=1)
