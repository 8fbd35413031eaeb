"""Server optimizers over an aggregated pseudo-gradient (Reddi et al., "Adaptive Federated
Optimization", ICLR 2021, Algorithm 2).

The server's model x_t, the clients' aggregate x̄ (FedAvg's weighted average) and the
pseudo-gradient Δ_t = x̄ − x_t.  One step, with state (m, v):

* `avgm` (FedAvgM, Hsu, Qi, Brown 2019): m_t = β₁ m_{t−1} + Δ_t;  x_{t+1} = x_t + η m_t.
* `adam` (FedAdam): m_t = β₁ m_{t−1} + (1 − β₁) Δ_t;  v_t = β₂ v_{t−1} + (1 − β₂) Δ_t²;
  x_{t+1} = x_t + η m_t / (√v_t + τ).
* `yogi` (FedYogi): m_t as FedAdam;  v_t = v_{t−1} − (1 − β₂) Δ_t² sign(v_{t−1} − Δ_t²);
  x_{t+1} = x_t + η m_t / (√v_t + τ).

m starts at 0 and v at τ² (Algorithm 2: v_{−1} ≥ τ²); no bias correction, as in the paper.
With `avgm`, β₁ = 0 and η = 1 the step is x_{t+1} = x̄: plain FedAvg.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["OPTIMIZERS", "ServerState", "server_step"]

OPTIMIZERS = ("avgm", "adam", "yogi")


@dataclass
class ServerState:
    m: np.ndarray
    v: np.ndarray

    @classmethod
    def start(cls, size: int, tau: float) -> ServerState:
        return cls(np.zeros(size), np.full(size, tau * tau))


def server_step(kind: str, x: np.ndarray, aggregate: np.ndarray, state: ServerState, *, lr: float, beta1: float, beta2: float,
                tau: float) -> np.ndarray:
    """x_{t+1} from x_t = `x` and x̄ = `aggregate` (module docstring); updates `state` in place."""
    delta = aggregate - x
    if kind == "avgm":
        state.m = beta1 * state.m + delta
        return x + lr * state.m
    state.m = beta1 * state.m + (1 - beta1) * delta
    d2 = delta * delta
    if kind == "adam":
        state.v = beta2 * state.v + (1 - beta2) * d2
    elif kind == "yogi":
        state.v = state.v - (1 - beta2) * d2 * np.sign(state.v - d2)
    else:
        raise ValueError(f"server optimizer {kind!r}: one of {', '.join(OPTIMIZERS)}")
    return x + lr * state.m / (np.sqrt(state.v) + tau)
