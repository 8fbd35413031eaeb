"""Staleness weights and the server updates of asynchronous / straggler-robust FL (pure NumPy).

An update computed from the server's model of version τ and applied at version t has
staleness t − τ.  The families in netemu.algorithms.async_fl weigh it by s(t − τ):
`constant` s = 1; `polynomial` s(d) = (1 + d)^−a (FedAsync §5.2 with a = 0.5 is FedBuff's
1/√(1 + d)).
"""

from __future__ import annotations

import numpy as np

__all__ = ["buffered_step", "mix", "staleness_weight", "weighted_delta_step"]


def staleness_weight(staleness: float, kind: str, a: float) -> float:
    """s(t − τ): 1 for `constant`, (1 + t − τ)^−a for `polynomial`."""
    if kind == "constant":
        return 1.0
    if kind == "polynomial":
        return float((1.0 + staleness) ** -a)
    raise ValueError(f"unknown staleness function {kind!r} (constant, polynomial)")


def mix(x: np.ndarray, x_new: np.ndarray, alpha: float) -> np.ndarray:
    """FedAsync's update (Xie et al. 2019, Algorithm 1): x ← (1 − α_t) x + α_t x_new."""
    return (1.0 - alpha) * x + alpha * x_new


def buffered_step(x: np.ndarray, deltas: np.ndarray, weights: np.ndarray, server_lr: float) -> np.ndarray:
    """FedBuff's server step (Nguyen et al. 2022, Algorithm 1): x ← x + η_g · (1/K) Σ_i s(τ_i) Δ_i
    over the K buffered client deltas Δ_i = y_i − x_{τ_i} (rows of `deltas`)."""
    return x + server_lr * (np.asarray(weights, dtype=float) @ np.asarray(deltas)) / len(weights)


def weighted_delta_step(x: np.ndarray, deltas: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """A synchronous round's aggregate of client deltas: x ← x + Σ_i a_i Δ_i / Σ_i a_i
    (a_i = n_i for fresh updates: FedAvg's weighted average of the models, McMahan et al. 2017;
    a_i = n_i · s(τ_i) for late ones carried over)."""
    weights = np.asarray(weights, dtype=float)
    return x + weights @ np.asarray(deltas) / weights.sum()
