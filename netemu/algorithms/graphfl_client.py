"""The graph-filter family's client (netemu.algorithms.graphfl, steps 0 and 2), written once.

What a client reports before round 1 (`report`) and its local round (`GraphFLLocal`):
FedPnP's proximal SGD (eq. 9; FedProx, and FedAvg with mu = 0), pFedMe's or Per-FedAvg's
steps (`local`, netemu.kernels.personal), FedBN's kept entries, a system plan's epochs α
and data fraction q (⌈qD⌉ samples, G-Fedfilt eq. 33) and G-Fedfilt's sparse update with its
residual (Algorithm 2).  The clients' logic `GraphFLClients` drives `GraphFLLocal`, hosted
as one cohort for all of them (the default) or as one `Solo` actor each: the same draws,
messages, records and models.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from netemu.algorithms.graphfl_params import _POSITIONS_NEEDED, GraphFLParams
from netemu.engine.cohort import Cohort, Member
from netemu.config import ConfigError
from netemu.kernels.batched import softmax_sgd_many
from netemu.kernels.classifiers import Softmax, passes, sgd
from netemu.kernels.graphfilter import statistics
from netemu.kernels.personal import merge_kept, perfedavg, pfedme
from netemu.engine.net.network import Message
from netemu.tasks.base import Training
from netemu.wire.partial import PartialModel

if TYPE_CHECKING:
    from netemu.algorithms.graphfl_state import GraphFLState

Stream = Callable[[str], np.random.Generator]  # the run's named streams, as a node's port gives them

__all__ = ["GraphFLClients", "GraphFLLocal", "local_round", "report", "work_factor"]


def work_factor(p: GraphFLParams, batch: int, n: int) -> float:
    """Gradient evaluations per sample and epoch of the local round (its compute work):
    pFedMe and Per-FedAvg take one mini-batch of `batch` (or two, four) per local round, not n samples."""
    if p.local == "sgd":
        return 1.0
    per_batch = float(p.inner_steps) if p.local == "pfedme" else 2.0 if p.maml == "fo" else 4.0
    return per_batch * min(batch, n) / n


def local_round(p: GraphFLParams, batch: int, model, w: np.ndarray, X: np.ndarray, y: np.ndarray, epochs: float, lr: float,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """The client's trained model (what its update is taken from) and, for pFedMe, its
    personalized model θ̂ (`local`; netemu.kernels.personal), in mini-batches of `batch`.
    Fractional epochs (a relaxed α) come only with `local = "sgd"` (GraphFLParams)."""
    if p.local == "pfedme":
        return pfedme(model, w, X, y, rounds=int(epochs), batch=batch, lr=lr, lam=p.lam, inner_steps=p.inner_steps,
                      personal_lr=p.personal_lr, rng=rng)
    if p.local == "perfedavg":
        return perfedavg(model, w, X, y, rounds=int(epochs), batch=batch, beta=p.meta_lr, alpha=p.alpha, rng=rng,
                         order=p.maml, delta=p.hf_delta), None
    return sgd(model, w, X, y, epochs=epochs, batch=batch, lr=lr, rng=rng, mu=p.mu, anchor=w), None  # FedPnP eq. 9


def step(training: Training, t: int) -> float:
    """The learning rate of round t: lr · lr_decay^(t−1) (the task's lr and lr_decay; every
    client is sent a model every round, so t − 1 counts its local rounds as the task does)."""
    return training.lr if training.lr_decay is None else training.lr * training.lr_decay ** (t - 1)


def report(st: GraphFLState, name: str) -> dict:
    """What client `name` sends before round 1: its sample count and, when the filter
    needs a graph, its data statistics or its position (netemu.algorithms.graphfl)."""
    X, y = st.task.parts[name]
    out: dict = {"n": int(y.size)}
    if st.needs_graph:
        if st.p.graph == "positions":
            if st.task.positions is None:  # refused by GraphFLState; checked again so the type is a dict
                raise ConfigError("graph", _POSITIONS_NEEDED)
            out["pos"] = np.asarray(st.task.positions[name], dtype=float)
        else:
            out["s"] = statistics(X)
    return out


@dataclass(slots=True)
class Job:
    """One round's local work between the model's arrival and the update: the start model
    (FedBN: with the kept entries), the samples used, the plan's α and z, the compute
    work, and the compute time it took (set once the compute is scheduled)."""

    round: int
    w: np.ndarray
    X: np.ndarray
    y: np.ndarray
    epochs: float
    sparsity: float
    work: float
    compute_s: float = 0.0
    trained: tuple[np.ndarray, np.ndarray | None] | None = None  # `local_round`'s result, once computed


class GraphFLLocal:
    """One client's own state — its data, G-Fedfilt's residual of unsent update entries
    (made at its first sparse update), FedBN's kept entries — and its local round, in two
    halves around the compute: `begin` when the model arrives, `finish` when the compute
    is done."""

    __slots__ = ("X", "name", "own", "residual", "state", "y")

    def __init__(self, name: str, state: GraphFLState) -> None:
        self.name, self.state = name, state
        self.X, self.y = state.task.parts[name]
        self.residual: np.ndarray | None = None  # unsent update entries (Algorithm 2); None: all zero
        self.own = None if state.kept is None else state.theta0.copy()  # FedBN: the kept entries live here

    def begin(self, msg: Message, stream: Stream) -> Job:
        """The start model from the server's row in `msg`, this round's samples (⌈qD⌉ of
        them under a plan with q < 1) and the work they cost."""
        st, p, t = self.state, self.state.p, msg.round
        w = np.asarray(msg.payload["w"], dtype=float)
        if self.own is not None and st.kept is not None:  # FedBN: the shared entries with the kept ones
            w = merge_kept(w, self.own, st.kept)
        epochs, fraction, sparsity = st.plan[self.name]
        X, y = self.X, self.y
        if fraction < 1:  # ψ(D; q) = ⌈qD⌉ samples this round
            rows = stream(f"subset/{self.name}/{t}").choice(y.size, math.ceil(fraction * y.size), replace=False)
            X, y = X[rows], y[rows]
        tr = st.training
        work = sum(passes(epochs, y.size)) * (1.0 if st.devices else tr.work_per_sample) * work_factor(p, tr.batch, y.size)  # samples at f/ρ samples/s
        return Job(t, w, X, y, epochs, sparsity, work)

    def finish(self, job: Job, stream: Stream) -> dict:
        """The local round of `job` (unless it was computed already, `GraphFLClients.train`)
        and the update message's payload."""
        st, p = self.state, self.state.p
        if job.trained is None:
            job.trained = local_round(p, st.training.batch, st.model, job.w, job.X, job.y, job.epochs, step(st.training, job.round),
                                      self.rng(stream, job))
        trained, personal = job.trained
        if self.own is not None:
            self.own = st.probe[self.name] = trained
        if personal is not None:
            st.probe[self.name] = personal
        return {"u": self.sparsify(st.shared(trained - job.w), job.sparsity)}

    def rng(self, stream: Stream, job: Job) -> np.random.Generator:
        """The Generator of the local round of `job` (its mini-batch permutations)."""
        return stream(f"sgd/{self.name}/{job.round}")

    def sparsify(self, update: np.ndarray, sparsity: float) -> np.ndarray | PartialModel:
        """Algorithm 2 of G-Fedfilt: send the ⌈sparsity · B⌉ largest entries of update +
        residual, keep the rest as the next residual."""
        if sparsity >= 1:
            return update
        total = update + (0.0 if self.residual is None else self.residual)
        keep = max(1, math.ceil(sparsity * total.size))
        idx = np.sort(np.argpartition(np.abs(total), total.size - keep)[total.size - keep :])
        sent = PartialModel.take(total, idx)
        self.residual = total.copy()
        self.residual[idx] = 0.0
        return sent


