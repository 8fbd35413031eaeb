"""Personalized graph FL (PGFL) and its baselines GFL and ClusterFL.

Source: thesis Chapter 5 (eqs. 5.1–5.12, Algorithms 4–5, Lemma 5.1, Theorems 5.3–5.4,
§5.4) and the PGFL papers.  S servers linked by a graph, each with its own clients;
clients belong to Q clusters whatever their server.  One server/client design, three
variants as parameters (see `VARIANTS`):

* PGFL — per-cluster models, inter-server averaging (5.9), inter-cluster step (5.10).
* GFL — `personalized = false`: one model for every cluster over the server graph.
* ClusterFL — `inter_server = false`: each server alone with its clients (isolated
  servers), same inter-cluster mechanism.

Iteration n at server s (Algorithms 4–5):
1. wait for the updates (w̃_k⁽ⁿ⁾, φ_k⁽ⁿ⁻¹⁾) of the clients it scheduled, until all came or
   `client_timeout` passed; aggregate per cluster w̃_s,(q) = mean over C_s,(q) of
   w̃_k − φ_k/ρ (5.8)/(5.12).  The mean runs over the *last available* estimate of every
   client of the cluster that has reported at least once (§5.2.1: servers "maintain
   models composed of the last available client estimates"), so a cluster none of
   whose clients was scheduled this iteration still has an aggregate;
2. send the Q aggregates to the neighbour servers and wait for theirs until all came or
   `server_timeout` passed.  A neighbour's aggregate of a later iteration counts as
   fresh.  `missing = "reuse"` uses the last aggregate received from a late neighbour,
   `"exclude"` leaves it out.  Averaging (5.9) then runs over the servers whose
   aggregate of that cluster is known; with none, the cluster keeps its previous model;
3. inter-cluster learning (5.10) with τ⁽ⁿ⁾ = tau · tau_decay⁽ⁿ⁾;
4. send w_s,(q)⁽ⁿ⁾ to the clients scheduled at n (for their dual update) and at n + 1
   (for their next primal update), one message each.

A client asked to take part runs the primal update (5.4) from the model it was sent
(closed form for ridge, Newton steps for logistic regression), perturbs it (5.11) when
`phi0` > 0 and replies; when the server's model of that iteration arrives it runs the
dual update (5.5) with its *perturbed* estimate (Algorithm 5; the server's reply stands
for the text's w̃_s,(q), which the server never sends).  Scheduling: each server picks
`scheduled` of its clients per iteration by keyed draws (the same picks for every
algorithm of a run); a picked client whose participation draw fails does not answer.

Privacy (Algorithm 5): noise variance δ²_n = δ²_1 ζ^(n−1) with δ²_1 = Δ²/(2 φ0) and
Δ = 2 C_k/(ρ D_k) (5.31), so iteration n's release is φ0 ζ^−(n−1)-zCDP (5.32); the
accountant (`netemu.privacy`) adds them up (5.33).  C_k (`grad_bound`) is assumed,
not enforced: the guarantee holds only for losses whose gradients it bounds.

Metrics per iteration, from each server over its clients' current models w_k (the run's
row is the mean over servers, i.e. eq. 5.35 when every server has as many clients):
`nmsd` (regression, eq. 5.35, linear scale) or `accuracy` (classification, each client's
model on its cluster's test set), and `missing` (neighbour aggregates not fresh).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from netemu.engine.actors import Actor
from netemu.algorithms.base import SERVERS_WITH_CLIENTS, AlgorithmSpec
from netemu.engine.cohort import Cohort, Member
from netemu.engine.solo import add_clients
from netemu.config import deadline, require
from netemu.coordination import Port, gather, gaussian_release, sample, send_each
from netemu.kernels.admm import accuracy, contribution, inter_cluster, logistic_primal, nmsd, ridge_primal, ridge_system, sensitivity
from netemu.engine.net.network import Message
from netemu.privacy import noise_variance
from netemu.engine.world import World

if TYPE_CHECKING:  # the data layer sits below the algorithms: types only
    from netemu.data.clustered import ClusteredTask

__all__ = ["PGFLParams", "SPECS", "VARIANTS"]


@dataclass(frozen=True)
class PGFLParams:
    rho: float = 2.0  # ADMM penalty ρ
    lam: float = 0.01  # regularization λ; a client of server s uses λ/|C_s| (5.4)
    tau: float = 0.4  # inter-cluster learning τ (5.10)
    tau_decay: float = 1.0  # τ⁽ⁿ⁾ = tau · tau_decay⁽ⁿ⁾ (Fig. 5.3: 0.4 × 0.98ⁿ)
    scheduled: int = 0  # clients each server schedules per iteration (0 = all)
    phi0: float = 0.0  # zCDP of a client's first release φ⁽⁰⁾ (0 = no perturbation)
    zeta: float = 0.99  # noise variance decay ζ
    grad_bound: float = 1.0  # C_k of Assumption 3, in the sensitivity 2 C_k/(ρ D_k)
    personalized: bool = True  # False: GFL, one model for every cluster
    inter_server: bool = True  # False: ClusterFL, servers never exchange
    client_timeout: float = deadline(60.0)  # virtual seconds a server waits for its clients' updates
    server_timeout: float = deadline(30.0)  # virtual seconds a server waits for its neighbours' aggregates
    missing: str = "reuse"  # a late neighbour's aggregate: "reuse" the last received, or "exclude"
    newton_steps: int = 8  # logistic primal update (5.4)
    work_per_sample: float = 1.0  # compute work of a primal update per training sample

    def __post_init__(self) -> None:
        require(self.rho > 0, "rho", "> 0")
        require(self.lam >= 0, "lam", ">= 0")
        require(0 <= self.tau <= 1, "tau", "in [0, 1]")
        require(0 < self.tau_decay <= 1, "tau_decay", "in (0, 1]")
        require(self.scheduled >= 0, "scheduled", ">= 0 (0 = every client)")
        require(self.phi0 >= 0, "phi0", ">= 0 (0 = no privacy noise)")
        require(0 < self.zeta <= 1, "zeta", "in (0, 1]")
        require(self.grad_bound > 0, "grad_bound", "> 0")
        require(self.client_timeout > 0, "client_timeout", "> 0 virtual seconds")
        require(self.server_timeout > 0, "server_timeout", "> 0 virtual seconds")
        require(self.missing in ("reuse", "exclude"), "missing", '"reuse" or "exclude"')
        require(self.newton_steps >= 1, "newton_steps", ">= 1")
        require(self.work_per_sample >= 0, "work_per_sample", ">= 0")

    def tau_at(self, n: int) -> float:
        return self.tau * self.tau_decay**n


class PGFLState:
    """What the actors of one run share for measurement: the task, each client's server,
    cluster and group (its cluster, or 0 for GFL), and the clients' models w_k as one
    K × d array (each client actor writes its row)."""

    def __init__(self, world: World, p: PGFLParams, task: ClusteredTask) -> None:
        self.p, self.task = p, task
        nodes = world.network.nodes
        self.clients = list(task.parts)
        for c in self.clients:
            require("server" in nodes[c].attrs, "topology", "a multi_server topology (each client belongs to a server)")
        self.server_of = {c: nodes[c].attrs["server"] for c in self.clients}
        self.servers = frozenset(n for n, node in nodes.items() if node.role == "server")
        self.index = {c: k for k, c in enumerate(self.clients)}
        self.groups = {c: (task.clusters[c] if p.personalized else 0) for c in self.clients}
        self.n_groups = task.n_clusters if p.personalized else 1
        self.W = np.zeros((len(self.clients), task.dim))

    def members(self, server: str) -> list[str]:
        return [c for c in self.clients if self.server_of[c] == server]

    def scores(self, clients: list[str]) -> dict[str, float]:
        """Per client, its metric on its current model (NMSD term of 5.35, or test accuracy)."""
        t = self.task
        rows = [self.index[c] for c in clients]
        if t.loss == "ridge":
            assert t.w_star is not None  # ridge tasks have their true models
            q = [t.clusters[c] for c in clients]
            return dict(zip(clients, nmsd(self.W[rows], t.w_star[q]).tolist()))
        return {c: accuracy(self.W[self.index[c]], *t.tests[t.clusters[c]]) for c in clients}


class PGFLServer(Actor):
    def __init__(self, name: str, state: PGFLState, iterations: int) -> None:
        super().__init__(name)
        self.state, self.iterations = state, iterations
        self.clients = state.members(name)
        self.models = np.zeros((state.n_groups, state.task.dim))  # w_s,(q)⁽ⁿ⁾
        self.latest: dict[str, tuple[int, np.ndarray]] = {}  # client -> (round, w̃_k − φ_k/ρ)
        self.heard: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}  # server -> (round, aggregates, known)
        self.done = 0  # iterations completed (kept across a crash)
        self._picks: dict[int, frozenset[str]] = {}  # the schedules of the iterations in progress

    def schedule(self, n: int) -> frozenset[str]:
        """Clients taking part in iteration n: the `scheduled` smallest keyed draws (drawn once per n)."""
        if n not in self._picks:
            self._picks[n] = frozenset(sample(self, f"schedule/{self.name}", self.clients, self.state.p.scheduled, n))
            self._picks.pop(n - 2, None)
        return self._picks[n]

    def send_models(self, n: int) -> None:
        """w_s,(q)⁽ⁿ⁾ to the clients of iteration n (dual update) and n + 1 (primal update)."""
        now = self.schedule(n) if n > 0 else frozenset()
        nxt = self.schedule(n + 1) if n < self.iterations else frozenset()
        groups = self.state.groups
        send_each(self, "model", {c: {"w": self.models[groups[c]], "next": c in nxt} for c in self.clients if c in now or c in nxt},
                  round=n)

    async def run(self) -> None:
        p = self.state.p
        servers = [s for s in self.neighbours if s in self.state.servers] if p.inter_server else []
        self.send_models(self.done)  # at start, and again after a recovery
        while self.done < self.iterations:
            n = self.round = self.done + 1
            await self.collect_updates(n)
            own, known = self.aggregate()
            self.broadcast("aggregate", {"w": own, "known": known}, servers)
            fresh = await self.collect_aggregates(n, servers)
            hat = self.inter_server(own, known, servers, fresh)
            self.models = inter_cluster(hat, p.tau_at(n)) if p.personalized else hat  # (5.10)
            self.done = n
            self.send_models(n)
            scores = self.state.scores(self.clients)
            self.metric("nmsd" if self.state.task.loss == "ridge" else "accuracy", float(np.mean(list(scores.values()))))
            if servers:
                self.metric("missing", len(servers) - len(fresh))

    async def collect_updates(self, n: int) -> None:
        """Until the clients scheduled at n answered or `client_timeout` passed; every update,
        of any iteration, refreshes its client's last available term."""
        await gather(self, "update", self.now + self.state.p.client_timeout, round=n, expected=self.schedule(n),
                     on_message=self.keep_update)

    def keep_update(self, msg: Message) -> None:
        if msg.round >= self.latest.get(msg.src, (-1,))[0]:
            body = msg.payload
            self.latest[msg.src] = (msg.round, contribution(body["w"], body["phi"], self.state.p.rho))
        else:  # older than the client's term already kept
            self.unused(msg, "discarded")

    def aggregate(self) -> tuple[np.ndarray, np.ndarray]:
        """w̃_s,(q) (5.8)/(5.12) per group over the last available client terms, and which groups have one."""
        st = self.state
        own = np.zeros((st.n_groups, st.task.dim))
        known = np.zeros(st.n_groups, dtype=bool)
        for g in range(st.n_groups):
            terms = [self.latest[c][1] for c in self.clients if st.groups[c] == g and c in self.latest]
            if terms:
                own[g], known[g] = np.mean(terms, axis=0), True
        return own, known

    async def collect_aggregates(self, n: int, servers: list[str]) -> set[str]:
        """Wait for the neighbours' aggregates of iteration n; returns the servers heard fresh."""
        fresh = {s for s in servers if self.heard.get(s, (-1,))[0] >= n}
        got = await gather(self, "aggregate", self.now + self.state.p.server_timeout, counts=lambda m: m.round >= n,
                           expected=[s for s in servers if s not in fresh], on_message=self.keep_aggregate)
        return fresh | got.sources

    def keep_aggregate(self, msg: Message) -> None:
        if msg.round >= self.heard.get(msg.src, (-1,))[0]:
            self.heard[msg.src] = (msg.round, msg.payload["w"], msg.payload["known"])
        else:  # older than the neighbour's aggregate already kept
            self.unused(msg, "discarded")

    def inter_server(self, own: np.ndarray, known: np.ndarray, servers: list[str], fresh: set[str]) -> np.ndarray:
        """ŵ_s,(q) (5.9): the mean of the known aggregates of s and its neighbours."""
        use = [s for s in servers if s in fresh or (self.state.p.missing == "reuse" and s in self.heard)]
        stacks = [own] + [self.heard[s][1] for s in use]
        masks = [known] + [self.heard[s][2] for s in use]
        total = cast(np.ndarray, sum(m[:, None] * w for w, m in zip(stacks, masks)))
        count = cast(np.ndarray, sum(m.astype(int) for m in masks))
        return np.where(count[:, None] > 0, total / np.maximum(count, 1)[:, None], self.models)


