"""Kernels of networked personalized FL with reinforcement-learned inter-cluster
learning (NPFL, NPFL-RL; thesis Chapter 6, Publication 7), for ridge regression (6.10).

All functions are pure.  Client k of cluster q solves, at iteration n, the primal
problem (6.5) with the inter-cluster term of (6.2),

    argmin_w (1/D)‖y − Xw‖² + λ_q‖w‖² + (a/(Q−1)) Σ_{r∈R_k} ‖ŵ_r − w‖²
             + wᵀγ + ρ Σ_{l∈N_k∩C_q} ‖w − (w_k + w_l)/2‖²,

whose stationarity condition, halved, is

    [XᵀX/D + (λ_q + a|R_k|/(Q−1) + ρ|N_k∩C_q|) I] w
        = Xᵀy/D + (a/(Q−1)) Σ_{r∈R_k} ŵ_r + (ρ/2) Σ_{l∈N_k∩C_q} (w_k + w_l) − γ/2.   (6.11)

This is the printed (6.11) with its missing "+" restored and the neighbour sum over
N_k ∩ C_q (the printed |N_k| counts neighbours of every cluster).  R_k holds the other
clusters with at least one neighbour of k, ŵ_r their neighbours' mean (6.3); with every
cluster present |R_k|/(Q−1) = 1.  λ_q = λ/|C_q|.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Inputs", "RidgeClient", "primal", "value", "value_slope"]


@dataclass(frozen=True)
class RidgeClient:
    """The fixed part of (6.11) for one client: XᵀX/D = V diag(e) Vᵀ and Xᵀy/D, so that
    the primal for any action a costs two matrix–vector products."""

    V: np.ndarray
    e: np.ndarray
    xty: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray, y: np.ndarray) -> RidgeClient:
        e, V = np.linalg.eigh(X.T @ X / y.shape[0])
        return cls(V, e, X.T @ y / y.shape[0])

    def solve(self, shift: float, rhs: np.ndarray) -> np.ndarray:
        """[XᵀX/D + shift I]⁻¹ rhs."""
        return self.V @ ((self.V.T @ rhs) / (self.e + shift))


@dataclass(frozen=True)
class Inputs:
    """What (6.11) needs besides the client's data and the action a: its own previous
    model, the same-cluster neighbours' models (rows), the mean ŵ_r of each other
    cluster it hears (rows, R_k), γ, and the constants."""

    w_own: np.ndarray
    same: np.ndarray
    others: np.ndarray
    gamma: np.ndarray
    lam: float  # λ_q = λ/|C_q|
    rho: float
    Q: int

    @property
    def share(self) -> float:
        """|R_k|/(Q−1)."""
        return self.others.shape[0] / (self.Q - 1) if self.Q > 1 else 0.0

    @property
    def pull(self) -> np.ndarray:
        """Σ_{r∈R_k} ŵ_r / (Q−1)."""
        return self.others.sum(axis=0) / (self.Q - 1) if self.Q > 1 else np.zeros_like(self.w_own)


def _shift(inp: Inputs, a: float) -> float:
    return inp.lam + a * inp.share + inp.rho * inp.same.shape[0]


def primal(client: RidgeClient, inp: Inputs, a: float) -> np.ndarray:
    """w_k⁽ⁿ⁾(a), (6.11) as derived above."""
    n = inp.same.shape[0]
    rhs = client.xty + a * inp.pull + 0.5 * inp.rho * (n * inp.w_own + inp.same.sum(axis=0)) - 0.5 * inp.gamma
    return client.solve(_shift(inp, a), rhs)


def value(w: np.ndarray, X: np.ndarray, y: np.ndarray, lam: float) -> float:
    """V_v(w) = (1/D_v)‖y_v − X_v w‖² + λ_q‖w‖² on the validation set (6.12)."""
    r = y - X @ w
    return float(r @ r) / y.shape[0] + lam * float(w @ w)


def value_slope(client: RidgeClient, inp: Inputs, a: float, X: np.ndarray, y: np.ndarray) -> float:
    """∂V_v(w(a))/∂a, the deterministic policy gradient of (6.13): with A(a) w(a) = b(a),
    dw/da = A(a)⁻¹ (Σ_r ŵ_r/(Q−1) − (|R_k|/(Q−1)) w(a))."""
    w = primal(client, inp, a)
    dw = client.solve(_shift(inp, a), inp.pull - inp.share * w)
    grad = 2.0 * X.T @ (X @ w - y) / y.shape[0] + 2.0 * inp.lam * w
    return float(grad @ dw)
