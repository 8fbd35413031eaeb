"""Many clients' local SGD as one batched computation, bit for bit the per-client result.

`softmax_sgd_many` runs `netemu.kernels.classifiers.sgd` for K clients of the `Softmax`
model at once — the same epochs, permutations (each client's own Generator), mini-batches,
proximal term (FedPnP eq. 9, FedProx) and step — on (K, batch, d) arrays, as the
vectorized references do.  Each client's slice goes through exactly the operations `sgd`
applies to it alone: NumPy's stacked `matmul` makes one BLAS call per slice with that
slice's shapes and strides, the reductions run along the same axes in the same order and
the rest is elementwise; so the result is equal to K calls of `sgd`, not just close
(tests/test_batched.py checks equality).  A cohort uses it to train the clients whose
rounds are in progress together (netemu.algorithms.graphfl_client).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from netemu.kernels.classifiers import Softmax, passes

__all__ = ["softmax_sgd_many"]


def softmax_sgd_many(model: Softmax, thetas: np.ndarray, X: np.ndarray, y: np.ndarray, *, epochs: float, batch: int,
                     lr: np.ndarray, rngs: Sequence[np.random.Generator], mu: float = 0.0,
                     anchors: np.ndarray | None = None) -> np.ndarray:
    """`sgd(model, thetas[k], X[k], y[k], epochs=epochs, batch=batch, lr=lr[k], rng=rngs[k],
    mu=mu, anchor=anchors[k])` for every k, as a new (K, B) array.

    X is (K, n, d) and y (K, n): every client has n samples.  Each epoch draws one
    permutation per client from its own Generator, in client order (each Generator is
    used by its client only, so the order of the draws does not matter)."""
    K, n, d = X.shape
    C = model.C
    theta = np.array(thetas, dtype=float)  # a copy, as `sgd` copies
    anchors = theta.copy() if anchors is None else anchors
    W = theta[:, : d * C].reshape(K, d, C)  # views into theta: the steps below update them
    b = theta[:, d * C :]
    steps = np.asarray(lr, dtype=float)[:, None]
    clients = np.arange(K)[:, None]
    for size in passes(epochs, n):
        order = np.stack([rng.permutation(n)[:size] for rng in rngs])
        for start in range(0, size, batch):
            rows = order[:, start : start + batch]
            m = rows.shape[1]
            Xb, yb = X[clients, rows], y[clients, rows]  # (K, m, d), (K, m)
            logits = Xb @ W + b[:, None, :]  # Softmax.logits
            z = logits - logits.max(axis=2, keepdims=True)  # classifiers._cross_entropy
            p = np.exp(z)
            p /= p.sum(axis=2, keepdims=True)
            p[clients, np.arange(m)[None, :], yb] -= 1.0
            g = p / m
            grad = np.concatenate([(Xb.transpose(0, 2, 1) @ g).reshape(K, d * C), g.sum(axis=1)], axis=1)  # Softmax.loss_grad
            theta -= steps * (grad + mu * (theta - anchors))
    return theta
