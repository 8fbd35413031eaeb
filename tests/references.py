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


def online_fl(data, p, iterations: int, available, omega: np.ndarray, phase: np.ndarray, test) -> tuple[np.ndarray, list[float]]:
    """PAO-Fed / Online-FedSGD without delays, vectorized over clients (eqs. 4.9–4.14).

    `available(n)` is a boolean vector over clients (the environment's draws, or a row of
    a precomputed matrix); a
    client takes part when it has data and is available, and otherwise, with data,
    updates autonomously (4.11).  Returns the final server model and the test MSE (dB)
    after each iteration.
    """
    K, d, m = len(data.clients), p.rff_dim, p.m
    sample = np.full((iterations, K), -1)
    for k, when in enumerate(data.arrival):
        sample[when[when < iterations], k] = np.nonzero(when < iterations)[0]
    W, w, curve = np.zeros((K, d)), np.zeros(d), []
    ks_all = np.arange(K)
    feats = lambda X: np.sqrt(2.0 / d) * np.cos(X @ omega + phase)
    test_Z = feats(test[0])
    for n in range(iterations):
        has = sample[n] >= 0
        avail = available(n)
        part = ks_all[has & avail]
        idle = ks_all[has & ~avail]
        if part.size:
            X = np.array([data.inputs[k][sample[n, k]] for k in part])
            y = np.array([data.outputs[k][sample[n, k]] for k in part])
            Z = feats(X)
            shift = m * n + (0 if p.coordinated else m * part)[..., None] if not p.coordinated else np.full((part.size, 1), m * n)
            M = (np.arange(m)[None, :] + shift) % d  # rows: M_k^(n) indices
            start = W[part].copy() if p.sharing == "partial" else np.broadcast_to(w, (part.size, d)).copy()
            if p.sharing == "partial":
                start[np.arange(part.size)[:, None], M] = w[M]
            e = y - np.einsum("ki,ki->k", start, Z)
            new = start + p.mu * Z * e[:, None]
            W[part] = new
            if p.sharing == "partial":
                S = M if p.version == 0 else (M + m) % d
            else:
                S = np.broadcast_to(np.arange(d), (part.size, d))
            delta = np.zeros(d)
            np.add.at(delta, S, (new[np.arange(part.size)[:, None], S] - w[S]) / part.size)
            w = w + delta
        if idle.size and p.local_learning:
            X = np.array([data.inputs[k][sample[n, k]] for k in idle])
            y = np.array([data.outputs[k][sample[n, k]] for k in idle])
            Z = feats(X)
            e = y - np.einsum("ki,ki->k", W[idle], Z)
            W[idle] = W[idle] + p.mu * Z * e[:, None]
        r = test[1] - test_Z @ w
        curve.append(float(10 * np.log10(r @ r / r.size)))
    return w, curve
