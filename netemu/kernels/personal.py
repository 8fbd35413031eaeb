"""Local steps of the personalized-FL baselines FedPnP compares with (`001_…`, Table 1,
appendix A.4.3): pFedMe, Per-FedAvg, and FedBN's merge of kept-local entries.

The original papers are not among the seeds; what is implemented is stated here.

* `pfedme` — pFedMe (T. Dinh, Tran, Nguyen, NeurIPS 2020, Algorithm 1; the paper is not
  among the seeds, so its equations are not quoted by number).  The client starts its
  local model from the global one, w ← w^t, and runs R local rounds (`rounds`), each on
  ONE fresh mini-batch D: the personalized model approximately solves
      θ̂(w) ≈ argmin_θ  f(θ; D) + (λ/2) ‖θ − w‖²       (personalized model)
  by K (`inner_steps`) gradient steps θ ← θ − personal_lr (∇f(θ; D) + λ(θ − w)),
  warm-started from the previous θ̂ (as the authors' code does), then
      w ← w − η λ (w − θ̂)                                     (local update)
  is the gradient step on the envelope F(w) = min_θ f(θ) + (λ/2)‖θ − w‖².  The server
  step w ← (1 − β) w + β · mean of the clients' w (global update) is the graphfl server's
  `server_mix`.  θ̂ is the model the client uses (its local accuracy).
* `perfedavg` — Per-FedAvg (Fallah, Mokhtari, Ozdaglar, NeurIPS 2020, Algorithm 1 and
  its section on the FO and HF approximations): R local rounds (`rounds`), each on fresh
  mini-batches D, D' (and D'' for HF), one outer step of the MAML objective
  F(w) = f(w − α∇f(w)):
      w ← w − β (I − α ∇²f(w; D''))  ∇f(w − α ∇f(w; D); D')
  with the Hessian term dropped (`order = "fo"`, Per-FedAvg (FO)) or the Hessian-vector
  product taken as a central difference of two gradients, (∇f(w + δv; D'') −
  ∇f(w − δv; D''))/(2δ) (`order = "hf"`, Per-FedAvg (HF)).  `personalize` is the model a
  client uses: one step of size α on its local data, w − α∇f(w).
* `merge_kept` — FedBN (X. Li, Jiang, Zhang, Kamp, Dou, ICLR 2021, Algorithm 1 in its
  appendix): FedAvg in which the batch-norm entries stay on the client; a client's model
  is the server's shared entries with its own kept ones (`local_mask` True).

Batches (`batch_stream`): the mini-batches of successive permutations of the client's
samples drawn from `rng` (one permutation per pass, as `classifiers.sgd` draws per epoch),
taken in order, a new permutation when one is used up — the authors' `get_next_train_batch`
over a shuffling loader (github.com/CharlieDinh/pFedMe, which FedPnP's appendix A.4.3 ran
for both baselines).  A round of pFedMe takes the next batch; a round of Per-FedAvg the
next two (D, then D') or three (D, D', D'').  So a local round sees R·|D| samples (per
batch role), not R passes over the data.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["batch_stream", "batches", "merge_kept", "perfedavg", "personalize", "pfedme"]


def batches(n: int, batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One pass's mini-batches: a permutation of range(n) from `rng`, cut every `batch`."""
    order = rng.permutation(n)
    return [order[s : s + batch] for s in range(0, n, batch)]


def batch_stream(n: int, batch: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The mini-batches of one pass after another (`batches`), without end."""
    while True:
        yield from batches(n, batch, rng)


def pfedme(
    model, w: np.ndarray, X: np.ndarray, y: np.ndarray, *, rounds: int, batch: int, lr: float, lam: float,
    inner_steps: int, personal_lr: float, rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """pFedMe's local round from the global model `w`: R = `rounds` local rounds of one
    mini-batch each (pFedMe Algorithm 1, module docstring); returns (w_local, θ̂), the
    local model sent to the server and the personalized model."""
    w = np.array(w, dtype=float)
    theta = w.copy()
    stream = batch_stream(y.shape[0], batch, rng)
    for _ in range(rounds):
        rows = next(stream)
        Xb, yb = X[rows], y[rows]
        for _ in range(inner_steps):
            _, g = model.loss_grad(theta, Xb, yb)
            theta = theta - personal_lr * (g + lam * (theta - w))  # K steps on the Moreau-envelope inner problem
        w = w - lr * lam * (w - theta)  # local update: w ← w − ηλ(w − θ̂)
    return w, theta


def perfedavg(
    model, w: np.ndarray, X: np.ndarray, y: np.ndarray, *, rounds: int, batch: int, beta: float, alpha: float,
    rng: np.random.Generator, order: str = "fo", delta: float = 1e-3,
) -> np.ndarray:
    """Per-FedAvg's local round from `w`: R = `rounds` MAML steps of size β = `beta`, inner
    step α = `alpha`, each on fresh mini-batches (Per-FedAvg Algorithm 1, module
    docstring); `order` "fo" or "hf"."""
    if order not in ("fo", "hf"):
        raise ValueError(f'perfedavg: order {order!r}; accepted: "fo" or "hf"')
    w = np.array(w, dtype=float)
    stream = batch_stream(y.shape[0], batch, rng)
    for _ in range(rounds):
        inner, outer = next(stream), next(stream)  # D, D'
        _, g_in = model.loss_grad(w, X[inner], y[inner])
        _, g = model.loss_grad(w - alpha * g_in, X[outer], y[outer])
        if order == "hf":
            hess = next(stream)  # D''
            _, up = model.loss_grad(w + delta * g, X[hess], y[hess])
            _, down = model.loss_grad(w - delta * g, X[hess], y[hess])
            g = g - alpha * (up - down) / (2 * delta)
        w = w - beta * g
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
