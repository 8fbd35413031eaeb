"""Graph-filter personalization on a star: FedPnP, G-Fedfilt, and FedAvg, FedProx and
local training as the same server with other filters.

Sources: FedPnP (`001_…`: eqs. 9–16, Algorithm 1, appendix A.5) and G-Fedfilt
(`002_…`: eqs. 1, 12, 13, Algorithms 1–2).  A server keeps one model per client,
Ψ (K × B, rows = clients), all starting from one initial model ω⁰.  Round t:

1. the server sends each client its row Ψ[k];
2. the client runs `epochs` epochs of mini-batch SGD from Ψ[k] on its data with the
   proximal term (mu/2)‖ω − Ψ[k]‖² (FedPnP eq. 9; FedProx; mu = 0 is FedAvg's local
   step), learning rate lr · lr_decay^(t−1), and replies with its update ω̂_k − Ψ[k]
   (with `sparsity` < 1: only the largest entries, as a partial model, keeping the rest
   as a residual for the next round — G-Fedfilt Algorithm 2);
3. the server waits for the updates until `deadline` virtual seconds passed.  A late
   update is dropped (`late = "drop"`: that client's row does not move this round) or
   applied when it arrives, in a later round (`late = "carry"`);
4. Ω̂ = Ψ + updates, and Ψ ← F(Ω̂) (`share = "models"`: FedPnP eq. 13) or
   Ψ ← Ψ + F(Ω̂ − Ψ) (`share = "updates"`: G-Fedfilt eq. 12 filters the gradient
   updates), where the filter F (`netemu.kernels.graphfilter`) is chosen by `filter`:
   * `"soft"`: H = V h(Λ) Vᵀ, h(λ) = 1/(1 + ν₁λ + ν₂λ²) (FedPnP eq. 12), applied with
     the clients' dataset-size weights ζ_k, row-normalized (the kernel explains why);
     ν_i⁽ᵗ⁾ = max(β_i, nu0 (1 − nu_decay)^t) (Algorithm 1's dynamic denoising;
     nu0 = 0 keeps β fixed, as G-Fedfilt does with β₁ = μ_s, β₂ = 0);
   * `"hard"`: keep the min(τ, t) smallest graph frequencies (FedPnP eq. 16; Fig. 4 grows
     the number kept over the rounds until it reaches τ);
   * `"mean"`: the ζ-weighted mean for every client (FedAvg, FedProx);
   * `"identity"`: Ψ = Ω̂ (local training).

FedPnP's personalized baselines (its Table 1, settings of appendix A.4.3; the maths in
`netemu.kernels.personal`) are parameters of the same server and client:
* `local = "pfedme"`: step 2 is pFedMe's local round (λ = `lam`, K = `inner_steps`,
  `personal_lr`, η = lr) and step 4 pFedMe's global update Ψ ← (1 − β) Ψ + β F(Ω̂) with
  β = `server_mix`; the client uses its personalized model θ̂ (local accuracy).
* `local = "perfedavg"`: step 2 is Per-FedAvg's MAML steps (outer step lr, inner step
  `alpha`, `maml` = "fo" or "hf"); the client uses one step of size α on its data.
* `keep_local = true` (FedBN): the entries of the model's `local_mask` (batch norm) never
  travel: the server sends and receives the other entries only (the message sizes count
  just those) and each client keeps its own, across rounds, in its actor.
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
sparsity z.  The update sizes in P'' are the emulator's encoded message sizes; the
server's deadline is T_opt plus 2% for the step changes of msgpack size headers.

The model (`model`): `"softmax"` (logistic regression), `"mlp"` (one hidden layer of
`hidden` units), `"mlp_bn"` (the same with batch norm), `"cnn"` (conv 3×3 with `channels`
filters → ReLU → 2×2 max-pool, a second such layer when `channels2` > 0, then dense;
netemu.kernels.cnn) and `"cnn_bn"` (with batch norm after each convolution).  The CNNs
read each sample as a square grey image, so the data's feature count must be a square
(64 for the bundled digits, 784 for MNIST/EMNIST).  Batch-norm models train with the
batch's statistics and are evaluated with running statistics that travel inside θ.

Metrics per round, from the server: `accuracy_local` (each client's Ψ[k] on its local
test set, mean over clients), `accuracy_global` (on the global test set), `latency_s`
(from the round's start to the last update that made the deadline, or the deadline if
one missed it), `desync_s` (the spread between the first and the last update to arrive,
G-Fedfilt's desynchronization), `late` (updates that missed the deadline), and with a
system model `heterogeneity` (H, eq. 34); from each client `compute_s`, its computation
time in the round.  With `metrics = ["accuracy", "f1"]` (or "precision", "recall") the
server also reports `f1_local` / `f1_global` etc.: macro scores, mean over clients.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from netemu.actors import Actor
from netemu.algorithms.base import ONE_SERVER, AlgorithmSpec, Requirement
from netemu.config import ConfigError, require
from netemu.coordination import gather
from netemu.kernels.classifiers import MLP, MLPBN, Softmax, accuracy, macro_prf, predictions, sgd
from netemu.kernels.cnn import CNN, square_side
from netemu.kernels.graphfilter import (
    components,
    hard_filter,
    join_components,
    laplacian,
    paper_filter,
    position_graph,
    soft_filter,
    spectrum,
    statistics,
    statistics_graph,
    weighted_filter,
)
from netemu.kernels.personal import merge_kept, perfedavg, personalize, pfedme
from netemu.net.network import Message
from netemu.system import Device, draw_devices, heterogeneity, optimize, rate
from netemu.wire.codec import encode_envelope, encode_from
from netemu.wire.partial import PartialModel
from netemu.world import World

if TYPE_CHECKING:
    from netemu.data.federated import FederatedTask

__all__ = ["GraphFLParams", "SPECS", "VARIANTS"]

FILTERS = ("soft", "hard", "mean", "identity")


SCORES = ("accuracy", "precision", "recall", "f1")  # the names `metrics` accepts
MODELS = ("softmax", "mlp", "mlp_bn", "cnn", "cnn_bn")
LOCAL_STEPS = ("sgd", "pfedme", "perfedavg")  # the client's local round (`local`)
BATCHNORM_MODELS = ("mlp_bn", "cnn_bn")
#: models without batch-norm entries (their `local_mask` is None): FedBN (`keep_local`) refuses them
MASKLESS_MODELS = tuple(m for m in MODELS if m not in BATCHNORM_MODELS)


def _no_mask(model: str) -> str:
    """What `keep_local` accepts when `model` has no batch-norm entries."""
    return f"false with model = {model!r}, which has no batch-norm entries to keep local (FedBN needs a model with a local_mask)"


@dataclass(frozen=True)
class GraphFLParams:
    model: str = "softmax"  # "softmax" | "mlp" | "mlp_bn" | "cnn" | "cnn_bn" (module docstring)
    hidden: int = 32  # MLP hidden units
    channels: int = 8  # CNN: filters of the first convolution
    channels2: int = 0  # CNN: filters of a second convolution (0: none)
    lr: float = 0.05
    lr_decay: float = 1.0  # learning rate lr · lr_decay^(t−1)
    epochs: int = 5  # local epochs E
    batch: int = 32
    mu: float = 0.0  # proximal weight (FedPnP eq. 9, FedProx)
    filter: str = "soft"  # "soft" | "hard" | "mean" | "identity"
    beta1: float = 0.0005  # β₁ (G-Fedfilt: μ_s)
    beta2: float = 0.0005  # β₂
    nu0: float = 1.0  # initial denoising strength ν⁽⁰⁾ (0 = fixed β)
    nu_decay: float = 0.1  # η
    tau: int = 1  # hard filter: graph frequencies kept
    share: str = "models"  # "models" (FedPnP) | "updates" (G-Fedfilt)
    graph: str = "statistics"  # "statistics" | "positions"
    d_max: float = 15.0  # metres, for graph = "positions"
    disconnected: str = "components"  # "components" | "join" (module docstring)
    join_weight: float = 0.01  # edge weight between components, disconnected = "join"
    normalize: str = "rows"  # soft filter: "rows" | "paper" (G-Fedfilt eqs. 43–46)
    sparsity: float = 1.0  # share of update entries sent (1 = dense)
    deadline: float = 60.0  # virtual seconds the server waits for updates
    late: str = "drop"  # "drop" | "carry"
    work_per_sample: float = 0.002  # compute work per sample and epoch (without a system model)
    system: str = "none"  # "none" | "table3": devices drawn from G-Fedfilt's Table III
    system_spread: float = 1.0  # share of Table III's ranges (smaller: less heterogeneous)
    optimize: bool = False  # solve P'' for per-device epochs, data fraction and sparsity
    opt_mu1: float = 0.4  # weights μ₁, μ₂, μ₃ of P'' (33)
    opt_mu2: float = 0.4
    opt_mu3: float = 0.2
    alpha_min: int = 1
    alpha_max: int = 5
    q_min: float = 0.3
    z_min: float = 0.1
    energy_max: float = math.inf  # J per device and round (C2)
    metrics: tuple = ("accuracy",)  # add "precision", "recall", "f1": macro scores (G-Fedfilt Table VI)
    # personalized baselines (module docstring, netemu.kernels.personal)
    local: str = "sgd"  # client step: "sgd" | "pfedme" | "perfedavg"
    lam: float = 15.0  # pFedMe λ (FedPnP A.4.3)
    inner_steps: int = 5  # pFedMe K: gradient steps on the inner problem per batch
    personal_lr: float = 0.1  # pFedMe's step on the inner problem
    server_mix: float = 1.0  # pFedMe β: Ψ ← (1 − β) Ψ + β F(Ω̂)
    alpha: float = 0.05  # Per-FedAvg α: inner and personalization step (FedPnP: α = lr)
    maml: str = "fo"  # Per-FedAvg "fo" (first order) | "hf" (Hessian-free)
    hf_delta: float = 0.001  # Per-FedAvg (HF): finite-difference step δ
    keep_local: bool = False  # FedBN: the model's `local_mask` entries stay on the client

    def __post_init__(self) -> None:
        require(self.model in MODELS, "model", " | ".join(f'"{m}"' for m in MODELS))
        require(self.hidden >= 1, "hidden", ">= 1")
        require(isinstance(self.channels, int) and self.channels >= 1, "channels", "an integer >= 1")
        require(isinstance(self.channels2, int) and self.channels2 >= 0, "channels2", "an integer >= 0 (0: one convolution)")
        require(self.lr > 0, "lr", "> 0")
        require(0 < self.lr_decay <= 1, "lr_decay", "in (0, 1]")
        require(self.epochs >= 1, "epochs", ">= 1")
        require(self.batch >= 1, "batch", ">= 1")
        require(self.mu >= 0, "mu", ">= 0")
        require(self.filter in FILTERS, "filter", " | ".join(FILTERS))
        require(self.beta1 >= 0 and self.beta2 >= 0, "beta1", ">= 0 (and beta2 >= 0)")
        require(self.nu0 >= 0, "nu0", ">= 0")
        require(0 <= self.nu_decay < 1, "nu_decay", "in [0, 1)")
        require(self.tau >= 1, "tau", ">= 1")
        require(self.share in ("models", "updates"), "share", '"models" or "updates"')
        require(self.graph in ("statistics", "positions"), "graph", '"statistics" or "positions"')
        require(self.d_max > 0, "d_max", "> 0 metres")
        require(self.disconnected in ("components", "join"), "disconnected", '"components" or "join"')
        require(self.join_weight > 0, "join_weight", "> 0")
        require(self.normalize in ("rows", "paper"), "normalize", '"rows" or "paper"')
        require(0 < self.sparsity <= 1, "sparsity", "in (0, 1]")
        require(self.deadline > 0, "deadline", "> 0 virtual seconds")
        require(self.late in ("drop", "carry"), "late", '"drop" or "carry"')
        require(self.work_per_sample >= 0, "work_per_sample", ">= 0")
        require(self.system in ("none", "table3"), "system", '"none" or "table3"')
        require(0 <= self.system_spread <= 1, "system_spread", "in [0, 1]")
        require(not self.optimize or self.system == "table3", "optimize", 'true only with system = "table3"')
        require(min(self.opt_mu1, self.opt_mu2, self.opt_mu3) >= 0, "opt_mu1", ">= 0 (and opt_mu2, opt_mu3)")
        require(1 <= self.alpha_min <= self.alpha_max, "alpha_min", "between 1 and alpha_max")
        require(0 < self.q_min <= 1, "q_min", "in (0, 1]")
        require(0 < self.z_min <= 1, "z_min", "in (0, 1]")
        require(self.energy_max > 0, "energy_max", "> 0 J")
        require(isinstance(self.metrics, (list, tuple)) and set(self.metrics) <= set(SCORES) and "accuracy" in self.metrics,
                "metrics", 'a list of "accuracy" (always reported), "precision", "recall", "f1"')
        require(self.local in LOCAL_STEPS, "local", " | ".join(LOCAL_STEPS))
        require(self.local == "sgd" or self.model not in BATCHNORM_MODELS, "local",
                f'"sgd" with model = {self.model!r}: the pFedMe and Per-FedAvg steps do not track batch-norm running statistics')
        require(self.local == "sgd" or self.mu == 0, "mu", '0 unless local = "sgd" (pFedMe and Per-FedAvg have no proximal term)')
        require(self.lam > 0, "lam", "> 0")
        require(self.inner_steps >= 1, "inner_steps", ">= 1")
        require(self.personal_lr > 0, "personal_lr", "> 0")
        require(0 < self.server_mix <= 1, "server_mix", "in (0, 1]")
        require(self.alpha >= 0, "alpha", ">= 0")
        require(self.maml in ("fo", "hf"), "maml", '"fo" or "hf"')
        require(self.hf_delta > 0, "hf_delta", "> 0")
        require(isinstance(self.keep_local, bool), "keep_local", "true or false")
        require(not self.keep_local or self.model not in MASKLESS_MODELS, "keep_local", _no_mask(self.model))

    def nu(self, t: int) -> tuple[float, float]:
        """ν₁⁽ᵗ⁾, ν₂⁽ᵗ⁾ (FedPnP Algorithm 1)."""
        level = self.nu0 * (1 - self.nu_decay) ** t
        return max(self.beta1, level), max(self.beta2, level)


_POSITIONS_NEEDED = '"statistics" unless data.partition = "rooms" gives positions'


def _square_ok(p: GraphFLParams, d: int | None) -> bool:
    """Whether a CNN can read d features as a square grey image (d unknown: not refused here)."""
    if not p.model.startswith("cnn") or d is None:
        return True
    side = square_side(d)
    return side is not None and side >= (4 if p.channels2 else 2)


def _square_needed(p: GraphFLParams, d: int | str) -> str:
    return (f'square grey images for model = "{p.model}": features = side² with side >= {4 if p.channels2 else 2} '
            f"(64 for the bundled digits, 784 for MNIST/EMNIST; RGB images are not accepted); the data has {d}")


def make_model(p: GraphFLParams, d: int, C: int):
    """The classifier `p.model` names, for d features and C classes."""
    if p.model == "softmax":
        return Softmax(d, C)
    if p.model in ("mlp", "mlp_bn"):
        return (MLP if p.model == "mlp" else MLPBN)(d, p.hidden, C)
    if not _square_ok(p, d):
        raise ConfigError("model", _square_needed(p, d))
    return CNN(square_side(d) or 0, C, p.channels, p.channels2, batchnorm=p.model == "cnn_bn")


class GraphFLState:
    """The run's shared constants: task, model, client weights ζ and the client graph."""

    def __init__(self, world: World, p: GraphFLParams, task: FederatedTask) -> None:
        self.p, self.task = p, task
        self.clients = [n for n, node in world.network.nodes.items() if node.role == "client"]
        require(set(self.clients) <= set(task.parts), "topology", "a star whose clients all have data")
        d, C = task.dim, task.classes
        self.model = make_model(p, d, C)
        self.theta0 = self.model.init(world.streams.generator("model/init"))
        mask = getattr(self.model, "local_mask", None)
        require(not p.keep_local or mask is not None, "keep_local", _no_mask(p.model))
        # FedBN: entries that stay on the clients (None: every entry travels)
        self.kept = np.asarray(mask, dtype=bool) if p.keep_local else None
        self.shared_size = self.model.size if self.kept is None else int((~self.kept).sum())
        # what each client uses, for the local accuracy only (pFedMe's θ̂, FedBN's kept
        # entries): written by the clients, read by the metrics, never by the algorithm
        self.probe: dict[str, np.ndarray] = {}
        if p.graph == "positions":
            require(task.positions is not None, "graph", _POSITIONS_NEEDED)
        # set by the server from the clients' `stats` messages (set_graph)
        self.zeta: np.ndarray | None = None
        self.A: np.ndarray | None = None
        self.spectrum: tuple[np.ndarray, np.ndarray] | None = None
        self.components = 0
        n = len(self.clients)
        self.plan = {k: (p.epochs, 1.0, p.sparsity) for k in self.clients}  # (α, q, z) per client
        self.devices, self.deadline, self.H = None, p.deadline, None
        if p.system == "table3":
            devices = dict(zip(self.clients, draw_devices(n, world.streams.generator("system"), p.system_spread)))
            self.devices, self.H = devices, heterogeneity(list(devices.values()))
            if p.optimize:
                self.plan_rounds(world, devices)

    def update_bits(self, world: World) -> tuple[float, float]:
        """(χ₀, χ₁): the encoded size in bits of an update sending share z of the entries is
        about χ₀ + z χ₁ (fitted on the envelopes of two partial updates)."""
        k, server = self.clients[0], world.network.neighbours(self.clients[0])[0]
        B = self.shared_size

        def bits(m: int) -> float:
            u = PartialModel.take(np.ones(B), np.arange(m))
            return 8.0 * len(encode_envelope(0, k, server, "update", 1, 0.0, encode_from(k, "update", {"u": u})))

        small, large = max(1, B // 10), B
        per_entry = (bits(large) - bits(small)) / (large - small)
        return bits(large) - per_entry * B, per_entry * B

    def plan_rounds(self, world: World, by_client: dict[str, Device]) -> None:
        """Problem P'' (33) under T_opt (28); per-client (α, q, z) and the deadline."""
        p = self.p
        devices = [by_client[k] for k in self.clients]
        plan = optimize(devices, [self.task.parts[k][1].size for k in self.clients], self.update_bits(world),
                        weights=(p.opt_mu1, p.opt_mu2, p.opt_mu3), alpha_range=(p.alpha_min, p.alpha_max),
                        q_min=p.q_min, z_min=p.z_min, energy_max=p.energy_max)
        self.plan = {k: (plan.alpha[i], plan.q[i], plan.z[i]) for i, k in enumerate(self.clients)}
        self.deadline = plan.deadline * 1.02

    def apply_devices(self, world: World, server: str) -> None:
        """Each device's compute speed (f/ρ samples/s) and uplink bandwidth (r bits/s)."""
        for k, d in (self.devices or {}).items():
            world.network.nodes[k].speed = d.speed
            world.network.link(k, server).bandwidth = rate(d)

    @property
    def needs_graph(self) -> bool:
        return self.p.filter in ("soft", "hard")

    def report_of(self, name: str) -> dict:
        """What client `name` sends before round 1: its sample count and, when the filter
        needs a graph, its data statistics or its position (module docstring)."""
        X, y = self.task.parts[name]
        out: dict = {"n": int(y.size)}
        if self.needs_graph:
            if self.p.graph == "positions":
                if self.task.positions is None:  # refused in __init__; checked again so the type is a dict
                    raise ConfigError("graph", _POSITIONS_NEEDED)
                out["pos"] = np.asarray(self.task.positions[name], dtype=float)
            else:
                out["s"] = statistics(X)
        return out

    def set_graph(self, reports: dict[str, dict]) -> None:
        """ζ, the client graph and its spectrum from the received reports; a client
        without a report gets the others' mean sample count and no edges."""
        p, K = self.p, len(self.clients)
        known = [reports[k]["n"] for k in self.clients if k in reports]
        fill = float(np.mean(known)) if known else 1.0
        sizes = np.array([reports[k]["n"] if k in reports else fill for k in self.clients], dtype=float)
        self.zeta = sizes / sizes.sum()
        if not self.needs_graph:  # the mean and identity filters use no graph
            self.A = np.zeros((K, K))
            return
        have = [i for i, k in enumerate(self.clients) if k in reports]
        A = np.zeros((K, K))
        if have:
            if p.graph == "positions":
                sub = position_graph(np.array([reports[self.clients[i]]["pos"] for i in have]), p.d_max)
            else:
                sub = statistics_graph([np.asarray(reports[self.clients[i]]["s"]) for i in have])
            A[np.ix_(have, have)] = sub
        self.components = int(components(A).max()) + 1
        if p.disconnected == "join" and self.components > 1:
            A = join_components(A, p.join_weight)
        self.A, self.spectrum = A, spectrum(laplacian(A))

    def aggregate(self, t: int, stack: np.ndarray) -> np.ndarray:
        """F applied to the K × B stack (module docstring, step 4)."""
        p = self.p
        if p.filter == "identity":
            return stack.copy()
        zeta, spec = self.zeta, self.spectrum
        if zeta is None:
            raise RuntimeError("GraphFLState.aggregate before set_graph: no client weights ζ yet")
        if p.filter == "mean":
            return np.broadcast_to(zeta @ stack, stack.shape).copy()
        if spec is None:
            raise RuntimeError(f"GraphFLState.aggregate before set_graph: the {p.filter} filter has no graph spectrum yet")
        if p.filter == "hard":
            return hard_filter(spec, min(p.tau, t, len(self.clients))) @ stack
        H = soft_filter(spec, *p.nu(t))
        if p.normalize == "paper":
            return paper_filter(H, zeta, stack)
        return weighted_filter(H, zeta, stack)

    def work_factor(self) -> float:
        """Gradient evaluations per sample and epoch of the local round (its compute work)."""
        p = self.p
        return {"sgd": 1.0, "pfedme": float(p.inner_steps), "perfedavg": 2.0 if p.maml == "fo" else 4.0}[p.local]

    def local_round(self, w: np.ndarray, X: np.ndarray, y: np.ndarray, epochs: int, lr: float,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        """The client's trained model (what its update is taken from) and, for pFedMe, its
        personalized model θ̂ (`local`; netemu.kernels.personal)."""
        p, model = self.p, self.model
        if p.local == "pfedme":
            return pfedme(model, w, X, y, epochs=epochs, batch=p.batch, lr=lr, lam=p.lam, inner_steps=p.inner_steps,
                          personal_lr=p.personal_lr, rng=rng)
        if p.local == "perfedavg":
            return perfedavg(model, w, X, y, epochs=epochs, batch=p.batch, lr=lr, alpha=p.alpha, rng=rng,
                             order=p.maml, delta=p.hf_delta), None
        return sgd(model, w, X, y, epochs=epochs, batch=p.batch, lr=lr, rng=rng, mu=p.mu, anchor=w), None

    def shared(self, vector: np.ndarray) -> np.ndarray:
        """The entries of a model vector that travel (all but FedBN's kept ones)."""
        return vector if self.kept is None else vector[~self.kept]

    def used_model(self, k: str, row: np.ndarray) -> np.ndarray:
        """The model client k uses, for the metrics: pFedMe's θ̂ from its last local round;
        otherwise its server row Ψ[k] with, under FedBN, the client's own kept entries, and
        for Per-FedAvg one step of size α on its training data (`personalize`).  The
        metrics observe the clients' state here; the algorithm never does."""
        p, seen = self.p, self.probe.get(k)
        if p.local == "pfedme":
            return row if seen is None else seen
        if self.kept is not None and seen is not None:
            row = merge_kept(row[~self.kept], seen, self.kept)
        if p.local == "perfedavg":
            row = personalize(self.model, row, *self.task.parts[k], p.alpha)
        return row


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
        """A late update of an earlier round, kept to be applied now (`late = "carry"`)."""
        if msg.round != t and self.state.p.late == "carry":
            self.carried[msg.src] = self.carried.get(msg.src, 0) + dense(msg.payload["u"])

    async def gather_reports(self) -> None:
        """Round 0: the clients' sample counts and statistics (or positions), until all
        came or `deadline` passed; then the graph (GraphFLState.set_graph)."""
        st = self.state
        got = await gather(self, "stats", self.now + st.deadline, round=0, expected=st.clients)
        st.set_graph({m.src: m.payload for m in got.messages})

    def used_models(self) -> np.ndarray:
        """K × B: the model each client uses (`GraphFLState.used_model`; Ψ for FedAvg and FedPnP)."""
        st = self.state
        if st.p.local == "sgd" and st.kept is None:
            return self.Psi
        return np.stack([st.used_model(k, self.Psi[i]) for i, k in enumerate(st.clients)])

    def report_scores(self, used: np.ndarray) -> None:
        """The opt-in macro scores (`metrics`), mean over clients like the accuracies."""
        st = self.state
        for where, sets in (("local", [st.task.local_tests[k] for k in st.clients]),
                            ("global", [st.task.global_test] * len(st.clients))):
            scores = np.mean([macro_prf(y, predictions(st.model, used[i], X), st.task.classes)
                              for i, (X, y) in enumerate(sets)], axis=0)
            for name, value in zip(("precision", "recall", "f1"), scores, strict=True):
                if name in st.p.metrics:
                    self.metric(f"{name}_{where}", float(value))

    def report(self, late: int, start: float, arrivals: list[float]) -> None:
        st = self.state
        if self.round == 1 and st.needs_graph:
            self.metric("components", st.components)
        used = self.used_models()
        local = [accuracy(st.model, used[i], *st.task.local_tests[k]) for i, k in enumerate(st.clients)]
        glob = [accuracy(st.model, used[i], *st.task.global_test) for i in range(len(st.clients))]
        self.metric("accuracy_local", float(np.mean(local)))
        self.metric("accuracy_global", float(np.mean(glob)))
        if len(st.p.metrics) > 1:
            self.report_scores(used)
        self.metric("latency_s", (start + st.deadline if late else max(arrivals, default=start)) - start)
        self.metric("desync_s", max(arrivals, default=start) - min(arrivals, default=start))
        self.metric("late", late)
        if st.H is not None:
            self.metric("heterogeneity", st.H)


class GraphFLClient(Actor):
    daemon = True

    def __init__(self, name: str, state: GraphFLState) -> None:
        super().__init__(name)
        self.state = state
        self.X, self.y = state.task.parts[name]
        self.residual = np.zeros(state.shared_size)  # unsent update entries (Algorithm 2)
        self.own = None if state.kept is None else state.theta0.copy()  # FedBN: the kept entries live here

    async def run(self) -> None:
        st, p = self.state, self.state.p
        self.round = 0
        self.send(self.world.network.neighbours(self.name)[0], "stats", st.report_of(self.name))
        while True:
            msg = await self.recv("model")
            t = self.round = msg.round
            if not self.participates(t):
                continue
            w = np.asarray(msg.payload["w"], dtype=float)
            if self.own is not None and st.kept is not None:  # FedBN: the shared entries with the kept ones
                w = merge_kept(w, self.own, st.kept)
            epochs, fraction, sparsity = st.plan[self.name]
            X, y = self.X, self.y
            if fraction < 1:  # ψ(D; q) = ⌈qD⌉ samples this round
                rows = self.world.streams.generator(f"subset/{self.name}/{t}").choice(y.size, math.ceil(fraction * y.size), replace=False)
                X, y = X[rows], y[rows]
            work = epochs * y.size * (1.0 if st.devices else p.work_per_sample) * st.work_factor()  # samples at f/ρ samples/s
            self.metric("compute_s", await self.compute(work))
            rng = self.world.streams.generator(f"sgd/{self.name}/{t}")
            trained, personal = st.local_round(w, X, y, epochs, p.lr * p.lr_decay ** (t - 1), rng)
            if self.own is not None:
                self.own = st.probe[self.name] = trained
            if personal is not None:
                st.probe[self.name] = personal
            self.send(msg.src, "update", {"u": self.sparsify(st.shared(trained - w), sparsity)})

    def sparsify(self, update: np.ndarray, sparsity: float) -> np.ndarray | PartialModel:
        """Algorithm 2 of G-Fedfilt: send the ⌈sparsity · B⌉ largest entries of update +
        residual, keep the rest as the next residual."""
        if sparsity >= 1:
            return update
        total = update + self.residual
        keep = max(1, math.ceil(sparsity * total.size))
        idx = np.sort(np.argpartition(np.abs(total), total.size - keep)[total.size - keep :])
        sent = PartialModel.take(total, idx)
        self.residual = total.copy()
        self.residual[idx] = 0.0
        return sent


def build(world: World, params: GraphFLParams, task: FederatedTask, rounds: int) -> None:
    state = GraphFLState(world, params, task)
    for name, node in world.network.nodes.items():
        if node.role == "server":
            state.apply_devices(world, name)
            world.add(GraphFLServer(name, state, rounds))
    for name in state.clients:
        world.add(GraphFLClient(name, state))


#: scenario algorithm names -> parameter presets.  FedAvg is `fedprox` with mu = 0
#: (scenarios label it "fedavg"; the name `fedavg` is the quick-start linear FedAvg).
VARIANTS: dict[str, dict] = {
    "fedpnp-soft": {"filter": "soft", "mu": 0.2},
    "fedpnp-hard": {"filter": "hard", "mu": 0.2, "tau": 2},
    "g-fedfilt": {"filter": "soft", "share": "updates", "graph": "positions", "beta1": 10.0, "beta2": 0.0, "nu0": 0.0},
    "fedprox": {"filter": "mean", "mu": 0.01},
    "local": {"filter": "identity"},
    # FedPnP's personalized baselines (Table 1; settings of its appendix A.4.3)
    "pfedme": {"filter": "mean", "mu": 0.0, "local": "pfedme"},
    "perfedavg": {"filter": "mean", "mu": 0.0, "local": "perfedavg"},
    "fedbn": {"filter": "mean", "mu": 0.0, "keep_local": True},
}

#: G-Fedfilt's client graph from positions needs data that places the clients.
POSITIONS = Requirement('data.partition = "rooms" when graph = "positions" (only rooms give clients positions)',
                        lambda s: s.params.graph != "positions" or s.data.get("partition") == "rooms", key="data.partition")

#: a CNN reads square grey images: refused by validate when the data's files say otherwise.
SQUARE_IMAGES = Requirement('square grey images for model = "cnn" or "cnn_bn" (features = side², e.g. 64 or 784; '
                            "RGB images and non-square feature counts are not accepted)",
                            lambda s: _square_ok(s.params, s.features() if s.features else None), key="data.source")

SPECS = [
    AlgorithmSpec(name, GraphFLParams, build, datasets=("digits_fl",), roles=("server", "client"), doc=__doc__, defaults=preset,
                  requires=(ONE_SERVER, POSITIONS, SQUARE_IMAGES))
    for name, preset in VARIANTS.items()
]
