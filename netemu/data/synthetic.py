"""Synthetic linear data: y = X w* + noise, a different sample count per client.

`labels = "binary"` turns it into a classification task: y = 1[xᵀw* + noise > 0]
(for the logistic objective of the peer-to-peer family).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from netemu.config import require
from netemu.data.base import client_generators
from netemu.engine.rng import Streams

__all__ = ["DrawnParts", "LinearData", "LinearTask", "make_linear"]


@dataclass(frozen=True)
class LinearData:
    dim: int = 10
    samples_min: int = 20
    samples_max: int = 80
    noise: float = 0.1
    test_samples: int = 1000
    labels: str = "real"  # "real" (regression) or "binary" (classification)
    #: False: a client's samples are drawn again from its own stream whenever they are used, not
    #: kept (the same values; at a million clients the kept float64 data alone is ~4 GiB)
    in_memory: bool = True

    def __post_init__(self) -> None:
        require(self.labels in ("real", "binary"), "labels", '"real" or "binary"')
        require(self.dim >= 1, "dim", ">= 1")
        require(1 <= self.samples_min <= self.samples_max, "samples_min", "between 1 and samples_max")
        require(self.noise >= 0, "noise", ">= 0")
        require(self.test_samples >= 1, "test_samples", ">= 1")


@dataclass(frozen=True)
class LinearTask:
    w_star: np.ndarray
    parts: Mapping[str, tuple[np.ndarray, np.ndarray]]  # client -> (X, y): a dict, or `DrawnParts`
    test: tuple[np.ndarray, np.ndarray]


class DrawnParts(Mapping[str, tuple[np.ndarray, np.ndarray]]):
    """Client -> (X, y), drawn from the client's own stream at each access instead of kept: the
    values a dict of kept parts holds, for the memory of one sample count per client."""

    def __init__(self, clients: Sequence[str], sizes: np.ndarray, streams: Streams,
                 draw: Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]]) -> None:
        self._index = {c: i for i, c in enumerate(clients)}
        self._sizes, self._streams, self._draw = sizes, streams, draw

    def __getitem__(self, client: str) -> tuple[np.ndarray, np.ndarray]:
        self._index[client]  # a KeyError for a client without data
        return self._draw(self._streams.generator(f"data/{client}"))

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def size(self, client: str) -> int:
        """The client's number of samples, without drawing them."""
        return int(self._sizes[self._index[client]])


def make_linear(params: LinearData, clients: Sequence[str], streams: Streams) -> LinearTask:
    """Each client's data comes from its own stream, so adding a client changes nobody else's."""
    truth = streams.generator("data/truth")
    w_star = truth.standard_normal(params.dim)

    def sample(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        X = rng.standard_normal((n, params.dim))
        y = X @ w_star + params.noise * rng.standard_normal(n)
        return X, ((y > 0).astype(float) if params.labels == "binary" else y)

    def count(rng: np.random.Generator) -> int:
        return int(rng.integers(params.samples_min, params.samples_max + 1))

    test = sample(streams.generator("data/test"), params.test_samples)
    if not params.in_memory:
        sizes = np.fromiter(map(count, client_generators(streams, clients)), dtype=np.int32, count=len(clients))
        return LinearTask(w_star, DrawnParts(clients, sizes, streams, lambda rng: sample(rng, count(rng))), test)
    parts = {}
    for c, rng in zip(clients, client_generators(streams, clients)):
        parts[c] = sample(rng, count(rng))
    return LinearTask(w_star, parts, test)
