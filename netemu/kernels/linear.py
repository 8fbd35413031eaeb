"""Least-squares linear regression kernels (used by the quick-start FedAvg)."""

from __future__ import annotations

import numpy as np

__all__ = ["gradient_steps", "mse", "weighted_average"]


def mse(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """Mean squared error (1/n)·‖Xw − y‖²."""
    r = X @ w - y
    return float(r @ r) / y.shape[0]


def gradient_steps(w: np.ndarray, X: np.ndarray, y: np.ndarray, lr: float, steps: int) -> np.ndarray:
    """`steps` full-batch gradient steps on (1/2n)·‖Xw − y‖²; returns a new vector."""
    n = y.shape[0]
    for _ in range(steps):
        w = w - lr * (X.T @ (X @ w - y)) / n
    return w


def weighted_average(vectors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_k a_k v_k / Σ_k a_k over the rows of `vectors` (FedAvg aggregation)."""
    weights = np.asarray(weights, dtype=float)
    return weights @ np.asarray(vectors) / weights.sum()
