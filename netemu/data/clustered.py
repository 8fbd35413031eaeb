"""Clustered tasks for personalized FL: clients split into Q clusters, one model per cluster.

* `clustered_linear` — thesis §5.4.1: cluster models w*_(q) = w₀ + γ ⊙ w₀ with γ
  drawn elementwise from U(−spread, spread) (the text writes γ w₀; we draw γ per entry
  so that clusters differ in direction, not only in scale; `spread_per = "cluster"`
  draws one scalar per cluster, as §6.3 writes δ_q w₀), x ~ N(0, I), y = xᵀw*_(q)
  + noise, D_k uniform in [samples_min, samples_max].  Ridge regression, metric NMSD.
* `digits` — thesis §5.4.2: binary logistic regression per cluster, cluster q telling
  the digits `tasks[q][0]` (label 0) from `tasks[q][1]` (label 1).  The images come
  from the handwritten-digits set shipped with scikit-learn (8×8 pixels; MNIST cannot
  be downloaded on our machines), or from MNIST files a user already has (`source` =
  a Keras-style `.npz` with x_train/y_train/x_test/y_test, or a folder of IDX files).
  Pixels are scaled to [0, 1] and a constant 1 is appended (bias).  Each client gets
  between `samples_min` and `samples_max` training images *of each class*, drawn
  without replacement for that client (clients of a cluster may share images: the
  clusters "share the same data", §5.4.2); test accuracy is measured on the held-out
  images of the cluster's digits.

Clusters are a balanced random split of the clients (§5.4.1: "randomly split").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from netemu.config import ConfigError, require
from netemu.data.base import client_generators
from netemu.data.files import check_source, cifar_folder, harbox_folder, images_from_npz, read_cifar, read_harbox, read_idx_folder
from netemu.engine.rng import Streams

__all__ = ["ClusteredLinearData", "ClusteredTask", "DigitsData", "load_images", "make_clustered_linear", "make_digits"]

TASK_PRESETS = {
    # §5.4.2, Fig. 5.5(a): single digits, low task similarity
    "pairs": [[[1], [8]], [[1], [9]], [[7], [8]]],
    # §5.4.2, Fig. 5.5(b): triplets, high task similarity
    "triplets": [[[1, 2, 3], [6, 7, 8]], [[1, 2, 3], [7, 8, 9]], [[1, 2, 3], [6, 8, 9]]],
}


@dataclass(frozen=True)
class ClusteredTask:
    """`clusters[c]` is client c's cluster; `parts[c]` its (X, y).  Regression tasks carry
    the cluster models `w_star` (Q × d); classification tasks one test set per cluster."""

    loss: str  # "ridge" | "logistic"
    clusters: dict[str, int]
    parts: dict[str, tuple[np.ndarray, np.ndarray]]
    w_star: np.ndarray | None = None
    tests: tuple[tuple[np.ndarray, np.ndarray], ...] = ()
    validation: dict[str, tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=dict)

    @property
    def dim(self) -> int:
        return next(iter(self.parts.values()))[0].shape[1]

    @property
    def n_clusters(self) -> int:
        return max(self.clusters.values()) + 1


def _split_clusters(clients: Sequence[str], n_clusters: int, streams: Streams) -> dict[str, int]:
    labels = streams.generator("data/clusters").permutation(np.arange(len(clients)) % n_clusters)
    return {c: int(q) for c, q in zip(clients, labels)}


@dataclass(frozen=True)
class ClusteredLinearData:
    dim: int = 60
    clusters: int = 3
    samples_min: int = 2
    samples_max: int = 9
    spread: float = 0.15  # γ ~ U(−spread, spread); 0.5 is the low-similarity case (Fig. 5.3)
    spread_per: str = "entry"  # draw γ per "entry" of w₀, or one scalar per "cluster" (§6.3's δ_q)
    noise: float = 0.7  # standard deviation of the observation noise
    validation: bool = False  # a validation set of D_k samples per client (§6.3)

    def __post_init__(self) -> None:
        require(self.dim >= 1, "dim", ">= 1")
        require(self.clusters >= 1, "clusters", ">= 1")
        require(1 <= self.samples_min <= self.samples_max, "samples_min", "between 1 and samples_max")
        require(self.spread >= 0, "spread", ">= 0")
        require(self.spread_per in ("entry", "cluster"), "spread_per", '"entry" or "cluster"')
        require(self.noise >= 0, "noise", ">= 0")


def make_clustered_linear(params: ClusteredLinearData, clients: Sequence[str], streams: Streams) -> ClusteredTask:
    truth = streams.generator("data/truth")
    w0 = truth.standard_normal(params.dim)
    shape = (params.clusters, params.dim if params.spread_per == "entry" else 1)
    w_star = w0 + truth.uniform(-params.spread, params.spread, shape) * w0
    clusters = _split_clusters(clients, params.clusters, streams)
    parts, validation = {}, {}

    def sample(rng: np.random.Generator, n: int, q: int) -> tuple[np.ndarray, np.ndarray]:
        X = rng.standard_normal((n, params.dim))
        return X, X @ w_star[q] + params.noise * rng.standard_normal(n)

    for c, rng in zip(clients, client_generators(streams, clients)):  # each client's data from its own stream
        n = int(rng.integers(params.samples_min, params.samples_max + 1))
        parts[c] = sample(rng, n, clusters[c])
    if params.validation:
        for c, rng in zip(clients, client_generators(streams, clients, "/validation")):
            validation[c] = sample(rng, parts[c][0].shape[0], clusters[c])
    return ClusteredTask("ridge", clusters, parts, w_star=w_star, validation=validation)


_TASKS_ACCEPTS = '"pairs", "triplets", or a list of [[digits of label 0], [digits of label 1]] per cluster'


@dataclass(frozen=True)
class DigitsData:
    source: str = "sklearn"  # "sklearn" (load_digits), a .npz file, or a folder of MNIST IDX files
    tasks: str | list = "pairs"  # "pairs", "triplets", or [[[digits of label 0], [digits of label 1]], ...]
    samples_min: int = 2  # training images per class and client
    samples_max: int = 4
    test_fraction: float = 0.3  # of the sklearn digits held out for testing (files bring their own split)

    def __post_init__(self) -> None:
        require(1 <= self.samples_min <= self.samples_max, "samples_min", "between 1 and samples_max")
        require(0 < self.test_fraction < 1, "test_fraction", "in (0, 1)")
        require(isinstance(self.source, str) and self.source != "", "source", '"sklearn" or the path of a .npz file or IDX folder')
        require(self.task_list() is not None, "tasks", _TASKS_ACCEPTS)

    def with_paths(self, resolve) -> DigitsData:
        """A copy with a file `source` resolved (by `resolve`) relative to where the scenario lives."""
        return self if self.source == "sklearn" else dataclasses.replace(self, source=resolve(self.source))

    def task_list(self) -> list | None:
        tasks = TASK_PRESETS.get(self.tasks) if isinstance(self.tasks, str) else self.tasks
        ok = isinstance(tasks, list) and tasks and all(
            isinstance(t, list) and len(t) == 2 and all(isinstance(side, list) and side for side in t)
            and all(isinstance(x, int) and 0 <= x <= 9 for side in t for x in side)
            and not set(t[0]) & set(t[1])
            for t in tasks
        )
        return tasks if ok else None


def load_images(source: str, test_fraction: float, rng: np.random.Generator) -> tuple[tuple, tuple]:
    """((X_train, y_train), (X_test, y_test)) with images flattened to rows of floats."""
    if source == "sklearn":
        from sklearn.datasets import load_digits  # the 1797 8×8 digits scikit-learn ships

        digits = load_digits()
        X, y = digits.data.astype(float), digits.target.astype(int)
        order = rng.permutation(y.size)
        cut = int(round(y.size * (1 - test_fraction)))
        return (X[order[:cut]], y[order[:cut]]), (X[order[cut:]], y[order[cut:]])
    path = Path(source)
    if path.exists():  # (a missing one is a FileNotFoundError below)
        check_source(path)  # from the headers, before anything is decoded: a FIFO never opened, the budget in values held
    if path.suffix == ".npz" and path.is_file():
        return images_from_npz(path)  # MNIST-style or MedMNIST keys (netemu.data.files)
    if cifar_folder(path):
        return read_cifar(path)
    if harbox_folder(path):
        return read_harbox(path, test_fraction, rng)
    if path.is_dir():
        return read_idx_folder(path)  # MNIST/EMNIST IDX files (netemu.data.files)
    raise FileNotFoundError(f"{source}: not \"sklearn\", an existing .npz file, a folder of IDX files "
                            "or a folder of CIFAR-10 python batches")


def _binary(X: np.ndarray, y: np.ndarray, task: list, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features (pixels / scale, then a bias 1), 0/1 labels, and the rows of the task's digits."""
    rows = np.flatnonzero(np.isin(y, task[0] + task[1]))
    feats = np.hstack([X[rows] / scale, np.ones((rows.size, 1))])
    return feats, np.isin(y[rows], task[1]).astype(float), rows


