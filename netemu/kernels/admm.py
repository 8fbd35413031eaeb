"""Kernels of personalized graph FL with ADMM (PGFL, thesis Chapter 5).

All functions are pure: they return new arrays and touch nothing else.  Loss
conventions follow §5.4: ridge ℓ_k = ‖y_k − X_k w‖², R(w) = ‖w‖² (eq. 5.34), and the
mean logistic loss (eqs. 5.36–5.37) with labels in {0, 1}.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "accuracy",
    "contribution",
    "inter_cluster",
    "logistic_primal",
    "nmsd",
    "ridge_primal",
    "ridge_system",
    "sensitivity",
]


def ridge_system(X: np.ndarray, y: np.ndarray, rho: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """The fixed part of the client primal update (5.4) for ridge regression,

        argmin_w (1/D)‖y − Xw‖² + lam‖w‖² − ⟨φ, w − w_s⟩ + (ρ/2)‖w − w_s‖²
        = [(2/D) XᵀX + (2 lam + ρ) I]⁻¹ [(2/D) Xᵀy + φ + ρ w_s],

    as (the inverse matrix, (2/D) Xᵀy); `lam` is the client's share λ/|C_s| of the
    regularizer.  Computed once per client: only φ and w_s change between iterations.
    """
    D, d = X.shape
    A = (2.0 / D) * (X.T @ X) + (2.0 * lam + rho) * np.eye(d)
    return np.linalg.inv(A), (2.0 / D) * (X.T @ y)


def ridge_primal(system: tuple[np.ndarray, np.ndarray], phi: np.ndarray, w_s: np.ndarray, rho: float) -> np.ndarray:
    """Client primal update (5.4) for ridge regression from its `ridge_system`."""
    inverse, xty = system
    return inverse @ (xty + phi + rho * w_s)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # = 1 / (1 + exp(−z)) without overflow


def logistic_primal(
    X: np.ndarray, y: np.ndarray, phi: np.ndarray, w_s: np.ndarray, rho: float, lam: float,
    start: np.ndarray, newton_steps: int = 8,
) -> np.ndarray:
    """Client primal update (5.4) for logistic regression (5.36)–(5.37): `newton_steps`
    Newton iterations from `start` on the strongly convex (ρ > 0) objective

        (1/D) Σ_i [−y_i log σ(wᵀx_i) − (1 − y_i) log(1 − σ(wᵀx_i))] + lam‖w‖²
        − ⟨φ, w − w_s⟩ + (ρ/2)‖w − w_s‖².

    The Hessian is c I + Bᵀ B with c = 2 lam + ρ and B = diag(√(σ(1 − σ)/D)) X, of rank at
    most D.  With fewer samples than features (PGFL's clients hold 2–10 images of 64 or
    784 pixels) each Newton step solves it by the Woodbury identity,
    H⁻¹ g = (g − Bᵀ (c I_D + B Bᵀ)⁻¹ B g) / c: a D × D system instead of a d × d one
    (on 784-pixel MNIST about a hundred times faster), the same step up to rounding.
    """
    D, d = X.shape
    w = start.copy()
    c = 2 * lam + rho
    low_rank = D < d
    eye = np.eye(D if low_rank else d)
    for _ in range(newton_steps):
        p = _sigmoid(X @ w)
        grad = X.T @ (p - y) / D + 2 * lam * w - phi + rho * (w - w_s)
        if low_rank:
            B = X * np.sqrt(p * (1 - p) / D)[:, None]
            w = w - (grad - B.T @ np.linalg.solve(c * eye + B @ B.T, B @ grad)) / c
        else:
            hess = (X.T * (p * (1 - p))) @ X / D + c * eye
            w = w - np.linalg.solve(hess, grad)
    return w


def contribution(w_shared: np.ndarray, phi_prev: np.ndarray, rho: float) -> np.ndarray:
    """A client's term in the server aggregation (5.8)/(5.12): w̃_k − φ_k⁽ⁿ⁻¹⁾/ρ."""
    return w_shared - phi_prev / rho


def inter_cluster(hat: np.ndarray, tau: float) -> np.ndarray:
    """Inter-cluster learning (5.10) on the Q × d inter-server aggregates ŵ_(q):
    w_(q) = (1 − τ) ŵ_(q) + τ/(Q − 1) Σ_{r≠q} ŵ_(r).  With one cluster it is the identity."""
    Q = hat.shape[0]
    if Q == 1 or tau == 0:
        return hat.copy()
    others = (hat.sum(axis=0, keepdims=True) - hat) / (Q - 1)
    return (1 - tau) * hat + tau * others


def sensitivity(grad_bound: float, rho: float, samples: int) -> float:
    """l2-sensitivity of a client's primal variable, Δ = 2 C_k / (ρ D_k) (Lemma 5.1, eq. 5.31)."""
    return 2.0 * grad_bound / (rho * samples)


def nmsd(W: np.ndarray, W_star: np.ndarray) -> np.ndarray:
    """Each row's normalized squared deviation ‖w_k − w*_(q)‖² / ‖w*_(q)‖² (the terms of eq. 5.35)."""
    return np.sum((W - W_star) ** 2, axis=-1) / np.sum(W_star**2, axis=-1)


def accuracy(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """Share of samples whose predicted label 1[σ(wᵀx) > 1/2] equals y."""
    return float(np.mean((X @ w > 0) == (y > 0.5)))
