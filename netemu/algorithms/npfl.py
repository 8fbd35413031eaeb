"""Networked personalized FL between peers: NFL, NPFL and NPFL-RL.

Source: thesis Chapter 6 and Publication 7 (eqs. 6.1–6.15, Algorithm 6), ridge
regression (6.10).  Peers in Q clusters on a graph exchange their models with their
neighbours (rounds and the `missing` policy: `netemu.algorithms.peers`).  Iteration n
at peer k of cluster q (Algorithm 6):

1. (n > 1, NPFL-RL) `epochs` policy steps on τ_k, each evaluating actions with this
   iteration's inputs on the peer's validation set (6.12):
   * `policy = "dpg"`: τ_k ← τ_k − dpg_rate · ∂V_v(w(a))/∂a at a = τ_k (6.13);
   * `policy = "sac"`: a = τ_k + α, α ~ U(−sac_width/2, sac_width/2),
     τ_k ← τ_k − sac_rate · sign(V_v(w(a)) − V_v(w(τ_k))) · α (6.14);
   τ_k is kept in [0, 1] (Algorithm 6 starts it "within (0, 1)").  `epochs` > 1 is the
   batch variant NPFL-BRL.  `policy = "fixed"` keeps τ_k = tau (NPFL; τ = 0 is no
   inter-cluster learning);
2. primal update (6.11), closed form (`netemu.kernels.npfl`, which derives the
   corrected equation), from the same-cluster neighbours' models w_l⁽ⁿ⁻¹⁾ and the
   other clusters' neighbour means ŵ_r⁽ⁿ⁻¹⁾ (6.3);
3. exchange w_k⁽ⁿ⁾ with every neighbour;
4. dual update γ_k ← γ_k + ρ Σ_{l∈N_k∩C_q} (w_k⁽ⁿ⁾ − w_l⁽ⁿ⁾), over the exchange's pairs of
   same-iteration models.  The printed (6.6) has
   (w_l − w_k), which with the +wᵀγ of (6.5) makes the iteration diverge (tested); the
   sign here is the one of ADMM and of (3.4).

`personalized = false` is NFL: one model for the whole network (every neighbour counts
as same-cluster, no inter-cluster term, λ/K).

Metrics per iteration and peer (the run's row is their mean): `test_mse` =
‖w_k − w_(q)‖²/‖w_(q)‖², the terms of (6.15) (whose printed denominator lacks its
square); `tau` (τ_k⁽ⁿ⁾); `tau_rich`, `tau_medium`, `tau_poor` from the peers with the
most, the median and the fewest training samples (Fig. 6.3); `missing`.  Every peer's
τ_k trajectory is also in the message log (`metric` events, per actor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from netemu.algorithms.base import CONNECTED_PEERS, AlgorithmSpec, Requirement
from netemu.algorithms.peers import ExchangeParams, Peer, peer_names
from netemu.config import require
from netemu.kernels.admm import nmsd
from netemu.kernels.nfl import dual_step
from netemu.kernels.npfl import Inputs, RidgeClient, primal, value, value_slope
from netemu.engine.world import World

if TYPE_CHECKING:
    from netemu.data.clustered import ClusteredTask

__all__ = ["NPFLParams", "SPECS", "VARIANTS"]


@dataclass(frozen=True)
class NPFLParams(ExchangeParams):
    rho: float = 3.0  # ADMM penalty ρ (§6.3)
    lam: float = 0.01  # regularization λ; a peer of cluster q uses λ/|C_q|
    tau: float = 0.05  # τ_k⁽⁰⁾, or the fixed τ of NPFL
    personalized: bool = True  # False: NFL, one global model
    policy: str = "fixed"  # "fixed" (NPFL) | "dpg" (6.13) | "sac" (6.14)
    epochs: int = 1  # policy steps per iteration (> 1: batch RL, NPFL-BRL)
    dpg_rate: float = 0.001  # δ_DPG
    sac_width: float = 0.05  # ν_SAC
    sac_rate: float = 0.1  # δ_SAC
    work_per_sample: float = 0.1  # compute work of a primal update per training sample (virtual s at speed 1)

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.rho > 0, "rho", "> 0")
        require(self.lam >= 0, "lam", ">= 0")
        require(0 <= self.tau <= 1, "tau", "in [0, 1]")
        require(self.policy in ("fixed", "dpg", "sac"), "policy", '"fixed", "dpg" or "sac"')
        require(self.personalized or self.policy == "fixed", "policy", '"fixed" when personalized = false (NFL has no τ)')
        require(self.epochs >= 1, "epochs", ">= 1")
        require(self.dpg_rate > 0, "dpg_rate", "> 0")
        require(self.sac_width > 0, "sac_width", "> 0")
        require(self.sac_rate > 0, "sac_rate", "> 0")
        require(self.work_per_sample >= 0, "work_per_sample", ">= 0")


class NPFLState:
    """What the peers of one run share: parameters, task, each peer's group (its cluster,
    or 0 for NFL) and λ share, and the peers whose τ Fig. 6.3 follows."""

    def __init__(self, world: World, p: NPFLParams, task: ClusteredTask, iterations: int) -> None:
        self.p, self.task, self.iterations = p, task, iterations
        self.peers = peer_names(world, task.parts)
        require(task.loss == "ridge", "data.kind", '"clustered_linear" (NPFL is derived for ridge regression)')
        require(p.policy == "fixed" or set(self.peers) <= set(task.validation), "data.validation",
                "true for NPFL-RL (its policies evaluate actions on validation sets)")
        self.group = {k: (task.clusters[k] if p.personalized else 0) for k in self.peers}
        self.Q = task.n_clusters if p.personalized else 1
        size = {g: sum(1 for k in self.peers if self.group[k] == g) for g in set(self.group.values())}
        self.lam = {k: p.lam / size[self.group[k]] for k in self.peers}
        by_data = sorted(self.peers, key=lambda k: (task.parts[k][1].size, k))
        self.tracked = {by_data[-1]: "tau_rich", by_data[len(by_data) // 2]: "tau_medium", by_data[0]: "tau_poor"}


class NPFLPeer(Peer):
    def __init__(self, name: str, state: NPFLState) -> None:
        super().__init__(name, state.p, state.task.dim)
        self.state = state
        self.client = RidgeClient.of(*state.task.parts[name])
        self.gamma = np.zeros(self.dim)
        self.w = np.zeros(self.dim)  # w_k⁽ⁿ⁾
        self.tau = state.p.tau  # τ_k⁽ⁿ⁾
        self.nbrs: dict[str, np.ndarray] | None = None  # neighbour -> w_l⁽ⁿ⁻¹⁾ used this iteration

    def inputs(self) -> Inputs:
        """(6.11)'s inputs from the neighbour models of the last exchange (6.3)."""
        st = self.state
        g = st.group[self.name]
        assert self.nbrs is not None  # set when run() starts
        same = [w for nb, w in self.nbrs.items() if st.group[nb] == g]
        others = []
        for r in range(st.Q):
            models = [w for nb, w in self.nbrs.items() if st.group[nb] == r]
            if r != g and models:
                others.append(np.mean(models, axis=0))
        return Inputs(self.w, np.array(same).reshape(-1, self.dim), np.array(others).reshape(-1, self.dim), self.gamma,
                      st.lam[self.name], st.p.rho, st.Q)

    def learn_tau(self, n: int, inp: Inputs) -> None:
        """Step 1: `epochs` policy steps on τ_k (6.13)/(6.14)."""
        p = self.state.p
        Xv, yv = self.state.task.validation[self.name]
        draws = self.port.keyed(f"sac/{self.name}")
        for epoch in range(p.epochs):
            if p.policy == "dpg":
                step = -p.dpg_rate * value_slope(self.client, inp, self.tau, Xv, yv)
            else:
                alpha = p.sac_width * (draws.uniform(n, epoch) - 0.5)
                worse = value(primal(self.client, inp, self.tau + alpha), Xv, yv, inp.lam) - value(
                    primal(self.client, inp, self.tau), Xv, yv, inp.lam)
                step = -p.sac_rate * float(np.sign(worse)) * alpha
            self.tau = min(1.0, max(0.0, self.tau + step))

    async def run(self) -> None:
        st, p = self.state, self.state.p
        self.start()
        if self.nbrs is None:
            self.nbrs = {nb: np.zeros(self.dim) for nb in self.neighbours}
        while self.done < st.iterations:
            n = self.round = self.done + 1
            await self.compute(p.work_per_sample * st.task.parts[self.name][1].size)
            if not p.sync and n > 1:
                self.nbrs = dict(zip(*self.latest()))
            inp = self.inputs()
            if n > 1 and p.policy != "fixed":
                self.learn_tau(n, inp)
            self.w = primal(self.client, inp, self.tau if p.personalized else 0.0)
            got = await self.exchange(n, self.w)
            self.nbrs = dict(zip(got.used, got.models))
            same = np.array([st.group[nb] == st.group[self.name] for nb in got.pair_names], dtype=bool)
            self.gamma = dual_step(self.gamma, got.diffs[same], p.rho)
            self.done = n
            self.report(got.late)

    def report(self, late: int) -> None:
        st = self.state
        assert st.task.w_star is not None  # clustered_linear tasks have their true models
        w_q = st.task.w_star[st.task.clusters[self.name]]
        self.metric("test_mse", float(nmsd(self.w, w_q)))
        if st.p.personalized:
            self.metric("tau", self.tau)
            if self.name in st.tracked:
                self.metric(st.tracked[self.name], self.tau)
        self.metric("missing", late)


