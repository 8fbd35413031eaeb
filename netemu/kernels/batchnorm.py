"""Batch normalization (Ioffe & Szegedy, ICML 2015, Algorithm 1 and its backward pass).

Per feature j over the N rows of a batch (rows are samples; for convolutions, samples ×
pixels): μ = mean, σ² = mean((x − μ)²) (biased), x̂ = (x − μ)/√(σ² + ε), y = γ x̂ + β.
Training mode uses the batch's μ and σ²; evaluation mode uses running statistics, which
the training loop updates after each step as r ← (1 − m) r + m · batch statistic, with
the unbiased variance σ² N/(N − 1) (as PyTorch does; m = `MOMENTUM`).

Running variances reach a model from elsewhere (a federated average, a graph filter whose
weights may be negative), so `evaluate` clips them at 0 before adding ε.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EPS", "MOMENTUM", "backward", "evaluate", "train"]

EPS = 1e-5
MOMENTUM = 0.1


def train(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, tuple, np.ndarray]:
    """y, the cache for `backward`, and the batch statistics [μ, unbiased σ²] (length 2·features)
    of x (N × features) in training mode."""
    n = x.shape[0]
    mu = x.mean(axis=0)
    centred = x - mu
    var = np.mean(centred * centred, axis=0)
    inv = 1.0 / np.sqrt(var + EPS)
    xhat = centred * inv
    stats = np.concatenate([mu, var * (n / (n - 1) if n > 1 else 1.0)])
    return xhat * gamma + beta, (xhat, inv, gamma), stats


def backward(dy: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dγ, dβ) of the training-mode transform, with the batch statistics differentiated
    through: dx = (γ/√(σ²+ε)) (dy − mean(dy) − x̂ mean(dy x̂))."""
    xhat, inv, gamma = cache
    dbeta = dy.sum(axis=0)
    dgamma = np.sum(dy * xhat, axis=0)
    n = dy.shape[0]
    dx = (gamma * inv) * (dy - dbeta / n - xhat * (dgamma / n))
    return dx, dgamma, dbeta


def evaluate(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Evaluation mode: the running statistics in place of the batch's."""
    return (x - mean) * (gamma / np.sqrt(np.maximum(var, 0.0) + EPS)) + beta
