"""Kernels of networked FL with ADMM between peers (thesis Chapter 3 and Publication 2).

All functions are pure.  Client k minimizes its share of the centralized problem (3.1)

    f_k(w) = ℓ(X_k, y_k; w) / M_k + R(w) / K                          (3.5)

where `Objective` fixes ℓ and R (the regularization weight λ is folded into R):

* ridge        ℓ = ‖Xw − y‖²,   R = l2 ‖w‖²                           (3.24)
* elastic net  ℓ = ‖Xw − y‖²,   R = l1 ‖w‖₁ + l2 ‖w‖²   (§3.4.1, l1 = 0.001 ‖Xᵀy‖∞, l2 = 1)
* lad          ℓ = ‖Xw − y‖₁,   no regularizer                         (§3.4.2)
* logistic     ℓ = Σ_i log(1 + e^{wᵀx_i}) − y_i wᵀx_i (y ∈ {0, 1}),  R = l2 ‖w‖²

Nonsmooth terms use the subgradient with sign(0) = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "OBJECTIVES",
    "Objective",
    "centralized",
    "dgd_step",
    "dual_step",
    "exact_ridge_primal",
    "linearized_primal",
    "metropolis_weights",
    "sensitivity",
]

OBJECTIVES = ("ridge", "elastic_net", "lad", "logistic")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


@dataclass(frozen=True)
class Objective:
    """A loss and regularizer with their (sub)gradients; `l1`/`l2` weigh ‖w‖₁ and ‖w‖²
    and apply only where the objective has that term (see the module docstring)."""

    name: str
    l1: float = 0.0
    l2: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in OBJECTIVES:
            raise ValueError(f"objective {self.name!r}: expected one of {', '.join(OBJECTIVES)}")

    @property
    def weights(self) -> tuple[float, float]:
        """The (l1, l2) actually in R."""
        return {"ridge": (0.0, self.l2), "elastic_net": (self.l1, self.l2), "lad": (0.0, 0.0),
                "logistic": (0.0, self.l2)}[self.name]

    def loss(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
        z = X @ w
        if self.name in ("ridge", "elastic_net"):
            return float(np.sum((z - y) ** 2))
        if self.name == "lad":
            return float(np.sum(np.abs(z - y)))
        return float(np.sum(np.logaddexp(0.0, z) - y * z))

    def loss_grad(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        """ℓ'(X, y; w), a subgradient for lad."""
        z = X @ w
        if self.name in ("ridge", "elastic_net"):
            return 2.0 * (X.T @ (z - y))
        if self.name == "lad":
            return X.T @ np.sign(z - y)
        return X.T @ (_sigmoid(z) - y)

    def reg(self, w: np.ndarray) -> float:
        l1, l2 = self.weights
        return l1 * float(np.sum(np.abs(w))) + l2 * float(w @ w)

    def reg_grad(self, w: np.ndarray) -> np.ndarray:
        l1, l2 = self.weights
        return l1 * np.sign(w) + 2.0 * l2 * w

    def local(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, K: int) -> float:
        """f_k(w) (3.5)."""
        return self.loss(X, y, w) / y.shape[0] + self.reg(w) / K

    def local_grad(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, K: int) -> np.ndarray:
        """f_k'(w): ℓ'/M_k + R'/K, the gradient term of the linearization (3.6)."""
        return self.loss_grad(X, y, w) / y.shape[0] + self.reg_grad(w) / K


def linearized_primal(
    w_own: np.ndarray, w_nbrs: np.ndarray, gamma: np.ndarray, grad: np.ndarray, rho: float, eta: float,
) -> np.ndarray:
    """The primal step of zCDP-NFL (P2 Algorithm 1, eq. 7; thesis (3.4) with f_k replaced by (3.6)):

        argmin_w ⟨grad, w⟩ + ‖w − w̃_k‖²/(2η) + wᵀγ_k + ρ Σ_l ‖w − (w̃_k + w̃_l)/2‖²
        = [w̃_k/η + ρ Σ_l (w̃_k + w̃_l) − γ_k − grad] / (1/η + 2ρ|N_k|)

    with `grad` = f_k'(w̃_k) and `w_nbrs` the neighbours' shared models (rows)."""
    n = w_nbrs.shape[0]
    total = w_own / eta + rho * (n * w_own + w_nbrs.sum(axis=0)) - gamma - grad
    return total / (1.0 / eta + 2.0 * rho * n)


def exact_ridge_primal(
    X: np.ndarray, y: np.ndarray, w_own: np.ndarray, w_nbrs: np.ndarray, gamma: np.ndarray, rho: float, l2: float, K: int,
) -> np.ndarray:
    """The exact ADMM primal step (3.4) for ridge (P-ADMM): with f_k = ‖Xw − y‖²/M + l2‖w‖²/K,

        [2XᵀX/M + (2 l2/K + 2ρ|N_k|) I] w = 2Xᵀy/M − γ_k + ρ Σ_l (w̃_k + w̃_l)."""
    M, d = X.shape
    n = w_nbrs.shape[0]
    A = 2.0 * (X.T @ X) / M + (2.0 * l2 / K + 2.0 * rho * n) * np.eye(d)
    b = 2.0 * (X.T @ y) / M - gamma + rho * (n * w_own + w_nbrs.sum(axis=0))
    return np.linalg.solve(A, b)


