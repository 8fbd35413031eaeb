"""Graph-filter personalization on a star: FedPnP, G-Fedfilt, and FedPnP's personalized
baselines (pFedMe, Per-FedAvg, FedBN) as the same server with other filters and local steps.
FedAvg, FedProx and local training are the general algorithms (`fedavg`, `fedprox`,
`local-only`, netemu.algorithms.fedavg) over the same `[task]`: the scenarios run them beside
these; in an ideal network they compute what this server does with the mean and identity
filters below (tests/test_graphfl_task.py).

Sources: FedPnP (`001_…`: eqs. 9–16, Algorithm 1, appendix A.5) and G-Fedfilt
(`002_…`: eqs. 1, 12, 13, Algorithms 1–2).  A server keeps one model per client,
Ψ (K × B, rows = clients), all starting from one initial model ω⁰.  Round t:

1. the server sends each client its row Ψ[k];
2. the client runs `epochs` epochs of mini-batch SGD (`batch` samples each) from Ψ[k] on
   its data with the proximal term (mu/2)‖ω − Ψ[k]‖² (FedPnP eq. 9; FedProx; mu = 0 is
   FedAvg's local step), learning rate lr · lr_decay^(t−1), and replies with its update ω̂_k − Ψ[k]
   (with `sparsity` < 1: only the largest entries, as a partial model, keeping the rest
   as a residual for the next round — G-Fedfilt Algorithm 2);
3. the server waits for the updates until `deadline` virtual seconds passed.  A late
   update is dropped (`late = "drop"`: that client's row does not move this round; the
   update gets an `unused` record, reason "late") or applied when it arrives, in a later
   round (`late = "carry"`);
4. Ω̂ = Ψ + updates, and Ψ ← F(Ω̂) (`share = "models"`: FedPnP eq. 13) or
   Ψ ← Ψ + F(Ω̂ − Ψ) (`share = "updates"`: G-Fedfilt eq. 12 filters the gradient
   updates), where the filter F (`netemu.kernels.graphfilter`) is chosen by `filter`:
   * `"soft"`: H = V h(Λ) Vᵀ, h(λ) = 1/(1 + ν₁λ + ν₂λ²) (FedPnP eq. 12), applied with
     the clients' dataset-size weights ζ_k, row-normalized (the kernel explains why);
     ν_i⁽ᵗ⁾ = max(β_i, nu0 (1 − nu_decay)^t) (Algorithm 1's dynamic denoising;
     nu0 = 0 keeps β fixed, as G-Fedfilt does with β₁ = μ_s, β₂ = 0);
   * `"hard"`: keep the min(τ, t) smallest graph frequencies (FedPnP eq. 16; Fig. 4 grows
     the number kept over the rounds until it reaches τ);
   * `"mean"`: the ζ-weighted mean for every client (FedAvg's rule: the server of pFedMe,
     Per-FedAvg and FedBN, and the soft filter's β → ∞ limit on a connected graph);
   * `"identity"`: Ψ = Ω̂ (no sharing: the soft filter's β = 0 limit).

FedPnP's personalized baselines (its Table 1, settings of appendix A.4.3; the maths in
`netemu.kernels.personal`) are parameters of the same server and client:
* `local = "pfedme"`: step 2 is pFedMe's local round (R = `epochs` rounds of one
  mini-batch, λ = `lam`, K = `inner_steps`, `personal_lr`, η = lr) and step 4 pFedMe's
  global update Ψ ← (1 − β) Ψ + β F(Ω̂) with β = `server_mix`; the client uses its
  personalized model θ̂ (local accuracy).
* `local = "perfedavg"`: step 2 is Per-FedAvg's R = `epochs` MAML steps (outer step
  β = `meta_lr`, inner step `alpha`, `maml` = "fo" or "hf"); the client uses one step of
  size α on its data.
* `keep_local = true` (FedBN): the entries of the model's `local_mask` (batch norm) never
  travel: the server sends and receives the other entries only (the message sizes count
  just those) and each client keeps its own across rounds (`graphfl_client.GraphFLLocal`).
The variants "pfedme", "perfedavg" and "fedbn" are these with the mean filter (FedAvg's
server).  The metrics evaluate the model each client uses (`GraphFLState.used_model`).

The client graph is built from what the clients *send*: before round 1 (round 0) each
client sends a `stats` message with its sample count (the weight ζ_k) and, for the soft
and hard filters, either its per-feature mean, variance, skewness and kurtosis
(`graph = "statistics"`: FedPnP Algorithm 1's initialization and appendix A.5, eqs.
27–28, turned into a similarity, see `statistics_graph`) or its position
(`graph = "positions"`: A_ij = 1[d_ij < d_max], G-Fedfilt eq. 1; data `partition =
"rooms"`).  These bytes cross the uplink and are in the message log.  The server waits
for them until `deadline`; a client whose statistics did not arrive gets no edges and
the mean sample count of the others.  The server never reads a client's data.

A disconnected graph (`disconnected`): with `"components"` (default) every connected
component is its own federation — the soft filter's μ_s → ∞ (β → ∞) limit is the
ζ-weighted FedAvg *within each component*, and the hard filter's τ = 1 projects on one
arbitrary vector of the null space; with `"join"` every two clients of different
components get an edge of weight `join_weight`, so the graph is connected, β → ∞ is the
global FedAvg and β = 0 still local training.  The server reports the number of
components of the graph it filters with (`components`, round 1).

`normalize` (soft filter): `"rows"` (default) divides each row of H diag(ζ) by its sum
(β = 0 is local training); `"paper"` applies G-Fedfilt's printed H diag(κ) with the
constant DC eigenvector of ones (eqs. 12, 43–46, `paper_filter`), whose μ_s scale is the
paper's: the personal part of each update is scaled by about 1/K (docs/fidelity.md).

System heterogeneity (G-Fedfilt eqs. 15–20, Table III; `netemu.system`): with
`system = "table3"` every client gets a device drawn from Table III (ranges shrunk to
`system_spread` of their width); its compute speed becomes f/ρ samples per second and
its uplink bandwidth the OFDMA rate r, so computation and transmission times are
measured in virtual time.  With `optimize = true` the server solves problem P'' (33)
once (the devices do not change between rounds): the deadline is T_opt, the latency of
the slowest device at α_min, q_min, z_min (28), and each device gets its own local
epochs α, data fraction q (it trains on a random ⌈qD⌉ of its samples each round) and
sparsity z; α is an integer, or continuous with `opt_alpha = "relaxed"` (fractional
epochs end with a partial pass).  The update sizes in P'' are the emulator's encoded message sizes; the
server's deadline is T_opt plus 2% for the step changes of msgpack size headers.

The model and the local training are the task's (`[task]`, netemu.tasks.supervised): its
`name` — `"softmax"` (logistic regression), `"mlp"` (one hidden layer of `hidden` units),
`"cnn"` (conv 3×3 with `channels` filters → ReLU → 2×2 max-pool, a second such layer when
`channels2` > 0, then dense; netemu.kernels.cnn), each with batch norm when `batchnorm =
true` — and `lr`, `lr_decay`, `epochs` (E, or R for pFedMe and Per-FedAvg), `batch`,
`work_per_sample` (compute work per sample and epoch, without a system model) and
`metrics`.  The CNNs read each sample as a square grey image, so the data's feature count
must be a square (64 for the bundled digits, 784 for MNIST/EMNIST).  Batch-norm models
train with the batch's statistics and are evaluated with running statistics that travel
inside θ.  ω⁰ is the task's `init()` (stream `task/init`), as for every algorithm of the run.

Metrics, from the server, every round (`evaluate_every` rounds for the learning metrics), round
t being the t-th round of training: the task's `metrics` of the model each client uses, as its
`evaluate_on` says — `accuracy` (on the global test set, mean over clients), `accuracy_clients`
(each client's model on its own test set, mean over clients; `evaluate_on = "both"` reports
both), likewise `loss` (the mean cross-entropy) and the macro `precision`, `recall`, `f1`
(G-Fedfilt Table VI) — then `latency_s`
(from the round's start to the last update that made the deadline, or the deadline if
one missed it), `desync_s` (the spread between the first and the last update to arrive,
G-Fedfilt's desynchronization), `late` (updates that missed the deadline), and with a
system model `heterogeneity` (H, eq. 34); from each client `compute_s`, its computation
time in the round.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from netemu.engine.actors import Actor
from netemu.algorithms.base import ONE_SERVER, AlgorithmSpec, Requirement
from netemu.algorithms.graphfl_client import GraphFLClients
from netemu.algorithms.graphfl_params import MOVED, TASK_CHECKS, TASKS, GraphFLParams, square_ok
from netemu.algorithms.graphfl_state import GraphFLState
from netemu.engine.solo import add_clients
from netemu.coordination import gather
from netemu.engine.net.network import Message
from netemu.wire.partial import PartialModel
from netemu.engine.world import World

if TYPE_CHECKING:
    from netemu.tasks.supervised import ModelTask

__all__ = ["GraphFLParams", "SPECS", "VARIANTS"]


def dense(u: np.ndarray | PartialModel) -> np.ndarray:
    return u.to_dense() if isinstance(u, PartialModel) else np.asarray(u, dtype=float)


class GraphFLServer(Actor):
    def __init__(self, name: str, state: GraphFLState, rounds: int) -> None:
        super().__init__(name)
        self.state, self.rounds = state, rounds
        self.Psi = np.tile(state.theta0, (len(state.clients), 1))
        self.carried: dict[str, np.ndarray] = {}  # late updates waiting to be applied

    async def run(self) -> None:
        st, p = self.state, self.state.p
        index = {k: i for i, k in enumerate(st.clients)}
        await self.gather_reports()
        for t in range(1, self.rounds + 1):
            self.round = t
            start = self.now
            for k in st.clients:
                self.send(k, "model", {"w": st.shared(self.Psi[index[k]])})
            got = await gather(self, "update", start + st.deadline, round=t, expected=st.clients,
                               on_message=partial(self.carry, t=t))
            updates = {m.src: dense(m.payload["u"]) for m in got.messages}
            arrivals = got.times
            late = len(st.clients) - len(updates)
            for k, u in self.carried.items():  # late updates of earlier rounds, applied now
                updates[k] = updates.get(k, 0) + u
            self.carried.clear()
            delta = np.zeros_like(self.Psi)
            for k, u in updates.items():
                if st.kept is None:
                    delta[index[k]] = u
                else:  # FedBN: the update holds the shared entries only
                    delta[index[k], ~st.kept] = u
            if p.share == "models":
                new = st.aggregate(t, self.Psi + delta)
            else:
                new = self.Psi + st.aggregate(t, delta)
            if p.server_mix != 1:  # pFedMe's global update: (1 − β) Ψ + β F(Ω̂)
                new = self.Psi + p.server_mix * (new - self.Psi)
            self.Psi = new
            self.report(late, start, arrivals)

    def carry(self, msg: Message, t: int) -> None:
        """A late update of an earlier round, kept to be applied now (`late = "carry"`), or not used
        (`late = "drop"`: an `unused` record, reason "late")."""
        if msg.round != t:
            if self.state.p.late == "carry":
                self.carried[msg.src] = self.carried.get(msg.src, 0) + dense(msg.payload["u"])
            else:
                self.unused(msg, "late", late=self.port.late_by(msg))

    async def gather_reports(self) -> None:
        """Round 0: the clients' sample counts and statistics (or positions), until all
        came or `deadline` passed; then the graph (GraphFLState.set_graph)."""
        st = self.state
        got = await gather(self, "stats", self.now + st.deadline, round=0, expected=st.clients)
        st.set_graph({m.src: m.payload for m in got.messages})

    def used_models(self) -> np.ndarray:
        """K × B: the model each client uses (`GraphFLState.used_model`; Ψ for FedPnP and G-Fedfilt)."""
        st = self.state
        if st.p.local == "sgd" and st.kept is None:
            return self.Psi
        return np.stack([st.used_model(k, self.Psi[i]) for i, k in enumerate(st.clients)])

    def report_learning(self) -> None:
        """The task's `metrics` of the models the clients use (`Task.evaluate` of client -> model: the
        mean over clients on the global test set, each client's own model on its own test set)."""
        st = self.state
        for name, value in st.learning.evaluate(dict(zip(st.clients, self.used_models(), strict=True))).items():
            self.metric(name, value)

    def report(self, late: int, start: float, arrivals: list[float]) -> None:
        st = self.state
        if self.round == 1 and st.needs_graph:
            self.metric("components", st.components)
        if st.training.evaluates(self.round - 1, self.rounds):
            self.report_learning()
        self.metric("latency_s", (start + st.deadline if late else max(arrivals, default=start)) - start)
        self.metric("desync_s", max(arrivals, default=start) - min(arrivals, default=start))
        self.metric("late", late)
        if st.H is not None:
            self.metric("heterogeneity", st.H)



