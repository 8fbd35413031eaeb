"""Kernels of online FL with random Fourier features (thesis Chapter 4).

All functions are pure: they return new arrays and touch nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "Update",
    "aggregate",
    "lms_step",
    "mse_db",
    "rff",
    "rff_features",
    "selection",
    "selection_shift",
    "stochastic_sign",
]


def rff(input_dim: int, dim: int, width: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random Fourier features of the Gaussian kernel exp(−‖x − x'‖² / (2 width²)):
    frequencies Ω ~ N(0, I / width²) (input_dim × dim) and phases b ~ U(0, 2π)."""
    return rng.normal(0.0, 1.0 / width, size=(input_dim, dim)), rng.uniform(0.0, 2 * np.pi, size=dim)


def rff_features(X: np.ndarray, omega: np.ndarray, phase: np.ndarray, *, by_row: bool = False) -> np.ndarray:
    """z = sqrt(2/d) cos(Ωᵀx + b) for every row x of X (cosine features).  `by_row`: each
    row's product Ωᵀx on its own, so that a row's features are bit for bit those of that
    row alone (a stacked product may round differently), the rest in one call."""
    if by_row:
        P = np.empty((X.shape[0], omega.shape[1]))
        for i in range(X.shape[0]):
            np.matmul(X[i : i + 1], omega, out=P[i : i + 1])
    else:
        P = X @ omega
    return np.sqrt(2.0 / omega.shape[1]) * np.cos(P + phase)


def selection(dim: int, m: int, n: int, k: int, coordinated: bool) -> np.ndarray:
    """Indices selected by M_k^(n): diag(M_1^(n)) = circshift(diag(M_1^(0)), m n) with
    M_1^(0) selecting entries 0..m−1 (eq. 4.5), and for uncoordinated sharing
    diag(M_k^(n)) = circshift(diag(M_1^(n)), m k) (§4.4.1)."""
    return (np.arange(m) + selection_shift(m, n, k, coordinated)) % dim


def selection_shift(m: int, n: int, k: int, coordinated: bool) -> int:
    """The circular shift of M_k^(n) in `selection`: m n, plus m k when uncoordinated.
    M_k^(n) depends on it only modulo the dimension, so callers can cache by that."""
    return m * n + (0 if coordinated else m * k)


def lms_step(w: np.ndarray, z: np.ndarray, y: np.ndarray | float, mu: float) -> np.ndarray:
    """w + μ z e with e = y − wᵀz, row-wise for stacked (w, z, y) (eqs. 4.9–4.12)."""
    e = y - np.einsum("...i,...i->...", w, z)
    return w + mu * z * e[..., None]


def stochastic_sign(g: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Stochastic sign of g (Jin et al., 2020): +1 with probability (1 + g_j/B)/2 with
    B = max_j |g_j|, else −1; `u` are uniforms in [0, 1)."""
    bound = np.max(np.abs(g))
    p = 0.5 * (1 + g / bound) if bound > 0 else np.full_like(g, 0.5)
    return np.where(u < p, 1.0, -1.0)


Update = tuple[int, int, np.ndarray, np.ndarray]  # (client, delay l, indices, values)


def aggregate(
    w: np.ndarray,
    updates: Sequence[Update],
    alphas: np.ndarray,
    overlap: str = "client",
) -> np.ndarray:
    """PAO-Fed aggregation, eqs. (4.13)–(4.14):

        w⁽ⁿ⁺¹⁾ = w⁽ⁿ⁾ + Σ_l α_l Δ_l,   Δ_l = 1/|C_l| Σ_{k∈C_l} S_k (w_k − w⁽ⁿ⁾),

    `alphas[l]` is α_l (0 beyond l_max).  Where several updates touch the same
    parameter only the most recent counts (Publication 4, text after eq. 15): the
    selections of older updates lose the entries a more recent update of the same
    client (`overlap="client"`) or of any client (`overlap="all"`) already set.
    Updates are applied in the order given within one delay; an update's indices are
    distinct (a selection, or all entries).
    """
    groups: dict[int, list[Update]] = {}
    for u in updates:
        groups.setdefault(u[1], []).append(u)
    delta = np.zeros_like(w)
    covered: dict[int, np.ndarray] = {}  # entries set by more recent delays (per client, or -1 for all)
    order = sorted(groups)
    keys_of = {l: [client if overlap == "client" else -1 for client, _, _, _ in groups[l]] for l in order}
    later: set[int] = set()  # the keys of the groups after the current one: only they read `covered`
    needed = []
    for l in reversed(order):
        needed.append(set(later))
        later.update(keys_of[l])
    for l, wanted in zip(order, reversed(needed), strict=True):
        group = groups[l]
        alpha = alphas[l] if l < alphas.size else 0.0
        keys = keys_of[l]
        if alpha:
            # Δ_l of the whole group in one scatter: np.add.at adds in the order given, as one
            # `delta[sel] += …` per update would (an update's indices are distinct), bit for bit
            sels, vals = [], []
            for key, (_, _, idx, values) in zip(keys, group, strict=True):
                mask = covered.get(key)
                if mask is None:
                    sels.append(idx)
                    vals.append(values)
                else:
                    keep = ~mask[idx]
                    sels.append(idx[keep])
                    vals.append(values[keep])
            sel = np.concatenate(sels)
            np.add.at(delta, sel, alpha * (np.concatenate(vals) - w[sel]) / len(group))
        for key, (_, _, idx, _) in zip(keys, group, strict=True):
            if key not in wanted:
                continue
            mask = covered.get(key)
            if mask is None:
                mask = covered[key] = np.zeros(w.shape[0], dtype=bool)
            mask[idx] = True
    return w + delta


def mse_db(w: np.ndarray, Z: np.ndarray, y: np.ndarray) -> float:
    """Test MSE in dB: 10 log10(‖y − Zw‖² / T) (eq. 4.36 for one Monte Carlo run)."""
    r = y - Z @ w
    return float(10 * np.log10(r @ r / y.shape[0]))
