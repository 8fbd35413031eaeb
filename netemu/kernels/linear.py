"""Least-squares linear regression kernels (used by the quick-start FedAvg)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["LeastSquares", "gradient_steps", "mse", "weighted_average"]


def mse(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """Mean squared error (1/n)·‖Xw − y‖²."""
    r = X @ w - y
    return float(r @ r) / y.shape[0]


def gradient_steps(w: np.ndarray, X: np.ndarray, y: np.ndarray, lr: float, steps: int) -> np.ndarray:
    """`steps` full-batch gradient steps on (1/2n)·‖Xw − y‖²; returns a new vector.

    `np.dot` rather than `@`: for a matrix and a vector both call BLAS's gemv, so the bits are the
    same, but `matmul`'s call costs ~1 µs more, and the quick start makes 10 products per client
    and round (a sixth of its CPU at 100,000 clients went to this function).

    Stacked, the same steps for k clients of n samples each at once: X (k, n, d), y (k, n, 1) and
    w (d, 1) or (k, d, 1), giving (k, d, 1).  `matmul` then calls the same gemv for each client's
    products (the same bits as one call each: tests/test_linear_kernels.py) and the other operations
    are elementwise, so client i's row is `gradient_steps(w, X[i], y[i, :, 0], lr, steps)` to the
    last bit, for a few array operations a step rather than six per client."""
    dot: Callable[..., Any]
    if X.ndim == 2:
        n, dot, Xt = y.shape[0], np.dot, X.T
    else:
        n, dot, Xt = y.shape[1], np.matmul, X.transpose(0, 2, 1)
    for _ in range(steps):
        w = w - lr * dot(Xt, dot(X, w) - y) / n
    return w


def weighted_average(vectors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_k a_k v_k / Σ_k a_k over the rows of `vectors` (FedAvg aggregation)."""
    weights = np.asarray(weights, dtype=float)
    return weights @ np.asarray(vectors) / weights.sum()


class LeastSquares:
    """Linear regression as a model with the classifiers' interface (netemu.kernels.classifiers):
    θ = w (d entries, zero at the start), loss (1/2n)·‖Xw − y‖², predictions Xw.  Full-batch
    steps go through `gradient_steps` (the quick start's FedAvg, to the last bit)."""

    local_mask = None
    running = None

    def __init__(self, d: int) -> None:
        self.d = d

    @property
    def size(self) -> int:
        return self.d

    def init(self, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(self.d)

    def predict(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        return X @ theta

    def loss_grad(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        r = X @ theta - y
        n = y.shape[0]
        return float(r @ r) / (2 * n), X.T @ r / n

    def full_batch_steps(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, lr: float, steps: int) -> np.ndarray:
        return gradient_steps(theta, X, y, lr, steps)
