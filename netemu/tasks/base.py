"""What a learning task registers, and what an algorithm may ask of it.

A task is learning below the algorithms: the model and its loss, the clients' local training
and the evaluation, over the data the scenario's `[data]` kind makes (its partition among the
clients).  An algorithm asks the task for the initial parameters, a client's sample count, the
work and steps of a (partial) local round, `train`, `evaluate`, and one representative local
step for measured compute; it never knows whether the model is a linear regression, a NumPy
CNN or a PyTorch module behind a plug-in.

Built-in tasks and users' plug-ins register the same way: a `TaskSpec` named by a
`netemu.tasks` entry point, or `[task] name = "package.module:attribute"` in a scenario.
Parameters travel as one flat float64 vector (a framework's tensors flattened in a fixed order:
what msgpack encodes, what the wire size counts, and what FedAvg averages).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from netemu.config import require
from netemu.engine.rng import Streams

__all__ = ["Task", "TaskSpec", "Training", "evaluated", "local_steps"]


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def local_steps(steps: int, fraction: float) -> int:
    """The local steps of a client that completes `fraction` of its work: max(1, floor(fraction × steps))."""
    return steps if fraction >= 1.0 else max(1, math.floor(fraction * steps))


class Task(Protocol):
    """What an algorithm needs of learning (one run's task, made by `TaskSpec.make`).

    A task may also have `train_many(params, clients, steps, *, mu)`: `train` for each client in
    turn, the same vectors, computed at once (FedAvg's cohort uses it when it is there)."""

    #: client -> its training data; read by the scenario (participation by data size or label)
    #: and by metrics, never by an algorithm's logic (a client's count travels in its messages)
    parts: Mapping[str, Any]

    def init(self) -> np.ndarray:
        """The initial parameters (the same for every algorithm of a run)."""
        ...

    def samples(self, client: str) -> int:
        """The client's number of training samples (what FedAvg weighs it by)."""
        ...

    def plan(self, client: str, fraction: float) -> tuple[int, float]:
        """(steps, work units) of the client's local round when it completes `fraction` (0, 1] of it."""
        ...

    def train(self, params: np.ndarray, client: str, steps: int, *, mu: float = 0.0) -> np.ndarray:
        """`steps` local steps of the client from `params` on the loss plus (mu/2)‖θ − params‖² (FedProx); new parameters."""
        ...

    def evaluate(self, params: np.ndarray | Mapping[str, np.ndarray]) -> dict[str, float]:
        """The task's metrics, by name, in a fixed order: of one model `params`, or of each client's
        own model (a mapping client -> params: local-only and personalized training), as `evaluated` says."""
        ...

    def evaluates(self, round: int, rounds: int) -> bool:
        """Whether metrics are computed after round `round` (0-based) of `rounds`."""
        ...

    def step_cost(self) -> tuple[Callable[[], object], float]:
        """One local step of the client with the median sample count and its work units (`compute = "measured"`)."""
        ...


@dataclass(frozen=True)
class Training:
    """The keys every built-in task shares: the clients' local training and the evaluation.

    Local training is SGD: `steps` > 0 mini-batch steps, or else `epochs` passes over the
    client's data, in batches of `batch` samples (0: the whole part, gradient descent), with
    step size lr · lr_decay^n in the client's (n+1)-th local round of the run (no `lr_decay`: lr).  A
    round's work is the samples processed × `work_per_sample` work units.  `metrics` are
    computed every `evaluate_every` rounds (and after the last) on the server's held-out test
    set (`evaluate_on = "server"`), the clients' own test splits (`"clients"`: metric names
    gain `_clients`, the mean over clients, each client scored with the model it uses), or both."""

    lr: float = 0.05
    lr_decay: float | None = None  # None: a constant step (a key added later resolves to nothing)
    batch: int = 32
    epochs: float = 1.0
    steps: int = 0
    work_per_sample: float = 1.0
    metrics: tuple = ("accuracy", "loss")
    evaluate_on: str = "server"
    evaluate_every: int = 1

    def __post_init__(self) -> None:
        require(self.lr > 0, "lr", "> 0")
        require(self.lr_decay is None or (_number(self.lr_decay) and 0 < self.lr_decay <= 1), "lr_decay", "a number in (0, 1]")
        require(isinstance(self.batch, int) and self.batch >= 0, "batch", "an integer >= 0 (0: the whole part, gradient descent)")
        require(self.epochs > 0, "epochs", "> 0 passes over the client's data")
        require(isinstance(self.steps, int) and self.steps >= 0, "steps", "an integer >= 0 (0: `epochs` passes instead)")
        require(self.work_per_sample > 0, "work_per_sample", "> 0 work units")
        require(self.evaluate_on in ("server", "clients", "both"), "evaluate_on", '"server", "clients" or "both"')
        require(isinstance(self.evaluate_every, int) and self.evaluate_every >= 1, "evaluate_every", "an integer >= 1 round")

    def evaluates(self, round: int, rounds: int) -> bool:
        """Every `evaluate_every` rounds, and after the last (`Task.evaluates`)."""
        return (round + 1) % self.evaluate_every == 0 or round == rounds - 1


def evaluated(scores: Callable[[np.ndarray, np.ndarray, np.ndarray], dict[str, float]], p: Training,
              params: np.ndarray | Mapping[str, np.ndarray], test: tuple[np.ndarray, np.ndarray],
              local_tests: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """`Task.evaluate` from a task's `scores(θ, X, y)`, as `p.evaluate_on` says: on the server's test
    set (`accuracy`, ...) and/or on the clients' own test splits (`accuracy_clients`, ...: the mean
    over the clients whose split is not empty).

    `params` is one model, or each client's own model (client -> θ, in the clients' order): then
    the server's test set gives the mean of the scores of the clients' models (not the score of
    their mean), and each client's split is scored with that client's own model (personalized
    evaluation; a client without a model of its own is left out)."""
    server, clients = p.evaluate_on in ("server", "both"), p.evaluate_on in ("clients", "both")
    if isinstance(params, Mapping):
        on_test = [scores(theta, *test) for theta in params.values()] if server else []
        on_own = [scores(theta, *local_tests[k]) for k, theta in params.items()
                  if clients and k in local_tests and local_tests[k][1].shape[0]]
    else:
        on_test = [scores(params, *test)] if server else []
        on_own = [scores(params, X, y) for X, y in local_tests.values() if clients and y.shape[0]]
    out: dict[str, float] = {}
    if server:
        out.update(on_test[0] if not isinstance(params, Mapping)
                   else {name: float(np.mean([s[name] for s in on_test])) for name in p.metrics})
    if clients:
        out.update({f"{name}_clients": float(np.mean([s[name] for s in on_own])) for name in p.metrics})
    return out


@dataclass(frozen=True)
class TaskSpec:
    """`params` is a frozen dataclass checking itself in `__post_init__` (the `[task]` table's
    keys besides `name`); `make(params, data, streams)` returns the run's `Task` over the data
    the scenario's `[data]` kind made, drawing only from `streams`; `datasets` lists the
    `data.kind` values it learns (empty: any)."""

    name: str
    params: type
    make: Callable[[Any, Any, Streams], Task]
    datasets: tuple[str, ...] = ()
    doc: str = ""