#: clients trained together at most (GraphFLClients.train): their stacked samples, 64 × 200 × 784 floats, are 80 MB
BATCH_CLIENTS = 64


class GraphFLClients(Cohort):
    """The clients' logic, for one cohort or one `Solo` actor each.

    With the softmax model and plain SGD (FedPnP, G-Fedfilt, FedProx, FedAvg, local), the
    first client whose compute ends trains every client whose round is in progress at once
    (`softmax_sgd_many`, equal to each client's own `sgd`); each uses its result when its
    own compute ends, and what it keeps (residual, probe) changes only then.  A local round
    is a function of what its client received and holds, so computing it earlier changes
    nothing in the emulation; a client that crashes meanwhile never uses its result."""

    receives = "model"

    def __init__(self, name: str, state: GraphFLState, members: list[str] | None = None) -> None:
        super().__init__(name, state.clients if members is None else members)
        self.state = state
        self.local = [GraphFLLocal(m.name, state) for m in self.members]
        self.batched = isinstance(state.model, Softmax) and state.p.local == "sgd"
        self.running: dict[int, Job] = {}  # member index -> its round in progress (batched only)

    def on_member_crash(self, m: Member) -> None:
        self.running.pop(m.index, None)

    def on_member_start(self, m: Member) -> None:
        m.round = 0
        self.send(m, self.neighbours(m)[0], "stats", report(self.state, m.name))

    def on_message(self, m: Member, msg: Message) -> None:
        m.round = msg.round
        if not self.participates(m):
            return
        job = self.local[m.index].begin(msg, self.engine.stream)
        job.compute_s = self.compute(m, job.work, self.reply, msg, job)
        if self.batched:
            self.running[m.index] = job

    def reply(self, m: Member, msg: Message, job: Job) -> None:
        self.metric(m, "compute_s", job.compute_s)
        if self.batched:
            del self.running[m.index]
            if job.trained is None:
                self.train([(m.index, job), *self.running.items()])
        self.send(m, msg.src, "update", self.local[m.index].finish(job, self.engine.stream))

    def train(self, jobs: list[tuple[int, Job]]) -> None:
        """The local round of the first of `jobs` (member index, job) and of the others
        alike (same sample count and epochs) not trained yet, as batched SGD
        (`softmax_sgd_many`, `BATCH_CLIENTS` at a time: the stacked samples stay small);
        each result is kept in its job."""
        p, tr, stream, first = self.state.p, self.state.training, self.engine.stream, jobs[0][1]
        alike = [(i, j) for i, j in jobs if j.trained is None and j.y.size == first.y.size and j.epochs == first.epochs]
        for start in range(0, len(alike), BATCH_CLIENTS):
            group = alike[start : start + BATCH_CLIENTS]
            w = np.stack([j.w for _, j in group])
            trained = softmax_sgd_many(self.state.model, w, np.stack([j.X for _, j in group]), np.stack([j.y for _, j in group]),
                                       epochs=first.epochs, batch=tr.batch, lr=np.array([step(tr, j.round) for _, j in group]),
                                       rngs=[self.local[i].rng(stream, j) for i, j in group], mu=p.mu, anchors=w)
            for (_, j), theta in zip(group, trained, strict=True):
                j.trained = (theta, None)
