"""Label-skewed handwritten digits for personalized FL (G-Fedfilt §IV-B, FedPnP §4).

Data kind `digits_fl`: ten-class digit images — scikit-learn's bundled 8×8 digits by
default (MNIST cannot be downloaded here), or MNIST/EMNIST-format files a user already
has (`source`, as for `digits`); also any single-label image set in MedMNIST's `.npz`
or CIFAR-10's python batches (netemu.data.files), whose labels 0..C−1 set the classes.
Pixels are scaled to [0, 1].

Each client draws `samples` training images **with replacement** from the training
split (the bundled set has about 1,250 training images, fewer than 20 × 450), with the
label proportions its partition gives it:

* `partition = "labels"`: `labels_per_client` distinct labels, equal shares (G-Fedfilt's
  MNIST_2 / MNIST_4 / MNIST_10 are 2, 4, 10);
* `partition = "dirichlet"`: proportions ~ Dir(kappa · 1) (FedPnP's Dir(0.2), Dir(0.5));
* `partition = "rooms"`: clients spread over `rooms` square rooms (positions in metres;
  rooms `room_size` wide and as far apart); `setup = 1`: the devices of a room share
  `labels_per_client − 1` labels and each adds one of its own; `setup = 2`: every device
  takes `labels_per_client` random labels (G-Fedfilt Fig. 8).

Test sets (G-Fedfilt §IV-B): a *local* test set per client of `test_samples` images
with its training label proportions, and one *global* test set — the whole test split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from netemu.config import ConfigError, require
from netemu.data.base import client_generators
from netemu.data.clustered import load_images
from netemu.data.files import DataError, feature_count
from netemu.engine.rng import Streams

__all__ = ["FederatedDigits", "FederatedTask", "make_federated_digits"]

CLASSES = 10


@dataclass(frozen=True)
class FederatedTask:
    parts: dict[str, tuple[np.ndarray, np.ndarray]]  # client -> (X, integer labels)
    local_tests: dict[str, tuple[np.ndarray, np.ndarray]]
    global_test: tuple[np.ndarray, np.ndarray]
    proportions: dict[str, np.ndarray]  # client -> its label distribution
    positions: dict[str, np.ndarray] | None = None  # client -> (x, y) in metres ("rooms")
    classes: int = CLASSES

    @property
    def dim(self) -> int:
        return next(iter(self.parts.values()))[0].shape[1]

    @property
    def test(self) -> tuple[np.ndarray, np.ndarray]:
        """The server's held-out test set (the global one), as a task reads it (netemu.tasks)."""
        return self.global_test


@dataclass(frozen=True)
class FederatedDigits:
    source: str = "sklearn"  # "sklearn", a .npz file, or a folder of MNIST IDX files
    partition: str = "labels"  # "labels" | "dirichlet" | "rooms"
    labels_per_client: int = 2
    kappa: float = 0.5  # Dirichlet concentration
    rooms: int = 4
    room_size: float = 10.0  # metres
    setup: int = 1  # rooms: 1 = a room shares its labels, 2 = random labels per device
    samples: int = 450  # training images per client
    test_samples: int = 100  # local test images per client
    test_fraction: float = 0.3  # of the bundled digits held out (files bring their own split)

    def __post_init__(self) -> None:
        require(isinstance(self.source, str) and self.source != "", "source", '"sklearn" or the path of a .npz file or IDX folder')
        require(self.partition in ("labels", "dirichlet", "rooms"), "partition", '"labels", "dirichlet" or "rooms"')
        require(self.labels_per_client >= 1, "labels_per_client", ">= 1 (and at most the data's classes, 10 for digits)")
        # the bundled digits have 10 classes: checked here, by validate; a file's classes when its data is built
        require(self.source != "sklearn" or self.labels_per_client <= CLASSES, "labels_per_client", f"between 1 and {CLASSES} (the bundled digits' classes)")
        require(self.kappa > 0, "kappa", "> 0")
        require(self.rooms >= 1, "rooms", ">= 1")
        require(self.room_size > 0, "room_size", "> 0 metres")
        require(self.setup in (1, 2), "setup", "1 or 2")
        require(self.samples >= 1, "samples", ">= 1")
        require(self.test_samples >= 1, "test_samples", ">= 1")
        require(0 < self.test_fraction < 1, "test_fraction", "in (0, 1)")

    def with_paths(self, resolve) -> FederatedDigits:
        return self if self.source == "sklearn" else replace(self, source=resolve(self.source))

    def features(self) -> int | None:
        """Features per sample, from the source's headers (netemu.data.files.feature_count):
        64 for the bundled 8×8 digits; None when the files do not say."""
        return 64 if self.source == "sklearn" else feature_count(Path(self.source))