def build(world: World, params: NPFLParams, task: ClusteredTask, rounds: int) -> None:
    state = NPFLState(world, params, task, rounds)
    for name in state.peers:
        world.add(NPFLPeer(name, state))


#: scenario algorithm names -> parameter presets (§6.3; rates of the batch variants as in the text).
VARIANTS: dict[str, dict] = {
    "nfl": {"personalized": False, "tau": 0.0},
    "npfl": {},
    "npfl-rl-dpg": {"policy": "dpg"},
    "npfl-rl-sac": {"policy": "sac"},
    "npfl-brl-dpg": {"policy": "dpg", "epochs": 3, "dpg_rate": 0.003},
    "npfl-brl-sac": {"policy": "sac", "epochs": 3, "sac_rate": 0.04},
}

#: NPFL-RL's policies evaluate actions on each peer's validation set.
VALIDATION = Requirement("data.validation = true for the learned-τ variants (policy dpg or sac)",
                         lambda s: s.params.policy == "fixed" or bool(s.data.get("validation")), key="data.validation")

SPECS = [
    AlgorithmSpec(name, NPFLParams, build, datasets=("clustered_linear",), roles=("peer",), doc=__doc__, defaults=preset,
                  requires=(CONNECTED_PEERS, VALIDATION))
    for name, preset in VARIANTS.items()
]
