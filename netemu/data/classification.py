"""A labelled data set split among the clients: the data kind `classification`.

`source` is where the samples come from:
* `"sklearn"` — scikit-learn's bundled 8×8 handwritten digits (1,797; `test_fraction` held out);
* `"synthetic"` — `classes` Gaussian classes in `dim` features: class means ~ N(0, `separation`² I),
  samples ~ N(mean, I); `samples` in all, `test_fraction` held out;
* a folder of MNIST/EMNIST IDX files, or an `.npz` archive (netemu.data.files), with its own test split.

Pixels are scaled to [0, 1] (by the largest training value).  The training rows are split among
the clients by `partition` (netemu.data.partitions: iid, dirichlet(`alpha`), shards
(`shards_per_client`), labels (`labels_per_client`), powerlaw(`exponent`)), each row going to one
client.  `client_test` > 0 holds out that fraction of each client's rows as its own test split
(evaluated with `metrics` on "clients"); the server's test set is the source's test split.
`max_train` > 0 keeps only that many training rows (a random subset), for quick runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from netemu.config import ConfigError, require
from netemu.data.clustered import load_images
from netemu.data.files import feature_count
from netemu.data.partitions import PARTITIONS, partition
from netemu.engine.rng import Streams

__all__ = ["ClassificationData", "LabelledSplit", "make_classification"]


@dataclass(frozen=True)
class LabelledSplit:
    """What a classification task learns from: each client's (X, y) rows, optionally each
    client's own test rows, and the server's held-out test set."""

    parts: dict[str, tuple[np.ndarray, np.ndarray]]
    test: tuple[np.ndarray, np.ndarray]
    classes: int
    local_tests: dict[str, tuple[np.ndarray, np.ndarray]] | None = None

    @property
    def dim(self) -> int:
        return int(self.test[0].shape[1])


@dataclass(frozen=True)
class ClassificationData:
    source: str = "sklearn"  # "sklearn", "synthetic", a folder of IDX files or an .npz file
    partition: str = "iid"  # netemu.data.partitions.PARTITIONS
    alpha: float = 0.5  # dirichlet: concentration
    shards_per_client: int = 2  # shards: McMahan et al.'s two
    labels_per_client: int = 2  # labels
    exponent: float = 1.0  # powerlaw: sizes ∝ rank^-exponent
    min_size: int = 10  # dirichlet, powerlaw: fewest training rows a client may get
    client_test: float = 0.0  # fraction of each client's rows held out as its own test split
    test_fraction: float = 0.25  # sklearn and synthetic: rows held out as the server's test set
    max_train: int = 0  # > 0: keep this many training rows (a random subset)
    classes: int = 10  # synthetic
    dim: int = 20  # synthetic
    samples: int = 5000  # synthetic
    separation: float = 1.0  # synthetic: spread of the class means

    def __post_init__(self) -> None:
        require(isinstance(self.source, str) and self.source != "", "source", '"sklearn", "synthetic", or the path of an IDX folder or .npz file')
        require(self.partition in PARTITIONS, "partition", " | ".join(f'"{p}"' for p in PARTITIONS))
        require(self.alpha > 0, "alpha", "> 0")
        require(self.shards_per_client >= 1, "shards_per_client", ">= 1")
        require(self.labels_per_client >= 1, "labels_per_client", ">= 1")
        require(self.exponent >= 0, "exponent", ">= 0")
        require(self.min_size >= 1, "min_size", ">= 1")
        require(0 <= self.client_test < 1, "client_test", "in [0, 1)")
        require(0 < self.test_fraction < 1, "test_fraction", "in (0, 1)")
        require(self.max_train >= 0, "max_train", ">= 0 (0: every training row)")
        require(self.classes >= 2, "classes", ">= 2")
        require(self.dim >= 1, "dim", ">= 1")
        require(self.samples >= 2 * self.classes, "samples", f">= 2 x classes ({2 * self.classes})")
        require(self.separation >= 0, "separation", ">= 0")

    def with_paths(self, resolve) -> ClassificationData:
        return self if self.source in ("sklearn", "synthetic") else replace(self, source=resolve(self.source))

    def features(self) -> int | None:
        """Features per sample, from the source (file headers; None when they do not say)."""
        if self.source == "synthetic":
            return self.dim
        return 64 if self.source == "sklearn" else feature_count(Path(self.source))


def _synthetic(p: ClassificationData, rng: np.random.Generator) -> tuple[tuple, tuple]:
    means = rng.standard_normal((p.classes, p.dim)) * p.separation
    y = rng.integers(0, p.classes, p.samples)
    X = means[y] + rng.standard_normal((p.samples, p.dim))
    cut = int(round(p.samples * (1 - p.test_fraction)))
    return (X[:cut], y[:cut]), (X[cut:], y[cut:])


def _source(p: ClassificationData, streams: Streams) -> tuple[tuple, tuple]:
    if p.source == "synthetic":
        return _synthetic(p, streams.generator("data/synthetic"))
    (Xtr, ytr), (Xte, yte) = load_images(p.source, p.test_fraction, streams.generator("data/split"))
    scale = float(max(np.abs(Xtr).max(), 1.0))
    return (Xtr / scale, ytr.astype(np.int64)), (Xte / scale, yte.astype(np.int64))


def make_classification(params: ClassificationData, clients: Sequence[str], streams: Streams) -> LabelledSplit:
    """The source's rows split among `clients` (a permutation of the partition's parts over the
    clients in order; every draw from the named streams `data/...`)."""
    (Xtr, ytr), test = _source(params, streams)
    rng = streams.generator("data/partition")
    if 0 < params.max_train < ytr.shape[0]:
        keep = np.sort(rng.choice(ytr.shape[0], params.max_train, replace=False))
        Xtr, ytr = Xtr[keep], ytr[keep]
    classes = int(max(ytr.max(), test[1].max())) + 1
    if params.partition == "labels" and params.labels_per_client > classes:
        raise ConfigError("labels_per_client", f"between 1 and {classes}, the classes of {params.source}")
    if ytr.shape[0] < len(clients):
        raise ConfigError("source", f"at least one training sample per client: {ytr.shape[0]} samples for {len(clients)} clients")
    try:
        rows = partition(params.partition, ytr, len(clients), rng, alpha=params.alpha, exponent=params.exponent,
                         per_client=params.shards_per_client if params.partition == "shards" else params.labels_per_client,
                         min_size=params.min_size)
    except ValueError as exc:
        raise ConfigError("partition", str(exc)) from None
    parts, local = {}, {}
    for c, r in zip(clients, rows):
        held = int(round(params.client_test * r.size)) if params.client_test else 0
        r = rng.permutation(r) if held else r
        parts[c] = (Xtr[r[held:]], ytr[r[held:]])
        if held:
            local[c] = (Xtr[r[:held]], ytr[r[:held]])
    return LabelledSplit(parts, test, classes, local or None)