def _label_sets(params: FederatedDigits, clients: Sequence[str], room: dict[str, int], rng,
                classes: int = CLASSES) -> dict[str, np.ndarray]:
    c = params.labels_per_client
    if params.partition == "rooms" and params.setup == 1:
        shared = {r: rng.choice(classes, c - 1, replace=False) for r in range(params.rooms)}
        out = {}
        for k in clients:
            own = rng.choice(np.setdiff1d(np.arange(classes), shared[room[k]]))
            out[k] = np.append(shared[room[k]], own)
        return out
    return {k: rng.choice(classes, c, replace=False) for k in clients}


def make_federated_digits(params: FederatedDigits, clients: Sequence[str], streams: Streams) -> FederatedTask:
    (Xtr, ytr), (Xte, yte) = load_images(params.source, params.test_fraction, streams.generator("data/split"))
    scale = float(max(np.abs(Xtr).max(), 1.0))  # images: the largest pixel; signed data (HARBOX): |x|
    Xtr, Xte = Xtr / scale, Xte / scale
    classes = int(max(ytr.max(), yte.max())) + 1  # 10 digits, or a file's classes 0..C−1
    if params.labels_per_client > classes:
        raise ConfigError("labels_per_client", f"between 1 and {classes}, the classes of {params.source}")
    pools = [np.flatnonzero(ytr == c) for c in range(classes)]
    test_pools = [np.flatnonzero(yte == c) for c in range(classes)]
    for c in range(classes):
        if pools[c].size == 0 or test_pools[c].size == 0:
            raise DataError(f"{params.source}: no training or no test image of class {c} "
                            f"(labels must cover 0..{classes - 1})")
    rng = streams.generator("data/partition")
    positions, room = None, {}
    if params.partition == "rooms":
        order = rng.permutation(len(clients))
        room = {clients[i]: int(j % params.rooms) for j, i in enumerate(order)}
        s = params.room_size
        positions = {k: np.array([2 * s * room[k], 0.0]) + rng.uniform(0, s, 2) for k in clients}
    proportions = {}
    if params.partition == "dirichlet":
        for k in clients:
            proportions[k] = rng.dirichlet(np.full(classes, params.kappa))
    else:
        for k, labels in _label_sets(params, clients, room, rng, classes).items():
            p = np.zeros(classes)
            p[labels] = 1.0 / labels.size
            proportions[k] = p
    parts, local_tests = {}, {}
    for k, crng in zip(clients, client_generators(streams, clients)):

        def draw(X, y, pools_, n):
            counts = crng.multinomial(n, proportions[k])
            rows = np.concatenate([crng.choice(pools_[c], counts[c], replace=True) for c in range(classes)])
            rows = crng.permutation(rows)
            return X[rows], y[rows].astype(int)

        parts[k] = draw(Xtr, ytr, pools, params.samples)
        local_tests[k] = draw(Xte, yte, test_pools, params.test_samples)
    return FederatedTask(parts, local_tests, (Xte, yte.astype(int)), proportions, positions, classes)
