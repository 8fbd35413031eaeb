"""The graph-filter family's parameters (netemu.algorithms.graphfl explains them): the
filter, the client graph, late updates, the personalized baselines' steps, the device system
model and its optimizer, each value checked where it is read.  The model and the clients'
local training are the task's (`[task]`: softmax, mlp or cnn, netemu.tasks.supervised):
`MOVED` names where each former key went.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netemu.config import ConfigError, deadline, require
from netemu.kernels.cnn import square_side

__all__ = ["MOVED", "TASKS", "TASK_CHECKS", "GraphFLParams", "batchnorm", "check_task", "square_ok"]

FILTERS = ("soft", "hard", "mean", "identity")

#: the tasks the family runs: NumPy classifiers whose model it steps itself (pFedMe, Per-FedAvg,
#: FedBN's batch-norm entries, batched softmax SGD), netemu.tasks.supervised
TASKS = ("softmax", "mlp", "cnn")
LOCAL_STEPS = ("sgd", "pfedme", "perfedavg")  # the client's local round (`local`)

#: the keys that moved to the task ([task] table): validate names where each went
MOVED = {
    "model": 'task.name ("softmax", "mlp" or "cnn"; "mlp_bn" and "cnn_bn" are task.batchnorm = true)',
    "hidden": "task.hidden", "channels": "task.channels", "channels2": "task.channels2",
    "lr": "task.lr", "lr_decay": "task.lr_decay", "epochs": "task.epochs", "batch": "task.batch",
    "work_per_sample": "task.work_per_sample", "metrics": "task.metrics",
}


def batchnorm(task: Any) -> bool:
    """Whether the task's model has batch norm (`batchnorm = true` on mlp or cnn)."""
    return bool(getattr(task, "batchnorm", False))


@dataclass(frozen=True)
class GraphFLParams:
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
        require(self.local in LOCAL_STEPS, "local", " | ".join(LOCAL_STEPS))
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

    def nu(self, t: int) -> tuple[float, float]:
        """ν₁⁽ᵗ⁾, ν₂⁽ᵗ⁾ (FedPnP Algorithm 1)."""
        level = self.nu0 * (1 - self.nu_decay) ** t
        return max(self.beta1, level), max(self.beta2, level)


_POSITIONS_NEEDED = '"statistics" unless data.partition = "rooms" gives positions'


def square_ok(task: Any, d: int | None) -> bool:
    """Whether the task's model can read d features (a CNN: square grey images; d unknown: not refused here)."""
    if not hasattr(task, "channels") or d is None:
        return True
    side = square_side(d)
    return side is not None and side >= (4 if task.channels2 else 2)


#: (task key, what it accepts, holds(params, task)): what the family needs of the task beyond the
#: task's own checks — validate's requirements (netemu.algorithms.graphfl) and `check_task`
TASK_CHECKS: tuple[tuple[str, str, Callable[[GraphFLParams, Any], bool]], ...] = (
    ("batchnorm", 'false with local = "pfedme" or "perfedavg" (their steps do not track batch-norm running statistics)',
     lambda p, t: p.local == "sgd" or not batchnorm(t)),
    ("batchnorm", "true with keep_local = true (FedBN keeps the model's batch-norm entries on the clients)",
     lambda p, t: not p.keep_local or batchnorm(t)),
    ("epochs", 'a whole number with local = "pfedme" or "perfedavg" (R local rounds of one mini-batch each)',
     lambda p, t: p.local == "sgd" or float(t.epochs).is_integer()),
    ("batch", "an integer >= 1 (the graph-filter family's clients always take mini-batches)", lambda p, t: t.batch >= 1),
    ("steps", "0: the graph-filter family's local round is `epochs` passes (G-Fedfilt's α)", lambda p, t: t.steps == 0),
)


def check_task(p: GraphFLParams, task: Any) -> None:
    """ConfigError at the task's key when the family cannot run with the task's params (`TASK_CHECKS`)."""
    for key, accepts, holds in TASK_CHECKS:
        if not holds(p, task):
            raise ConfigError(key, accepts)
