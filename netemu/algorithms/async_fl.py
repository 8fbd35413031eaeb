"""Asynchronous and straggler-robust federated learning over a star, on any task.

One design, five named variants (presets of `AsyncFLParams`; every parameter can be
overridden).  The server hands its model x (with its version) to clients; a client that
participates (its keyed draw for the round it was asked in) does the task's local round
(netemu.tasks: the model, local training and metrics are the scenario's `[task]`) from the
model it received, spending the task's work units, and answers with its delta Δ = y − x_τ
(or, for FedAsync's mixing, its model y) and the version τ it started from.  With partial
work (`[nodes] completeness`) it runs max(1, floor(f × steps)) of its steps, f its
`work_fraction` of the round it was asked in, as for FedAvg (a client asked twice in one
round does the same fraction both times, as it makes the same participation draw).  A client the server has asked and not yet heard from is *busy*: it is not asked
again until it answers or `patience` rounds have passed (its model or answer may be lost).

* `aggregation = "buffer"` — FedBuff (Nguyen et al., AISTATS 2022, Algorithm 1): at most
  `concurrency` clients train at once (0: all); each answer frees a slot, which goes to the
  next idle client in first-in-first-out order, with the current model.  The server buffers
  answers and after `buffer` = K of them steps x ← x + η_g (1/K) Σ s(t − τ_i) Δ_i
  (`server_lr` = η_g; the version t counts server steps).
* `aggregation = "mix"` — FedAsync (Xie, Koyejo, Gupta 2019, Algorithm 1): every answer is
  mixed in at once, x ← (1 − α_t) x + α_t y with α_t = α s(t − τ) (t counts mixes).
* `max_staleness` ≥ 0 — bounded staleness: an update staler than that many versions (or
  rounds) is dropped, and counted (an `unused` record, reason "stale").
* `aggregation = "sync"` — rounds with a deadline (`round_time`), like FedAvg, among the
  clients that are not busy.  `overcommit` > 1 (FedScale, Lai et al. OSDI'21; Bonawitz et al.
  MLSys'19): ask ⌈overcommit · K⌉ clients (K = `clients_per_round`, 0: all) picked by keyed
  draws, close the round with the first K answers and drop later ones (`unused`, "late").  `carry_late`:
  partial aggregation — aggregate what arrived by the deadline and keep late answers to mix
  into the round in which they arrive, weighted n_k s(τ), τ the rounds they are late.
  A round's step is x ← x + Σ a_i Δ_i / Σ a_i with a_i = n_i (fresh) or n_i s(τ_i) (late):
  with fresh updates only, FedAvg's weighted average of the clients' models.

s(d) = 1 (`staleness = "constant"`) or (1 + d)^−a (`"polynomial"`; a = 0.5 is FedBuff's
1/√(1 + d)).  The asynchronous variants keep FedAvg's time base for metrics: round r ends at
virtual time (r + 1) · `round_time`.  Metrics per round: the task's (e.g. `accuracy`; `mse`),
`participants` (updates used), `staleness` (their mean staleness), `dropped_stale`
(updates dropped: beyond `max_staleness`, or answers to a closed round when late updates are
not carried over).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from netemu.algorithms.base import ONE_SERVER, AlgorithmSpec
from netemu.algorithms.fedavg import MOVED, FedAvgClients, report_metrics, task_step_cost
from netemu.config import deadline, require
from netemu.coordination import gather, sample
from netemu.engine.actors import Actor
from netemu.engine.cohort import Member
from netemu.engine.net.network import Message
from netemu.engine.world import World
from netemu.kernels.staleness import buffered_step, mix, staleness_weight, weighted_delta_step
from netemu.tasks.base import Task

__all__ = ["SPECS", "VARIANTS", "AsyncFLParams"]

AGGREGATIONS = ("buffer", "mix", "sync")
STALENESS = ("constant", "polynomial")


@dataclass(frozen=True)
class AsyncFLParams:
    aggregation: str = "buffer"  # "buffer" (FedBuff), "mix" (FedAsync), "sync" (rounds with a deadline)
    round_time: float = deadline(5.0)  # virtual seconds: a sync round's deadline, an async run's metric period
    concurrency: int = 0  # buffer / mix: clients training at once (0: all)
    buffer: int = 5  # FedBuff's K
    server_lr: float = 1.0  # FedBuff's η_g
    alpha: float = 0.6  # FedAsync's α
    staleness: str = "constant"  # s(d): "constant" 1, "polynomial" (1 + d)^-a
    a: float = 0.5
    max_staleness: int = -1  # drop updates staler than this (-1: keep all)
    clients_per_round: int = 0  # sync: K, the answers a round aggregates (0: all clients)
    overcommit: float = 1.0  # sync: ask ceil(overcommit * K) clients
    carry_late: bool = False  # sync: mix late answers into the round they arrive in
    patience: int = 3  # rounds a silent client stays busy

    def __post_init__(self) -> None:
        require(self.aggregation in AGGREGATIONS, "aggregation", '"buffer", "mix" or "sync"')
        require(self.round_time > 0, "round_time", "> 0 virtual seconds")
        require(self.concurrency >= 0, "concurrency", ">= 0 (0: every client)")
        require(self.buffer >= 1, "buffer", ">= 1 update")
        require(self.server_lr > 0, "server_lr", "> 0")
        require(0 < self.alpha <= 1, "alpha", "in (0, 1]")
        require(self.staleness in STALENESS, "staleness", '"constant" or "polynomial"')
        require(self.a >= 0, "a", ">= 0")
        require(self.max_staleness >= -1, "max_staleness", ">= 0 versions, or -1 for no bound")
        require(self.clients_per_round >= 0, "clients_per_round", ">= 0 (0: every client)")
        require(self.overcommit >= 1, "overcommit", ">= 1")
        require(self.overcommit == 1 or self.aggregation == "sync", "overcommit", '1 unless aggregation = "sync"')
        require(not self.carry_late or self.aggregation == "sync", "carry_late", 'false unless aggregation = "sync"')
        require(self.patience >= 1, "patience", ">= 1 round")

    def weight(self, staleness: float) -> float:
        """s(staleness)."""
        return staleness_weight(staleness, self.staleness, self.a)

    def too_stale(self, staleness: int) -> bool:
        return 0 <= self.max_staleness < staleness


class _Server(Actor):
    """What both servers share: the model, the busy clients, the round's tallies and metrics."""

    def __init__(self, name: str, params: AsyncFLParams, rounds: int, task: Task) -> None:
        super().__init__(name)
        self.p, self.rounds, self.task = params, rounds, task
        self.w = task.init()
        self.version = 0
        self.busy: dict[str, int] = {}  # client -> round it was asked in, until it answers
        self.used: list[float] = []  # staleness of the updates used this round
        self.dropped = 0

    def ask(self, clients: list[str], version: int) -> None:
        for c in clients:
            self.busy[c] = self.round
        if clients:
            self.broadcast("model", {"w": self.w, "t": version}, clients)

    def expire(self) -> list[str]:
        """The busy clients silent for `patience` rounds, no longer busy."""
        gone = [c for c, r in self.busy.items() if self.round - r >= self.p.patience]
        for c in gone:
            del self.busy[c]
        return gone

    def report(self) -> None:
        report_metrics(self, self.task, self.rounds, self.w)
        self.metric("participants", len(self.used))
        self.metric("staleness", float(np.mean(self.used)) if self.used else 0.0)
        self.metric("dropped_stale", self.dropped)
        self.used, self.dropped = [], 0


