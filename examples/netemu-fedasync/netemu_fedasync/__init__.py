"""FedAsync: asynchronous federated optimization with staleness weighting, a netemu plug-in.

Source: C. Xie, S. Koyejo, I. Gupta, "Asynchronous Federated Optimization" (2019/2020),
Algorithm 1.  The server never waits for a round: whenever a client's model x_new arrives,
trained from the server's model of version τ, it mixes it in at once,

    x_t = (1 − α_t) x_{t−1} + α_t x_new,   α_t = α · s(t − τ)

where t − τ is the update's staleness and s a staleness function (Xie et al. §5.2):
`constant` s = 1, `polynomial` s(d) = (d + 1)^−a, `hinge` s(d) = 1 for d ≤ b, else
1 / (a (d − b) + 1).  The server then sends x_t (version t) back to that client, which
does the task's local round on its data (the scenario's `[task]`: any model netemu or a
plug-in offers; the paper's proximal term is left out) and replies.  A client whose participation draw fails, or whose model or update is lost,
is sent the current model again after `patience` rounds without an answer.

Metrics: the server keeps FedAvg's time base (rounds of `round_time` virtual seconds), so
the two can be compared round by round: at the end of each round the task's metrics (`mse`
for linear regression, `accuracy` and `loss` for a classifier),
`updates` (mixed in during the round) and `staleness` (their mean t − τ).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netemu import Actor
from netemu.algorithms.base import ONE_SERVER, AlgorithmSpec
from netemu.config import deadline, require
from netemu.coordination import gather, send_each
from netemu.engine.net.network import Message
from netemu.tasks import Task

__all__ = ["FedAsyncParams", "SPEC"]


@dataclass(frozen=True)
class FedAsyncParams:
    alpha: float = 0.6  # mixing weight α
    staleness: str = "polynomial"  # "constant" | "polynomial" | "hinge"
    a: float = 0.5  # exponent (polynomial) or slope (hinge)
    b: int = 4  # hinge: staleness tolerated at full weight
    round_time: float = deadline(10.0)  # virtual seconds per metric round (FedAvg's time base)
    patience: int = 3  # rounds without an answer before a client is sent the model again

    def __post_init__(self) -> None:
        require(0 < self.alpha <= 1, "alpha", "in (0, 1]")
        require(self.staleness in ("constant", "polynomial", "hinge"), "staleness", '"constant", "polynomial" or "hinge"')
        require(self.a >= 0, "a", ">= 0")
        require(self.b >= 0, "b", ">= 0")
        require(self.round_time > 0, "round_time", "> 0 virtual seconds")
        require(self.patience >= 1, "patience", ">= 1 round")

    def weight(self, staleness: int) -> float:
        """α_t = α · s(t − τ)."""
        if self.staleness == "constant":
            s = 1.0
        elif self.staleness == "polynomial":
            s = (staleness + 1) ** -self.a
        else:
            s = 1.0 if staleness <= self.b else 1.0 / (self.a * (staleness - self.b) + 1)
        return self.alpha * s


class FedAsyncServer(Actor):
    def __init__(self, name: str, params: FedAsyncParams, rounds: int, task: Task) -> None:
        super().__init__(name)
        self.p, self.rounds, self.task = params, rounds, task
        self.w = task.init()
        self.version = 0
        self.asked: dict[str, int] = {}  # client -> round it was last sent a model
        self.mixed: list[int] = []  # staleness of the updates mixed in this round

    def mix(self, msg: Message) -> None:
        """Algorithm 1: mix the update in at once, send the new model back to its client."""
        stale = self.version - msg.payload["t"]
        alpha = self.p.weight(stale)
        self.w = (1 - alpha) * self.w + alpha * msg.payload["w"]
        self.version += 1
        self.mixed.append(stale)
        self.send(msg.src, "model", {"w": self.w, "t": self.version})
        self.asked[msg.src] = self.round

    async def run(self) -> None:
        clients = self.neighbours
        for r in range(self.rounds):
            self.round = r
            idle = [c for c in clients if r - self.asked.get(c, -self.p.patience) >= self.p.patience]
            send_each(self, "model", {c: {"w": self.w, "t": self.version} for c in idle})
            self.asked.update({c: r for c in idle})
            self.mixed = []
            await gather(self, "update", (r + 1) * self.p.round_time, on_message=self.mix)
            if self.task.evaluates(r, self.rounds):
                for metric, value in self.task.evaluate(self.w).items():
                    self.metric(metric, value)
            self.metric("updates", len(self.mixed))
            self.metric("staleness", float(np.mean(self.mixed)) if self.mixed else 0.0)


class FedAsyncClient(Actor):
    daemon = True

    def __init__(self, name: str, task: Task) -> None:
        super().__init__(name)
        self.task = task

    async def run(self) -> None:
        while True:
            msg = await self.recv("model")
            self.round = msg.round
            if not self.participates():
                continue
            steps, work = self.task.plan(self.name, 1.0)
            await self.compute(work)
            w = self.task.train(msg.payload["w"], self.name, steps)
            self.send(msg.src, "update", {"w": w, "t": msg.payload["t"]})


def build(world, params: FedAsyncParams, task: Task, rounds: int) -> None:
    for name, node in world.network.nodes.items():
        if node.role == "server":
            world.add(FedAsyncServer(name, params, rounds, task))
        else:
            world.add(FedAsyncClient(name, task))


#: `task=True`: netemu hands `build` the scenario's task (netemu.tasks) instead of raw data
SPEC = AlgorithmSpec("fedasync", FedAsyncParams, build, roles=("server", "client"), requires=(ONE_SERVER,), doc=__doc__, task=True)
