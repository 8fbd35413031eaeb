"""Synthetic linear data: y = X w* + noise, a different sample count per client.

`labels = "binary"` turns it into a classification task: y = 1[xᵀw* + noise > 0]
(for the logistic objective of the peer-to-peer family).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from netemu.config import require
from netemu.data.base import client_generators
from netemu.engine.rng import Streams

__all__ = ["LinearData", "LinearTask", "make_linear"]


@dataclass(frozen=True)
class LinearData:
    dim: int = 10
    samples_min: int = 20
    samples_max: int = 80
    noise: float = 0.1
    test_samples: int = 1000
    labels: str = "real"  # "real" (regression) or "binary" (classification)

    def __post_init__(self) -> None:
        require(self.labels in ("real", "binary"), "labels", '"real" or "binary"')
        require(self.dim >= 1, "dim", ">= 1")
        require(1 <= self.samples_min <= self.samples_max, "samples_min", "between 1 and samples_max")
        require(self.noise >= 0, "noise", ">= 0")
        require(self.test_samples >= 1, "test_samples", ">= 1")


@dataclass(frozen=True)
class LinearTask:
    w_star: np.ndarray
    parts: dict[str, tuple[np.ndarray, np.ndarray]]
    test: tuple[np.ndarray, np.ndarray]


def make_linear(params: LinearData, clients: Sequence[str], streams: Streams) -> LinearTask:
    """Each client's data comes from its own stream, so adding a client changes nobody else's."""
    truth = streams.generator("data/truth")
    w_star = truth.standard_normal(params.dim)

    def sample(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        X = rng.standard_normal((n, params.dim))
        y = X @ w_star + params.noise * rng.standard_normal(n)
        return X, ((y > 0).astype(float) if params.labels == "binary" else y)

    parts = {}
    for c, rng in zip(clients, client_generators(streams, clients)):
        parts[c] = sample(rng, int(rng.integers(params.samples_min, params.samples_max + 1)))
    return LinearTask(w_star, parts, sample(streams.generator("data/test"), params.test_samples))
