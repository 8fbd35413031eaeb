"""Local steps of the personalized-FL baselines FedPnP compares with (`001_…`, Table 1,
appendix A.4.3): pFedMe, Per-FedAvg, and FedBN's merge of kept-local entries.

The original papers are not among the seeds; what is implemented is stated here.

* `pfedme` — pFedMe (T. Dinh, Tran, Nguyen, NeurIPS 2020, Algorithm 1; the equation
  numbers of the paper are not quoted because it is not among the seeds).  The
  client starts its local model from the global one, w ← w^t.  Per local step, on a
  mini-batch D: the personalized model solves the Moreau-envelope inner problem
      θ̂(w) ≈ argmin_θ  f(θ; D) + (λ/2) ‖θ − w‖²       (personalized model)
  by `inner_steps` (K) gradient steps θ ← θ − personal_lr (∇f(θ; D) + λ(θ − w)),
  warm-started from the previous θ̂ (as the authors' code does), then
      w ← w − η λ (w − θ̂)                                     (local update)
  is the gradient step on the envelope F(w) = min_θ f(θ) + (λ/2)‖θ − w‖².  The server
  step w ← (1 − β) w + β · mean of the clients' w (global update) is the graphfl server's
  `server_mix`.  θ̂ is the model the client uses (its local accuracy).
* `perfedavg` — Per-FedAvg (Fallah, Mokhtari, Ozdaglar, NeurIPS 2020, Algorithm 1 and
  its section on the FO and HF approximations):
  the MAML objective F(w) = f(w − α∇f(w)), one outer step per mini-batch
      w ← w − β (I − α ∇²f(w; D''))  ∇f(w − α ∇f(w; D); D')
  with the Hessian term dropped (`order = "fo"`, Per-FedAvg (FO)) or the Hessian-vector
  product taken as a central difference of two gradients, (∇f(w + δv; D'') −
  ∇f(w − δv; D''))/(2δ) (`order = "hf"`, Per-FedAvg (HF)).  `personalize` is the model a
  client uses: one step of size α on its local data, w − α∇f(w).
* `merge_kept` — FedBN (X. Li, Jiang, Zhang, Kamp, Dou, ICLR 2021, Algorithm 1 in its
  appendix): FedAvg in which the batch-norm entries stay on the client; a client's model
  is the server's shared entries with its own kept ones (`local_mask` True).

Batches: each epoch draws one permutation from `rng` (as `classifiers.sgd`) and cuts it
into the batches B_1 … B_m; pFedMe takes one local step per batch.  Per-FedAvg's step j
takes its outer gradient on D' = B_j, its inner step on D = B_{j+1} and the Hessian on
D'' = B_{j+2} (indices mod m), so every batch serves each role once per epoch, and α = 0
is exactly `sgd`'s step on B_j.
"""

from __future__ import annotations

import numpy as np

__all__ = ["batches", "merge_kept", "perfedavg", "personalize", "pfedme"]


def batches(n: int, batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch's mini-batches: a permutation of range(n) from `rng`, cut every `batch`."""
    order = rng.permutation(n)
    return [order[s : s + batch] for s in range(0, n, batch)]


def pfedme(
    model, w: np.ndarray, X: np.ndarray, y: np.ndarray, *, epochs: int, batch: int, lr: float, lam: float,
    inner_steps: int, personal_lr: float, rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """pFedMe's local round from the global model `w` (module docstring):
    returns (w_local, θ̂), the local model sent to the server and the personalized model."""
    w = np.array(w, dtype=float)
    theta = w.copy()
    for _ in range(epochs):
        for rows in batches(y.shape[0], batch, rng):
            Xb, yb = X[rows], y[rows]
            for _ in range(inner_steps):
                _, g = model.loss_grad(theta, Xb, yb)
                theta = theta - personal_lr * (g + lam * (theta - w))
            w = w - lr * lam * (w - theta)
    return w, theta


def perfedavg(
    model, w: np.ndarray, X: np.ndarray, y: np.ndarray, *, epochs: int, batch: int, lr: float, alpha: float,
    rng: np.random.Generator, order: str = "fo", delta: float = 1e-3,
) -> np.ndarray:
    """Per-FedAvg's local round from `w`: one MAML step of size `lr` (the paper's β) per
    mini-batch, inner step `alpha`; `order` "fo" or "hf" (module docstring)."""
    if order not in ("fo", "hf"):
        raise ValueError(f'perfedavg: order {order!r}; accepted: "fo" or "hf"')
    w = np.array(w, dtype=float)
    for _ in range(epochs):
        cut = batches(y.shape[0], batch, rng)
        m = len(cut)
        for j in range(m):
            outer, inner, hess = cut[j], cut[(j + 1) % m], cut[(j + 2) % m]
            _, g_in = model.loss_grad(w, X[inner], y[inner])
            _, g = model.loss_grad(w - alpha * g_in, X[outer], y[outer])
            if order == "hf":
                _, up = model.loss_grad(w + delta * g, X[hess], y[hess])
                _, down = model.loss_grad(w - delta * g, X[hess], y[hess])
                g = g - alpha * (up - down) / (2 * delta)
            w = w - lr * g
    return w


def personalize(model, w: np.ndarray, X: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """Per-FedAvg's personalized model: one gradient step of size α on the local data."""
    if alpha == 0:
        return np.array(w, dtype=float)
    _, g = model.loss_grad(w, X, y)
    return w - alpha * g


def merge_kept(shared: np.ndarray, own: np.ndarray, local_mask: np.ndarray) -> np.ndarray:
    """FedBN: the full model from the received shared entries (in order, the entries where
    `local_mask` is False) and the client's own kept entries (where it is True)."""
    out = np.array(own, dtype=float)
    out[~local_mask] = shared
    return out