def build(world: World, params: GraphFLParams, task: ModelTask, rounds: int, *, cohort: bool = True) -> None:
    """The server and the clients (one cohort; `cohort=False`: one actor each) learning the
    run's `task` (softmax, mlp or cnn over `digits_fl` data)."""
    state = GraphFLState(world, params, task)
    for name, node in world.network.nodes.items():
        if node.role == "server":
            state.apply_devices(world, name)
            world.add(GraphFLServer(name, state, rounds))
    add_clients(world, lambda n, ms: GraphFLClients(n, state, ms), "graphfl-clients", state.clients, cohort=cohort)


#: scenario algorithm names -> parameter presets.  FedAvg, FedProx and local training are the
#: general algorithms `fedavg`, `fedprox` and `local-only` over the same task (netemu.algorithms.fedavg).
VARIANTS: dict[str, dict] = {
    "fedpnp-soft": {"filter": "soft", "mu": 0.2},
    "fedpnp-hard": {"filter": "hard", "mu": 0.2, "tau": 2},
    "g-fedfilt": {"filter": "soft", "share": "updates", "graph": "positions", "beta1": 10.0, "beta2": 0.0, "nu0": 0.0},
    # FedPnP's personalized baselines (Table 1; settings of its appendix A.4.3)
    "pfedme": {"filter": "mean", "mu": 0.0, "local": "pfedme"},
    "perfedavg": {"filter": "mean", "mu": 0.0, "local": "perfedavg"},
    "fedbn": {"filter": "mean", "mu": 0.0, "keep_local": True},
}

