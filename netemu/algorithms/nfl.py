"""Private networked FL between peers: zCDP-NFL and its baselines.

Source: thesis Chapter 3 and Publication 2 (P2: Algorithm 1, eqs. 5–12, Lemma I,
Theorem I, Corollary, §5).  No server: every client is a peer that exchanges its
perturbed model with its graph neighbours (see `netemu.algorithms.peers` for the
synchronous / asynchronous rounds and the `missing` policy).  Client k solves its share
f_k = ℓ/M_k + R/K of the centralized problem (3.1); objectives in `netemu.kernels.nfl`.

Iteration n at peer k (Algorithm 1), from its own shared model w̃_k⁽ⁿ⁻¹⁾, its
neighbours' w̃_l⁽ⁿ⁻¹⁾ and its dual variable γ_k⁽ⁿ⁻¹⁾:

1. primal step, chosen by `step`:
   * `"linearized"` (zCDP-NFL, (ε,δ)DP-NFL): ADMM with f_k linearized at w̃_k⁽ⁿ⁻¹⁾ (3.6)
     and proximal step η⁽ⁿ⁾ = eta0 / n^eta_power → 0 (Assumption 3; P2 eq. 7);
   * `"exact"` (P-ADMM, ridge only): the exact ADMM step (3.4) in closed form;
   * `"gradient"` (zCDP-grad-NFL): distributed subgradient descent with Metropolis
     weights, w_k = Σ_l a_kl w̃_l − α⁽ⁿ⁾ f_k'(w̃_k), α⁽ⁿ⁾ = alpha0 / n^alpha_power;
2. perturbation w̃_k⁽ⁿ⁾ = w_k⁽ⁿ⁾ + ξ, ξ ~ N(0, σ²_k⁽ⁿ⁾ I) (P2 eq. 6/8; thesis 3.7), when phi1 > 0;
3. exchange with the neighbours;
4. dual step γ_k⁽ⁿ⁾ = γ_k⁽ⁿ⁻¹⁾ + ρ Σ_l (w̃_k⁽ⁿ⁾ − w̃_l⁽ⁿ⁾) (P2 eq. 9; ADMM steps only), over
   the exchange's pairs of same-iteration models (a late model is paired when it comes).

Noise (dynamic privacy).  Sensitivity Δ_k⁽ⁿ⁾ = 2 c₁ / (M_k · curvature) with curvature
2ρ|N_k| + 1/η⁽ⁿ⁾ (Lemma I, eq. 3.12), 2ρ|N_k| + 2 l2/K (exact ridge step) or 1/α⁽ⁿ⁾
(gradient step); |N_k| counts the neighbours used in that iteration.

* `calibration = "zcdp"`: φ_k⁽ⁿ⁾ = phi1 · ζ^−(n−1) (P2 Appendix C: φ⁽ⁿ⁺¹⁾ = φ⁽ⁿ⁾/ζ) and
  σ² = Δ²/(2φ) (Theorem I, eq. 3.13).  The total after T iterations is
  phi1 (1 − ζ^T)/(ζ^{T−1} − ζ^T) and implies (ε, δ)-DP with ε = φ + 2√(φ ln 1/δ)
  (Corollary).
* `calibration = "epsdelta"` ((ε,δ)DP-NFL): the *same* total budget — the (ε, δ) that
  zCDP-NFL with these phi1, zeta and the run's T iterations guarantees — spent with
  (ε, δ)-DP composition (Theorem 2.2): δ_n = δ/T and ε_n ∝ ζ^−(n−1)/2 summing to ε, each
  release calibrated by the classic Gaussian mechanism σ = Δ √(2 ln(1.25/δ_n))/ε_n.
  The ε_n schedule keeps σ shrinking by √ζ per iteration, as in zCDP-NFL, so only the
  accounting differs (§3.4: "identical to zCDP-NFL except for … (ε, δ)-DP rules").

Every release is recorded in the run's accountant (`netemu.privacy`) as the zCDP of
the Gaussian noise actually added, Δ²/(2σ²).  c₁ (`grad_bound`) is assumed, not
enforced (Assumption 1): squared and logistic losses have unbounded gradients.

Metrics per iteration and peer (the run's row is their mean):
`error` = K ‖w_k − w_c‖² / ‖w_c‖², so that the mean over peers is the paper's normalized
error Σ_k ‖w_k − w_c‖²/‖w_c‖² (§3.4) against the centralized solution w_c
(`netemu.kernels.nfl.centralized`); `accuracy` on the test set (logistic objective);
`missing` (neighbour models that were not fresh).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from netemu.algorithms.base import CONNECTED_PEERS, AlgorithmSpec
from netemu.algorithms.peers import ExchangeParams, Peer, peer_names
from netemu.config import require
from netemu.coordination import gaussian_release
from netemu.kernels.admm import accuracy, nmsd
from netemu.kernels.nfl import (
    OBJECTIVES, Objective, centralized, dgd_step, dual_step, exact_ridge_primal, linearized_primal, metropolis_weights,
    sensitivity,
)
from netemu.privacy import dynamic_total, epsilon_from_zcdp, gaussian_sigma_epsdelta, noise_variance
from netemu.engine.world import World

if TYPE_CHECKING:
    from netemu.data.synthetic import LinearTask

__all__ = ["NFLParams", "SPECS", "VARIANTS"]


@dataclass(frozen=True)
class NFLParams(ExchangeParams):
    objective: str = "elastic_net"  # ridge | elastic_net | lad | logistic
    l1_factor: float = 0.001  # elastic net: l1 = l1_factor · ‖Xᵀy‖∞ over all data (§3.4.1)
    l2: float = 1.0  # weight of ‖w‖² (ridge, elastic net, logistic)
    step: str = "linearized"  # "linearized" (zCDP-NFL) | "exact" (P-ADMM, ridge) | "gradient" (zCDP-grad-NFL)
    rho: float = 1.0  # ADMM penalty ρ
    eta0: float = 1.0  # η⁽ⁿ⁾ = eta0 / n^eta_power, the linearization's proximal step
    eta_power: float = 0.5
    alpha0: float = 0.1  # α⁽ⁿ⁾ = alpha0 / n^alpha_power, the gradient step
    alpha_power: float = 0.0
    calibration: str = "zcdp"  # "zcdp" | "epsdelta"
    phi1: float = 0.0  # zCDP of the first release φ⁽¹⁾ (0 = no noise)
    zeta: float = 0.98  # noise variance decay ζ: φ⁽ⁿ⁺¹⁾ = φ⁽ⁿ⁾ / ζ
    delta: float = 1e-5  # δ of the (ε, δ) budget ("epsdelta" calibration)
    grad_bound: float = 1.0  # c₁ of Assumption 1
    work_per_sample: float = 0.1  # compute work of an iteration per training sample (virtual s at speed 1)

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.objective in OBJECTIVES, "objective", " | ".join(OBJECTIVES))
        require(self.l1_factor >= 0, "l1_factor", ">= 0")
        require(self.l2 >= 0, "l2", ">= 0")
        require(self.step in ("linearized", "exact", "gradient"), "step", '"linearized", "exact" or "gradient"')
        require(self.step != "exact" or self.objective == "ridge", "step", '"exact" only with objective = "ridge" (P-ADMM)')
        require(self.rho > 0, "rho", "> 0")
        require(self.eta0 > 0, "eta0", "> 0")
        require(self.eta_power >= 0, "eta_power", ">= 0")
        require(self.alpha0 > 0, "alpha0", "> 0")
        require(self.alpha_power >= 0, "alpha_power", ">= 0")
        require(self.calibration in ("zcdp", "epsdelta"), "calibration", '"zcdp" or "epsdelta"')
        require(self.phi1 >= 0, "phi1", ">= 0 (0 = no privacy noise)")
        require(0 < self.zeta <= 1, "zeta", "in (0, 1]")
        require(0 < self.delta < 1, "delta", "in (0, 1)")
        require(self.grad_bound > 0, "grad_bound", "> 0")
        require(self.work_per_sample >= 0, "work_per_sample", ">= 0")

    def eta(self, n: int) -> float:
        return self.eta0 / n**self.eta_power

    def alpha(self, n: int) -> float:
        return self.alpha0 / n**self.alpha_power

    def objective_for(self, parts: list[tuple[np.ndarray, np.ndarray]]) -> Objective:
        X = np.vstack([X for X, _ in parts])
        y = np.concatenate([y for _, y in parts])
        return Objective(self.objective, l1=self.l1_factor * float(np.max(np.abs(X.T @ y))), l2=self.l2)


class NoiseSchedule:
    """σ_k⁽ⁿ⁾ from Δ_k⁽ⁿ⁾ under either calibration (module docstring)."""

    def __init__(self, p: NFLParams, iterations: int) -> None:
        self.p = p
        if p.calibration == "epsdelta" and p.phi1 > 0:
            epsilon = epsilon_from_zcdp(dynamic_total(p.phi1, p.zeta, iterations), p.delta)
            shape = p.zeta ** (-np.arange(iterations) / 2)
            self.epsilons = epsilon * shape / math.fsum(shape)
            self.delta_n = p.delta / iterations

    def variance(self, delta: float, n: int) -> float:
        p = self.p
        if p.calibration == "zcdp":
            return noise_variance(delta, p.phi1 * p.zeta ** -(n - 1))  # (3.13) with φ⁽ⁿ⁾ = φ⁽¹⁾ ζ^−(n−1)
        return gaussian_sigma_epsdelta(delta, float(self.epsilons[n - 1]), self.delta_n) ** 2


class NFLState:
    """What the peers of one run share: parameters, objective, w_c and the noise schedule."""

    def __init__(self, world: World, p: NFLParams, task: LinearTask, iterations: int) -> None:
        self.p, self.task, self.iterations = p, task, iterations
        self.peers = peer_names(world, task.parts)
        self.objective = p.objective_for([task.parts[k] for k in self.peers])
        self.w_c = centralized(self.objective, [task.parts[k] for k in self.peers])
        self.noise = NoiseSchedule(p, iterations)
        self.degree = {k: len(world.network.neighbours(k)) for k in self.peers}


class NFLPeer(Peer):
    def __init__(self, name: str, state: NFLState) -> None:
        super().__init__(name, state.p, state.task.w_star.shape[0])
        self.state = state
        self.X, self.y = state.task.parts[name]
        self.gamma = np.zeros(self.dim)  # γ_k
        self.shared = np.zeros(self.dim)  # w̃_k⁽ⁿ⁻¹⁾
        self.used: list[str] | None = None  # neighbours of the last exchange (None: all, at start)
        self.nbr_models = np.zeros((0, self.dim))  # their w̃_l⁽ⁿ⁻¹⁾
        self.w = np.zeros(self.dim)  # w_k⁽ⁿ⁾, unperturbed

    def primal(self, n: int) -> tuple[np.ndarray, float]:
        """Step 1 and the curvature of its sensitivity."""
        st, p = self.state, self.state.p
        K, used, nbrs = len(st.peers), self.used, self.nbr_models
        assert used is not None  # set when run() starts
        if p.step == "exact":
            w = exact_ridge_primal(self.X, self.y, self.shared, nbrs, self.gamma, p.rho, st.objective.l2, K)
            return w, 2 * p.rho * len(used) + 2 * st.objective.l2 / K
        grad = st.objective.local_grad(self.X, self.y, self.shared, K)
        if p.step == "linearized":
            eta = p.eta(n)
            return linearized_primal(self.shared, nbrs, self.gamma, grad, p.rho, eta), 2 * p.rho * len(used) + 1 / eta
        weights = metropolis_weights(st.degree[self.name], np.array([st.degree[nb] for nb in used], dtype=float))
        return dgd_step(self.shared, nbrs, weights, grad, p.alpha(n)), 1 / p.alpha(n)

    def perturb(self, w: np.ndarray, n: int, curvature: float) -> np.ndarray:
        """Step 2; records the zCDP of the release."""
        p = self.state.p
        if p.phi1 == 0:
            return w
        delta = sensitivity(p.grad_bound, self.y.shape[0], curvature)
        return gaussian_release(self, w, delta, self.state.noise.variance(delta, n), n)

    async def run(self) -> None:
        st, p = self.state, self.state.p
        self.start()
        if self.used is None:
            self.used, self.nbr_models = list(self.neighbours), np.zeros((len(self.neighbours), self.dim))
        while self.done < st.iterations:
            n = self.round = self.done + 1
            await self.compute(p.work_per_sample * self.y.shape[0])
            if not p.sync and n > 1:
                self.used, self.nbr_models = self.latest()
            self.w, curvature = self.primal(n)
            shared = self.perturb(self.w, n, curvature)
            got = await self.exchange(n, shared)
            self.used, self.nbr_models = got.used, got.models
            if p.step != "gradient":
                self.gamma = dual_step(self.gamma, got.diffs, p.rho)
            self.shared, self.done = shared, n
            self.report(got.late)

    def report(self, late: int) -> None:
        self.metric("error", len(self.state.peers) * float(nmsd(self.w, self.state.w_c)))
        if self.state.p.objective == "logistic":
            self.metric("accuracy", accuracy(self.w, *self.state.task.test))
        self.metric("missing", late)


def build(world: World, params: NFLParams, task: LinearTask, rounds: int) -> None:
    state = NFLState(world, params, task, rounds)
    for name in state.peers:
        world.add(NFLPeer(name, state))


#: scenario algorithm names -> parameter presets (one design, four algorithms of §3.4).
VARIANTS: dict[str, dict] = {
    "zcdp-nfl": {},
    "epsdelta-nfl": {"calibration": "epsdelta"},
    "zcdp-grad-nfl": {"step": "gradient"},
    "p-admm": {"step": "exact", "objective": "ridge"},
}

SPECS = [
    AlgorithmSpec(name, NFLParams, build, datasets=("linear",), roles=("peer",), doc=__doc__, defaults=preset,
                  requires=(CONNECTED_PEERS,))
    for name, preset in VARIANTS.items()
]