class PGFLLocal:
    """One client's local state and steps — φ_k, the pending w̃_k, (5.4), (5.5), (5.11) —
    used by the clients' logic `PGFLClients` (one cohort, or one `Solo` actor each)."""

    def __init__(self, name: str, state: PGFLState) -> None:
        self.name, self.state, self.k = name, state, state.index[name]
        self.X, self.y = state.task.parts[name]
        self.phi = np.zeros(state.task.dim)  # φ_k (kept across a crash: stable storage)
        self.pending: tuple[int, np.ndarray] | None = None  # (round, w̃_k) awaiting its dual update
        self.lam = state.p.lam / len(state.members(state.server_of[name]))  # λ/|C_s| (5.4)
        if state.task.loss == "ridge":
            self.system = ridge_system(self.X, self.y, state.p.rho, self.lam)

    def dual(self, m: int, w_s: np.ndarray) -> None:
        """(5.5) with w̃_k (Algorithm 5), when the model of the round it answered arrives."""
        if self.pending is not None and self.pending[0] == m:
            self.phi = self.phi + self.state.p.rho * (w_s - self.pending[1])
            self.pending = None

    def primal(self, w_s: np.ndarray) -> np.ndarray:
        """(5.4) from the server's model w_s,(q)."""
        p, st = self.state.p, self.state
        if st.task.loss == "ridge":
            return ridge_primal(self.system, self.phi, w_s, p.rho)
        return logistic_primal(self.X, self.y, self.phi, w_s, p.rho, self.lam, st.W[self.k], p.newton_steps)

    def perturb(self, port: Port, w: np.ndarray, n: int) -> np.ndarray:
        """(5.11): w + N(0, δ²_n I) with δ²_n = Δ²/(2 φ0) · ζ^(n−1); records the zCDP spent."""
        p = self.state.p
        if p.phi0 == 0:
            return w
        delta = sensitivity(p.grad_bound, p.rho, self.y.shape[0])
        variance = noise_variance(delta, p.phi0) * p.zeta ** (n - 1)
        return gaussian_release(port, w, delta, variance, n)  # zCDP (5.32), added up as (5.33)

    def update(self, port: Port, w_s: np.ndarray, n: int) -> dict:
        """The primal step of iteration n and the message that reports it."""
        w = self.primal(w_s)
        self.state.W[self.k] = w
        shared = self.perturb(port, w, n)
        self.pending = (n, shared)
        return {"w": shared, "phi": self.phi}