def dual_step(gamma: np.ndarray, diffs: np.ndarray, rho: float) -> np.ndarray:
    """γ_k ← γ_k + ρ Σ_l (w̃_k − w̃_l) (P2 Algorithm 1, eq. 9; thesis 3.4), with the rows of
    `diffs` the terms w̃_k − w̃_l (models of the same iteration; see algorithms.peers)."""
    return gamma + rho * diffs.sum(axis=0)


def metropolis_weights(degree: int, nbr_degrees: np.ndarray) -> np.ndarray:
    """Metropolis–Hastings mixing weights a_kl = 1/(1 + max(d_k, d_l)), a doubly stochastic
    matrix on any undirected graph; returns (own weight, neighbour weights)."""
    a = 1.0 / (1.0 + np.maximum(degree, nbr_degrees))
    return np.concatenate([[1.0 - a.sum()], a])


def dgd_step(w_own: np.ndarray, w_nbrs: np.ndarray, weights: np.ndarray, grad: np.ndarray, step: float) -> np.ndarray:
    """Distributed subgradient step (the zCDP-grad-NFL baseline, P2 ref. [23]):
    w_k ← a_kk w̃_k + Σ_l a_kl w̃_l − α grad."""
    return weights[0] * w_own + weights[1:] @ w_nbrs - step * grad


def sensitivity(grad_bound: float, samples: int, curvature: float) -> float:
    """l2-sensitivity of a primal step whose data enter through one gradient term ℓ'/M_k and
    whose other terms are `curvature`-strongly convex: Δ = 2 c₁ / (M_k · curvature).

    Linearized ADMM: curvature 2ρ|N_k| + 1/η (Lemma I, eq. 3.12).  Exact ridge ADMM:
    2ρ|N_k| + 2 l2/K (the same argument with the strongly convex remainder).  Gradient
    step with step size α: curvature 1/α (Δ = 2 c₁ α / M_k)."""
    return 2.0 * grad_bound / (samples * curvature)


def centralized(objective: Objective, parts: list[tuple[np.ndarray, np.ndarray]], tol: float = 1e-12) -> np.ndarray:
    """w_c = argmin Σ_k f_k(w) (3.1), the reference of the normalized error.

    ridge: the normal equations.  elastic net: FISTA with soft thresholding until the step
    moves less than `tol`.  lad: the linear program min Σ_k Σ_i t_i / M_k, −t ≤ Xw − y ≤ t
    (HiGHS via scipy).  logistic: Newton's method (strongly convex when l2 > 0).
    """
    d = parts[0][0].shape[1]
    l1, l2 = objective.weights
    if objective.name in ("ridge", "elastic_net"):
        H = sum(2.0 * X.T @ X / len(y) for X, y in parts) + 2.0 * l2 * np.eye(d)  # Hessian of the smooth part
        b = sum(2.0 * X.T @ y / len(y) for X, y in parts)
        if l1 == 0:
            return np.linalg.solve(H, b)
        step = 1.0 / np.linalg.eigvalsh(H)[-1]
        w = z = np.zeros(d)
        t = 1.0
        for _ in range(200_000):
            v = z - step * (H @ z - b)
            w_next = np.sign(v) * np.maximum(np.abs(v) - step * l1, 0.0)
            t_next = (1 + np.sqrt(1 + 4 * t * t)) / 2
            z = w_next + (t - 1) / t_next * (w_next - w)
            done = np.max(np.abs(w_next - w)) < tol
            w, t = w_next, t_next
            if done:
                return w
        raise RuntimeError("elastic net: FISTA did not converge")
    if objective.name == "lad":
        from scipy import sparse
        from scipy.optimize import linprog

        X = np.vstack([X for X, _ in parts])
        y = np.concatenate([y for _, y in parts])
        scale = np.concatenate([np.full(len(y_k), 1.0 / len(y_k)) for _, y_k in parts])
        n = y.size
        c = np.concatenate([np.zeros(d), scale])
        eye = sparse.identity(n, format="csr")
        A = sparse.vstack([sparse.hstack([X, -eye]), sparse.hstack([-X, -eye])], format="csr")
        res = linprog(c, A_ub=A, b_ub=np.concatenate([y, -y]), bounds=[(None, None)] * d + [(0, None)] * n, method="highs")
        if not res.success:
            raise RuntimeError(f"lad: linear program failed: {res.message}")
        return res.x[:d]
    w = np.zeros(d)
    for _ in range(100):
        g, H = 2.0 * l2 * w, 2.0 * l2 * np.eye(d)
        for X, y in parts:
            p = _sigmoid(X @ w)
            g = g + X.T @ (p - y) / len(y)
            H = H + (X.T * (p * (1 - p))) @ X / len(y)
        dw = np.linalg.solve(H, g)
        w = w - dw
        if np.max(np.abs(dw)) < tol:
            return w
    raise RuntimeError("logistic: Newton's method did not converge (with l2 = 0 and separable data there is no minimizer)")
