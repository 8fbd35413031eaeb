"""Federated averaging over a star, with a round deadline — and its variants: FedProx,
the server optimizers FedAvgM, FedAdam and FedYogi, and local-only training.

It learns any task (netemu.tasks): the model, its local training and its metrics are the
scenario's `[task]`.  Each round the server sends the model; a client that participates (its
keyed Bernoulli draw) does the task's local round — or, with partial work (`[nodes]
completeness`), max(1, floor(f × steps)) of its steps, f its `work_fraction()` — spending the
task's work units for it, and returns its model with its sample count n_k.  The server waits
until the round deadline (or until every client answered) and aggregates this round's
updates: x̄ = Σ n_k x_k / Σ n_k (McMahan et al., AISTATS 2017, Algorithm 1).  Updates that
arrive after their round's deadline are not used: each gets an `unused` record, reason "late",
with how many virtual seconds after the deadline it came (`coordination.gather`).

* `mu` > 0 — FedProx (Li et al., MLSys 2020, eq. 2): clients minimise their loss plus
  (mu/2)‖w − x_t‖².
* `server_optimizer` — x_{t+1} = x̄ ("none"), or a step of FedAvgM / FedAdam / FedYogi on the
  pseudo-gradient x̄ − x_t (Reddi et al., ICLR 2021, Algorithm 2; netemu.kernels.server_opt)
  with `server_lr` η, `beta1`, `beta2`, `tau`.
* `aggregate = false` — local-only training: the server keeps each client's own model, sends
  it back to that client only, and never averages; on the server's test set the metrics are
  the mean over the clients' models, on the clients' own test splits (`evaluate_on`) each
  client is scored with its own model.

Metrics per round: the task's (e.g. `accuracy`, `loss`; `mse` for linear regression), every
`evaluate_every` rounds, then `participants`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from netemu.algorithms.base import ONE_SERVER, AlgorithmSpec
from netemu.config import deadline, require
from netemu.coordination import gather
from netemu.engine.actors import Actor
from netemu.engine.cohort import Cohort, Member
from netemu.engine.solo import add_clients
from netemu.engine.net.network import Message
from netemu.engine.world import World
from netemu.kernels.linear import weighted_average
from netemu.kernels.server_opt import OPTIMIZERS, ServerState, server_step
from netemu.tasks.base import Task

__all__ = ["MOVED", "SPECS", "VARIANTS", "FedAvgClients", "FedAvgParams", "task_step_cost"]

#: parameters that moved to the task: validate names where they went
MOVED = {"lr": "task.lr", "local_steps": "task.steps"}


@dataclass(frozen=True)
class FedAvgParams:
    round_time: float = deadline(10.0)
    mu: float = 0.0  # FedProx's proximal weight (0: FedAvg's local step)
    server_optimizer: str = "none"  # "none" | "avgm" | "adam" | "yogi"
    server_lr: float = 1.0  # η
    beta1: float = 0.9
    beta2: float = 0.99
    tau: float = 1e-3  # adaptivity (FedAdam, FedYogi)
    aggregate: bool = True  # false: local-only training

    def __post_init__(self) -> None:
        require(self.round_time > 0, "round_time", "> 0 virtual seconds")
        require(self.mu >= 0, "mu", ">= 0")
        require(self.server_optimizer in ("none", *OPTIMIZERS), "server_optimizer", '"none", "avgm", "adam" or "yogi"')
        require(self.server_lr > 0, "server_lr", "> 0")
        require(0 <= self.beta1 < 1, "beta1", "in [0, 1)")
        require(0 <= self.beta2 < 1, "beta2", "in [0, 1)")
        require(self.tau > 0, "tau", "> 0")
        require(isinstance(self.aggregate, bool), "aggregate", "true or false")
        require(self.aggregate or self.server_optimizer == "none", "server_optimizer", '"none" when aggregate = false (nothing is aggregated)')


def report_metrics(actor: Actor, task: Task, rounds: int, model: np.ndarray | Mapping[str, np.ndarray]) -> None:
    """The task's metrics of the model, or of each client's own model (local-only: client -> model;
    the server's test set scores their mean, each client's split its own model: `Task.evaluate`)."""
    if not task.evaluates(actor.round, rounds):
        return
    for name, value in task.evaluate(model).items():
        actor.metric(name, value)


class FedAvgServer(Actor):
    def __init__(self, name: str, params: FedAvgParams, rounds: int, task: Task) -> None:
        super().__init__(name)
        self.p, self.rounds, self.task = params, rounds, task
        self.w = task.init()
        self.opt = ServerState.start(self.w.size, params.tau) if params.server_optimizer != "none" else None

    async def run(self) -> None:
        clients = self.neighbours
        own = dict.fromkeys(clients, self.w)  # local-only: each client's own model
        for r in range(self.rounds):
            self.round = r
            if self.p.aggregate:
                self.broadcast("model", self.w)
            else:
                for c in clients:
                    self.send(c, "model", own[c])
            replies = await gather(self, "update", self.now + self.p.round_time, round=r, quorum=len(clients))
            if not self.p.aggregate:
                own.update((m.src, m.payload["w"]) for m in replies.messages)
            elif replies:
                models = [m.payload["w"] for m in replies.messages]
                mean = weighted_average(np.array(models), np.array([m.payload["n"] for m in replies.messages]))
                self.w = mean if self.opt is None else self._step(mean)
            report_metrics(self, self.task, self.rounds, self.w if self.p.aggregate else own)
            self.metric("participants", len(replies))

    def _step(self, mean: np.ndarray) -> np.ndarray:
        p = self.p
        assert self.opt is not None
        return server_step(p.server_optimizer, self.w, mean, self.opt, lr=p.server_lr, beta1=p.beta1, beta2=p.beta2, tau=p.tau)


#: the fewest waiting members trained at once: fewer are trained one by one (a stacked step's own cost
#: is about that of 3 clients' steps: 22 µs a client in twos, 8.5 in eights, 24 alone; 2026-11-28)
GROUP_MIN = 8
#: the most trained at once: what is held until each one's reply stays bounded (at a million clients
#: nearly all of them wait on the first model when the first replies)
GROUP_MAX = 4096


class FedAvgClients(Cohort):
    """The clients' local rounds, for one cohort or one `Solo` actor each (the local steps run
    per client, when each client's compute ends).  `mu` is FedProx's proximal weight."""

    receives = "model"

    def __init__(self, name: str, members: list[str], task: Task, mu: float = 0.0) -> None:
        super().__init__(name, members)
        self.task, self.mu = task, mu
        # Training in groups, where the task has `train_many`: the members computing on the same model
        # with the same steps wait under one key; the first of them to reply while GROUP_MIN or more
        # wait trains itself and up to GROUP_MAX - 1 of the others at once, each keeping its vector
        # until its own reply (the same vectors, sent at the same instants).
        self._train_many = getattr(task, "train_many", None)
        self._waiting: dict[tuple, dict[Member, None]] = {}  # (model's dtype, shape, bytes, steps) -> members
        self._trained: dict[Member, np.ndarray] = {}

    def on_message(self, m: Member, msg: Message) -> None:
        m.round = msg.round
        if not self.participates(m):
            return
        steps, work = self.task.plan(m.name, self.work_fraction(m))
        key = self._key(msg.payload, steps)
        if key is not None:
            self._waiting.setdefault(key, {})[m] = None
        self.compute(m, work, self.reply, msg, steps)

    def _key(self, model: Any, steps: int) -> tuple | None:
        if self._train_many is None or type(model) is not np.ndarray:
            return None
        return model.dtype.str, model.shape, model.tobytes(), steps

    def reply(self, m: Member, msg: Message, steps: int) -> None:
        w = self._trained.pop(m, None)
        if w is None:
            w = self._train(m, msg.payload, steps)
        self.send(m, msg.src, "update", {"w": w, "n": self.task.samples(m.name)})

    def _train(self, m: Member, model: Any, steps: int) -> np.ndarray:
        key = self._key(model, steps)
        if key is None:
            return self.task.train(model, m.name, steps, mu=self.mu)
        group = self._waiting.get(key)
        if group is None or m not in group or len(group) < GROUP_MIN:  # alone: the others wait on
            if group is not None:
                group.pop(m, None)
                if not group:
                    del self._waiting[key]
            return self.task.train(model, m.name, steps, mu=self.mu)
        members = [m, *(x for x in islice(group, GROUP_MAX) if x is not m)][:GROUP_MAX]
        for x in members:
            del group[x]
        if not group:
            del self._waiting[key]
        assert self._train_many is not None
        self._trained.update(zip(members, self._train_many(model, [x.name for x in members], steps, mu=self.mu), strict=True))
        return self._trained.pop(m)

    def on_member_crash(self, m: Member) -> None:
        """Its pending training is dropped (a recovered member starts afresh)."""
        self._trained.pop(m, None)
        for group in self._waiting.values():
            group.pop(m, None)


def build(world: World, params: FedAvgParams, task: Task, rounds: int, *, cohort: bool = True) -> None:
    """The server and the clients: one cohort for all clients (`cohort=False`: one actor each)."""
    clients = []
    for name, node in world.network.nodes.items():
        if node.role == "server":
            world.add(FedAvgServer(name, params, rounds, task))
        else:
            clients.append(name)
    add_clients(world, lambda n, ms: FedAvgClients(n, ms, task, params.mu), "fedavg-clients", clients, cohort=cohort)


def task_step_cost(params: Any, task: Task) -> tuple[Any, float]:
    """One local step of the task's median client (`Task.step_cost`), for `compute = "measured"`."""
    return task.step_cost()


#: scenario algorithm names -> parameter presets (server optimizers: Reddi et al. 2021's
#: defaults β₁ = 0.9, β₂ = 0.99, τ = 10⁻³, server step η = 10⁻²; FedAvgM: β = 0.9, η = 1)
VARIANTS: dict[str, dict] = {
    "fedavg": {},
    "fedprox": {"mu": 0.01},
    "fedavgm": {"server_optimizer": "avgm"},
    "fedadam": {"server_optimizer": "adam", "server_lr": 0.01},
    "fedyogi": {"server_optimizer": "yogi", "server_lr": 0.01},
    "local-only": {"aggregate": False},
}

SPECS = [
    AlgorithmSpec(name, FedAvgParams, build, roles=("server", "client"), doc=__doc__, defaults=preset, requires=(ONE_SERVER,),
                  partial_work=True, step_cost=task_step_cost, task=True, moved=MOVED)
    for name, preset in VARIANTS.items()
]

#: the plain FedAvg entry
SPEC = SPECS[0]
