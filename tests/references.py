"""Small fully vectorized NumPy references of the algorithms (ideal network)."""

import numpy as np


def fedavg(parts: list[tuple[np.ndarray, np.ndarray]], dim: int, rounds: int, lr: float, steps: int) -> np.ndarray:
    """FedAvg with every client in every round: all clients' local steps at once.

    Clients' data are zero-padded to a common length; zero rows add nothing to
    X_k^T (X_k w - y_k), and the gradient is divided by the true n_k.
    """
    n = np.array([y.shape[0] for _, y in parts], dtype=float)
    X = np.zeros((len(parts), int(n.max()), dim))
    Y = np.zeros((len(parts), int(n.max())))
    for k, (x, y) in enumerate(parts):
        X[k, : y.shape[0]], Y[k, : y.shape[0]] = x, y
    w = np.zeros(dim)
    for _ in range(rounds):
        W = np.broadcast_to(w, (len(parts), dim))
        for _ in range(steps):
            residual = np.einsum("kni,ki->kn", X, W) - Y
            W = W - lr * np.einsum("kni,kn->ki", X, residual) / n[:, None]
        w = n @ W / n.sum()
    return w