#: G-Fedfilt's client graph from positions needs data that places the clients.
POSITIONS = Requirement('data.partition = "rooms" when graph = "positions" (only rooms give clients positions)',
                        lambda s: s.params.graph != "positions" or s.data.get("partition") == "rooms", key="data.partition")

#: a CNN reads square grey images: refused by validate when the data's files say otherwise.
SQUARE_IMAGES = Requirement('square grey images for task.name = "cnn" (features = side², e.g. 64 or 784; '
                            "RGB images and non-square feature counts are not accepted)",
                            lambda s: s.task is None or square_ok(s.task, s.features() if s.features else None), key="data.source")


def _fits(holds):
    return lambda s: s.task is None or holds(s.params, s.task)


#: what the family needs of the task's params (graphfl_params.TASK_CHECKS), each at its task key
TASK_FITS = tuple(Requirement(f"task.{key} = {accepts}", _fits(holds), key=f"task.{key}") for key, accepts, holds in TASK_CHECKS)

SPECS = [
    AlgorithmSpec(name, GraphFLParams, build, datasets=("digits_fl",), roles=("server", "client"), doc=__doc__, defaults=preset,
                  requires=(ONE_SERVER, POSITIONS, SQUARE_IMAGES, *TASK_FITS), task=True, tasks=TASKS, moved=MOVED,
                  task_table='e.g. [task] name = "softmax", epochs = 5, work_per_sample = 0.002, metrics = ["accuracy"]: '
                             "the family's values before it learned through a task")
    for name, preset in VARIANTS.items()
]