class AsyncServer(_Server):
    """FedBuff (`buffer`) and FedAsync (`mix`): never waits for a round; each answer is used at once."""

    def __init__(self, name: str, params: AsyncFLParams, rounds: int, task: Task) -> None:
        super().__init__(name, params, rounds, task)
        self.idle: deque[str] = deque()
        self.slots = 0
        self.buffered: list[tuple[np.ndarray, float]] = []

    async def run(self) -> None:
        clients = self.neighbours
        self.idle.extend(clients)
        self.slots = len(clients) if self.p.concurrency == 0 else min(self.p.concurrency, len(clients))
        for r in range(self.rounds):
            self.round = r
            self.idle.extend(self.expire())
            self.refill()
            await gather(self, "update", (r + 1) * self.p.round_time, on_message=self.receive)
            self.report()

    def refill(self) -> None:
        """Free slots go to the idle clients, first in first out, with the current model."""
        take = min(self.slots - len(self.busy), len(self.idle))
        self.ask([self.idle.popleft() for _ in range(max(take, 0))], self.version)

    def receive(self, msg: Message) -> None:
        if self.busy.pop(msg.src, None) is not None:
            self.idle.append(msg.src)
        stale = self.version - msg.payload["t"]
        if self.p.too_stale(stale):
            self.dropped += 1
            self.unused(msg, "stale")
        elif self.p.aggregation == "mix":
            alpha = self.p.alpha * self.p.weight(stale)  # α_t = α s(t − τ)
            self.w = mix(self.w, msg.payload["w"], alpha)
            self.version += 1
            self.used.append(stale)
        else:
            self.buffered.append((msg.payload["d"], self.p.weight(stale)))
            self.used.append(stale)
            if len(self.buffered) == self.p.buffer:
                deltas, weights = zip(*self.buffered)
                self.w = buffered_step(self.w, np.array(deltas), np.array(weights), self.p.server_lr)
                self.version += 1
                self.buffered = []
        self.refill()


