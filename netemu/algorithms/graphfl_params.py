"""The graph-filter family's parameters (netemu.algorithms.graphfl explains them) and the
classifier `model` names: what a scenario may set, each value checked where it is read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from netemu.config import ConfigError, deadline, require
from netemu.kernels.classifiers import MLP, MLPBN, Softmax
from netemu.kernels.cnn import CNN, square_side

__all__ = ["BATCHNORM_MODELS", "MASKLESS_MODELS", "MODELS", "GraphFLParams", "make_model"]

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
    epochs: int = 5  # local epochs E; pFedMe and Per-FedAvg: R local rounds of one mini-batch each (their Algorithm 1)
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
    deadline: float = deadline(60.0)  # virtual seconds the server waits for updates
    late: str = "drop"  # "drop" | "carry"
    work_per_sample: float = 0.002  # compute work per sample and epoch (without a system model)
    system: str = "none"  # "none" | "table3": devices drawn from G-Fedfilt's Table III
    system_spread: float = 1.0  # share of Table III's ranges (smaller: less heterogeneous)
    optimize: bool = False  # solve P'' for per-device epochs, data fraction and sparsity
    opt_mu1: float = 0.4  # weights μ₁, μ₂, μ₃ of P'' (33)
    opt_mu2: float = 0.4
    opt_mu3: float = 0.2
    opt_alpha: str = "integer"  # P'': "integer" α | "relaxed" (continuous α, fractional epochs; netemu.system)
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
    alpha: float = 0.1  # Per-FedAvg α: inner and personalization step (FedPnP A.4.3's "personal learning rate 0.1")
    meta_lr: float = 0.01  # Per-FedAvg β: the outer (MAML) step (FedPnP A.4.3: β = 0.01); lr does not apply
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
        require(self.opt_alpha in ("integer", "relaxed"), "opt_alpha", '"integer" or "relaxed"')
        require(self.opt_alpha == "integer" or self.local == "sgd", "opt_alpha",
                '"integer" unless local = "sgd" (pFedMe and Per-FedAvg run whole local rounds)')
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
        require(self.meta_lr > 0, "meta_lr", "> 0")
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