def make_digits(params: DigitsData, clients: Sequence[str], streams: Streams) -> ClusteredTask:
    tasks = params.task_list()
    if tasks is None:  # DigitsData refuses such tasks when built; checked here so `tasks` is a list
        raise ConfigError("tasks", _TASKS_ACCEPTS)
    (Xtr, ytr), (Xte, yte) = load_images(params.source, params.test_fraction, streams.generator("data/split"))
    scale = float(max(Xtr.max(), 1.0))
    clusters = _split_clusters(clients, len(tasks), streams)
    pools = [_binary(Xtr, ytr, t, scale) for t in tasks]
    parts = {}
    for c, rng in zip(clients, client_generators(streams, clients)):
        X, y, _ = pools[clusters[c]]
        per_class = int(rng.integers(params.samples_min, params.samples_max + 1))
        picks = []
        for label in (0.0, 1.0):
            candidates = np.flatnonzero(y == label)
            if candidates.size < per_class:
                raise ValueError(f"data: cluster {clusters[c]} has {candidates.size} training images of label "
                                 f"{int(label)}, a client needs {per_class} (lower samples_max)")
            picks.append(rng.choice(candidates, per_class, replace=False))
        rows = np.concatenate(picks)
        parts[c] = (X[rows], y[rows])
    tests = tuple(_binary(Xte, yte, t, scale)[:2] for t in tasks)
    for q, (_, y) in enumerate(tests):
        if y.size == 0 or y.min() == y.max():
            raise ValueError(f"data: the test set has no images of one class of cluster {q}'s task {tasks[q]}")
    return ClusteredTask("logistic", clusters, parts, tests=tests)
