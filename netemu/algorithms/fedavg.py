"""Federated averaging of a linear model over a star, with a round deadline.

Each round the server broadcasts the model; a client that participates (its keyed
Bernoulli draw) spends `steps × n_k` work units, runs `steps` gradient steps and
returns its model; `steps` is `local_steps`, or max(1, floor(f × local_steps)) when the
scenario gives clients partial work (`[nodes] completeness`: f is the client's
`work_fraction()` of the round).  The server waits until the round deadline (or until
every client answered), then averages the updates of this round weighted by n_k.
Updates that arrive after their round's deadline are ignored (logged as delivered,
not used).  Metrics per round: `mse` on the test set, `participants`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

import numpy as np

from netemu.engine.actors import Actor
from netemu.algorithms.base import ONE_SERVER, AlgorithmSpec
from netemu.engine.cohort import Cohort, Member, add_clients
from netemu.config import deadline, require
from netemu.coordination import gather
from netemu.data.base import part_sizes
from netemu.kernels.linear import gradient_steps, mse, weighted_average
from netemu.engine.net.network import Message
from netemu.engine.world import World

if TYPE_CHECKING:  # the data layer sits below the algorithms: types only
    from netemu.data.synthetic import LinearTask

__all__ = ["FedAvgParams", "SPEC", "local_steps", "median_step"]


@dataclass(frozen=True)
class FedAvgParams:
    lr: float = 0.05
    local_steps: int = 5
    round_time: float = deadline(10.0)

    def __post_init__(self) -> None:
        require(self.lr > 0, "lr", "> 0")
        require(self.local_steps >= 1, "local_steps", ">= 1")
        require(self.round_time > 0, "round_time", "> 0 virtual seconds")


def local_steps(steps: int, fraction: float) -> int:
    """The local steps of a client that completes `fraction` of its work: max(1, floor(fraction × steps))."""
    return steps if fraction >= 1.0 else max(1, math.floor(fraction * steps))


class FedAvgServer(Actor):
    def __init__(self, name: str, params: FedAvgParams, rounds: int, task: LinearTask) -> None:
        super().__init__(name)
        self.p, self.rounds, self.task = params, rounds, task
        self.w = np.zeros(task.w_star.shape[0])

    async def run(self) -> None:
        clients = self.neighbours
        for r in range(self.rounds):
            self.round = r
            self.broadcast("model", self.w)
            replies = await gather(self, "update", self.now + self.p.round_time, round=r, quorum=len(clients))
            if replies:
                models = [m.payload["w"] for m in replies.messages]
                self.w = weighted_average(np.array(models), np.array([m.payload["n"] for m in replies.messages]))
            self.metric("mse", mse(self.w, *self.task.test))
            self.metric("participants", len(replies))


class LocalTraining(Protocol):
    """What the clients' local training reads of an algorithm's (frozen) parameters."""

    @property
    def lr(self) -> float: ...

    @property
    def local_steps(self) -> int: ...


class FedAvgClients(Cohort):
    """The clients' logic, for one cohort or one `Solo` actor each (the local steps stay
    per client, when each client's compute ends)."""

    receives = "model"

    def __init__(self, name: str, members: list[str], params: LocalTraining,
                 parts: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
        super().__init__(name, members)
        self.p = params
        self.parts = parts  # read when a member trains: kept, or drawn again (`DrawnParts`)
        self.sizes = part_sizes(parts, members)

    def on_message(self, m: Member, msg: Message) -> None:
        m.round = msg.round
        if not self.participates(m):
            return
        n = self.sizes[m.index]
        steps = local_steps(self.p.local_steps, self.work_fraction(m))
        self.compute(m, steps * n, self.reply, msg, steps)

    def reply(self, m: Member, msg: Message, steps: int) -> None:
        X, y = self.parts[m.name]
        w = gradient_steps(msg.payload, X, y, self.p.lr, steps)
        self.send(m, msg.src, "update", {"w": w, "n": y.shape[0]})


def build(world: World, params: FedAvgParams, task: LinearTask, rounds: int, *, cohort: bool = True) -> None:
    """The server and the clients: one cohort for all clients (`cohort=False`: one actor each)."""
    clients = []
    for name, node in world.network.nodes.items():
        if node.role == "server":
            world.add(FedAvgServer(name, params, rounds, task))
        else:
            clients.append(name)
    add_clients(world, lambda n, ms: FedAvgClients(n, ms, params, task.parts), "fedavg-clients", clients, cohort=cohort)


def median_step(lr: float, task: LinearTask) -> tuple[Callable[[], object], float]:
    """One local gradient step (step size `lr`) of the client with the median number of
    samples (ties: the first in name order), and its work units (n_k: a client's compute is
    `steps × n_k`) — the `step_cost` of the linear families whose local work is gradient steps."""
    clients = list(task.parts)
    ranked = sorted(zip(part_sizes(task.parts, clients), clients))  # by sample count, then name: no part drawn
    X, y = task.parts[ranked[(len(ranked) - 1) // 2][1]]
    w = np.zeros(task.w_star.shape[0])
    return (lambda: gradient_steps(w, X, y, lr, 1)), float(y.shape[0])


def step_cost(params: FedAvgParams, task: LinearTask) -> tuple[Callable[[], object], float]:
    """One local gradient step of the client with the median number of samples (`median_step`)."""
    return median_step(params.lr, task)


SPEC = AlgorithmSpec("fedavg", FedAvgParams, build, datasets=("linear",), roles=("server", "client"), doc=__doc__,
                     requires=(ONE_SERVER,), partial_work=True, step_cost=step_cost)