class PGFLClients(Cohort):
    """The clients' logic, for one cohort or one `Solo` actor each."""

    receives = "model"

    def __init__(self, name: str, state: PGFLState, members: list[str] | None = None) -> None:
        super().__init__(name, state.clients if members is None else members)
        self.state = state
        self.local = [PGFLLocal(m.name, state) for m in self.members]

    def on_message(self, member: Member, msg: Message) -> None:
        local = self.local[member.index]
        m, w_s = msg.round, msg.payload["w"]
        local.dual(m, w_s)
        if not msg.payload["next"] or not self.participates(member, m + 1):
            return
        member.round = m + 1
        self.compute(member, self.state.p.work_per_sample * local.y.shape[0], self.reply, msg)

    def reply(self, member: Member, msg: Message) -> None:
        self.send(member, msg.src, "update", self.local[member.index].update(self.port(member), msg.payload["w"], member.round))


def build(world: World, params: PGFLParams, task: ClusteredTask, rounds: int, *, cohort: bool = True) -> None:
    """The servers and the clients (one cohort; `cohort=False`: one actor each)."""
    state = PGFLState(world, params, task)
    for name, node in world.network.nodes.items():
        if node.role == "server":
            world.add(PGFLServer(name, state, rounds))
    add_clients(world, lambda n, ms: PGFLClients(n, state, ms), "pgfl-clients", state.clients, cohort=cohort)


#: scenario algorithm names -> parameter presets.
VARIANTS: dict[str, dict] = {
    "pgfl": {},
    "gfl": {"personalized": False},
    "clusterfl": {"inter_server": False},
}

SPECS = [
    AlgorithmSpec(name, PGFLParams, build, datasets=("clustered_linear", "digits"), roles=("server", "client"),
                  doc=__doc__, defaults=preset, requires=(SERVERS_WITH_CLIENTS,))
    for name, preset in VARIANTS.items()
]