class SyncServer(_Server):
    """Rounds with a deadline: over-commitment, partial aggregation with late updates carried over."""

    def __init__(self, name: str, params: AsyncFLParams, rounds: int, task: Task) -> None:
        super().__init__(name, params, rounds, task)
        self.late: list[tuple[Message, int]] = []

    async def run(self) -> None:
        clients = self.neighbours
        target = self.p.clients_per_round or len(clients)
        for r in range(self.rounds):
            self.round = r
            self.expire()
            free = [c for c in clients if c not in self.busy]
            chosen = sample(self, "async_fl/select", free, min(math.ceil(self.p.overcommit * target), len(free)), r)
            self.ask(chosen, r)
            got = await gather(self, "update", self.now + self.p.round_time, round=r, counts=self.fresh,
                               quorum=min(target, len(chosen)) or None, on_message=self.receive)
            fresh = [(m, 0) for m in got.messages]
            used = fresh + self.late
            if used:
                deltas = np.array([m.payload["d"] for m, _ in used])
                weights = np.array([m.payload["n"] * self.p.weight(tau) for m, tau in used])
                self.w = weighted_delta_step(self.w, deltas, weights)
            self.used = [float(tau) for _, tau in used]
            self.late = []
            self.report()

    def fresh(self, msg: Message) -> bool:
        """An answer to this round's request."""
        return msg.payload["t"] == self.round

    def receive(self, msg: Message) -> None:
        self.busy.pop(msg.src, None)
        tau = self.round - msg.payload["t"]
        if tau == 0:
            return  # fresh: counted by the gather
        if self.p.carry_late and not self.p.too_stale(tau):
            self.late.append((msg, tau))
        else:
            self.dropped += 1
            if self.p.carry_late:
                self.unused(msg, "stale")
            else:
                self.unused(msg, "late", late=self.port.late_by(msg))


class AsyncFLClients(FedAvgClients):
    """The clients: FedAvg's local training (`FedAvgClients`), answering with the model
    ("mix") or its delta, stamped with the version `t` it trained from."""

    def __init__(self, name: str, members: list[str], task: Task, mix: bool) -> None:
        super().__init__(name, members, task)
        self.mix = mix

    def reply(self, m: Member, msg: Message, steps: int) -> None:
        start = msg.payload["w"]
        w = self.task.train(start, m.name, steps)
        body = {"w": w} if self.mix else {"d": w - start}
        self.send(m, msg.src, "update", {**body, "n": self.task.samples(m.name), "t": msg.payload["t"]})


def build(world: World, params: AsyncFLParams, task: Task, rounds: int) -> None:
    """The server (asynchronous or with rounds, by `aggregation`) and the clients as one cohort."""
    server = SyncServer if params.aggregation == "sync" else AsyncServer
    clients = []
    for name, node in world.network.nodes.items():
        if node.role == "server":
            world.add(server(name, params, rounds, task))
        else:
            clients.append(name)
    world.add(AsyncFLClients("async-fl-clients", clients, task, params.aggregation == "mix"))


#: scenario algorithm names -> parameter presets (the built-in FedAsync is `fedasync-mix`: the
#: name `fedasync` is the example plug-in's, examples/netemu-fedasync).
VARIANTS: dict[str, dict] = {
    "fedbuff": {"aggregation": "buffer", "staleness": "polynomial", "a": 0.5},
    "fedasync-mix": {"aggregation": "mix", "staleness": "polynomial", "a": 0.5},
    "bounded-staleness": {"aggregation": "buffer", "max_staleness": 2},
    "overcommit": {"aggregation": "sync", "overcommit": 1.3, "clients_per_round": 10},
    "partial-agg": {"aggregation": "sync", "carry_late": True, "staleness": "polynomial", "a": 0.5},
}

SPECS = [
    AlgorithmSpec(name, AsyncFLParams, build, roles=("server", "client"), doc=__doc__, defaults=preset,
                  requires=(ONE_SERVER,), partial_work=True, step_cost=task_step_cost, task=True, moved=MOVED)
    for name, preset in VARIANTS.items()
]
