"""Heterogeneity models of a client population: speed distributions, participation that
depends on a client's data, and partial work ("completeness").

A speed model turns one keyed uniform per node (stream ``speeds``, coordinate the node's
name) into the node's speed, drawn once per run: a pure function of (run seed, node), so
every algorithm of a run meets the same population (common random numbers) and adding a
client does not reshuffle the others' speeds.  The models:

- ``pareto``: the slowdown X (time per work unit relative to the fastest client) is
  Pareto I with shape `alpha` and minimum 1, X = (1 - U)^(-1/alpha); speed = `speed` / X.
  Plato simulates clients' speeds by Pareto-distributed per-client delays (TL-System/plato
  issue #195) — heavy-tailed stragglers, most clients near the fastest.
- ``zipf``: slowdown level k in 1..`levels` with P(k) ∝ k^(-s); speed = `speed` / k — the
  Zipf population of Plato's client-speed simulation (TL-System/plato pull request #145,
  Zipf and Normal distributions): many fast clients, a long tail of slower ones.
- ``lognormal``: speed = `median` × exp(`sigma` z), z standard normal (FedScale draws
  compute speeds log-normally, SymbioticLab/FedScale pull request #188).
- ``empirical``: one of the given speeds (`samples` inline or a `file`, one per line),
  each with equal probability: speeds measured on a device population.

Participation by data size (`participation_by_size`) follows FLGo's availability modes
"MDF" (more data first) and "LDF" (less data first) (Wang et al., FLGo, 2023;
flgo/simulator/default_simulator.py), simplified to one linear map of a client's sample
count from [fewest, most] to [`low`, `high`] (low > high is "less data first").

Participation by label (`participation_by_label`) follows FLGo's availability mode "YMF"
(y-max first; WwZzz/easyFL, flgo/simulator/default_simulator.py,
`y_max_first_client_availability`, after Gu et al., "Fast Federated Learning in the Presence
of Arbitrary Device Unavailability", NeurIPS 2021): client i is available with the static
probability p_i = beta · min(labels of i) / max(1, C − 1) + (1 − beta), C the number of
classes — clients that hold only large labels are the most available.  Here the client's
score s_i = min(labels of i) / max(1, C − 1) in [0, 1] maps linearly to [`low`, `high`]
(FLGo's YMF-beta is low = 1 − beta, high = 1); with `label = K` the score is instead the
client's share of label K among its training samples.

Completeness (`Completeness`) is FLGo's "completeness" of local work: a client finishes a
fraction of its local steps in a round, uniform in [`low`, `high`] (FLGo's PDU and ADU modes
draw numbers of local steps, after FedProx, Li et al. 2020, and FedNova, Wang et al. 2020).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from netemu.engine.net.impairments import read_numbers

__all__ = ["SPEED_MODELS", "Completeness", "EmpiricalSpeed", "LognormalSpeed", "ParetoSpeed", "ZipfSpeed",
           "participation_by_label", "participation_by_size", "read_speeds", "speed_model"]

_TWO_POW_M53 = 2.0**-53  # the smallest positive keyed uniform: keeps inverse CDFs finite
_STD_NORMAL = NormalDist()
MAX_LEVELS = 1_000_000
MAX_SIGMA = 10.0  # as [nodes] slowdown_sigma: exp(10 z) stays finite for every 53-bit uniform


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class ParetoSpeed:
    """speed / X, X ~ Pareto I(alpha, 1): P(speed' <= y·speed) = y^alpha for y in (0, 1]."""

    alpha: float
    speed: float = 1.0

    def __post_init__(self) -> None:
        if not (_finite(self.alpha) and self.alpha >= 0.1):
            raise ValueError(f"alpha must be >= 0.1 (smaller shapes draw speeds below 1e-160), got {self.alpha}")
        if not (_finite(self.speed) and self.speed > 0):
            raise ValueError(f"speed (the fastest speed) must be > 0 work units per second, got {self.speed}")

    def draw(self, u: float) -> float:
        return self.speed * (1.0 - u) ** (1.0 / self.alpha)  # = speed / (1-u)^(-1/alpha)


@dataclass(frozen=True)
class ZipfSpeed:
    """speed / k, k in 1..levels with P(k) ∝ k^(-s)."""

    s: float = 1.0
    levels: int = 10
    speed: float = 1.0

    def __post_init__(self) -> None:
        if not (_finite(self.s) and 0 <= self.s <= 100):
            raise ValueError(f"s must be in [0, 100], got {self.s}")
        if not (isinstance(self.levels, int) and not isinstance(self.levels, bool) and 1 <= self.levels <= MAX_LEVELS):
            raise ValueError(f"levels must be an integer in 1 .. {MAX_LEVELS:,}, got {self.levels}")
        if not (_finite(self.speed) and self.speed > 0):
            raise ValueError(f"speed (the fastest speed) must be > 0 work units per second, got {self.speed}")
        weights = [k ** -float(self.s) for k in range(1, self.levels + 1)]
        total, acc, cdf = math.fsum(weights), 0.0, []
        for w in weights:
            acc += w
            cdf.append(acc / total)
        object.__setattr__(self, "_cdf", cdf)

    def level(self, u: float) -> int:
        cdf = self._cdf  # type: ignore[attr-defined]
        return min(bisect.bisect_right(cdf, u), self.levels - 1) + 1

    def draw(self, u: float) -> float:
        return self.speed / self.level(u)


@dataclass(frozen=True)
class LognormalSpeed:
    """median × exp(sigma z), z = Φ⁻¹(U)."""

    median: float = 1.0
    sigma: float = 0.5

    def __post_init__(self) -> None:
        if not (_finite(self.median) and self.median > 0):
            raise ValueError(f"median must be > 0 work units per second, got {self.median}")
        if not (_finite(self.sigma) and 0 <= self.sigma <= MAX_SIGMA):
            raise ValueError(f"sigma must be in [0, {MAX_SIGMA:g}], got {self.sigma}")

    def draw(self, u: float) -> float:
        return self.median * math.exp(self.sigma * _STD_NORMAL.inv_cdf(u or _TWO_POW_M53))


@dataclass(frozen=True)
class EmpiricalSpeed:
    """One of `samples`, each with probability 1/len(samples)."""

    samples: tuple[float, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples", tuple(float(x) for x in self.samples))
        if not self.samples:
            raise ValueError("an empirical speed model needs at least one speed")
        bad = next((x for x in self.samples if not (math.isfinite(x) and x > 0)), None)
        if bad is not None:
            raise ValueError(f"speeds must be finite and > 0 work units per second, got {bad}")

    def draw(self, u: float) -> float:
        n = len(self.samples)
        return self.samples[min(int(u * n), n - 1)]


SPEED_MODELS: dict[str, type] = {"pareto": ParetoSpeed, "zipf": ZipfSpeed, "lognormal": LognormalSpeed, "empirical": EmpiricalSpeed}


def read_speeds(path: str | Path) -> tuple[float, ...]:
    """The speeds of a file: one per line (blank lines and `#` comments ignored)."""
    return tuple(read_numbers(path, "a speed in work units per second"))


def speed_model(table: dict, resolve: Any = None) -> Any:
    """The speed model a `{model = ..., <params>}` table describes (`resolve(file)`: the path
    of an empirical model's file).  ValueError or TypeError for bad parameters."""
    params = {k: v for k, v in table.items() if k != "model"}
    cls = SPEED_MODELS[table["model"]]
    if cls is EmpiricalSpeed:
        if "file" in params:
            return EmpiricalSpeed(read_speeds(resolve(params["file"]) if resolve else params["file"]))
        return EmpiricalSpeed(tuple(params["samples"]))
    return cls(**params)


@dataclass(frozen=True)
class Completeness:
    """The fraction of its local work a client completes in a round: uniform in [low, high]
    (low = high: always that fraction, nothing drawn)."""

    low: float = 1.0
    high: float = 1.0

    def __post_init__(self) -> None:
        if not (_finite(self.low) and _finite(self.high) and 0 < self.low <= self.high <= 1):
            raise ValueError(f"completeness needs 0 < low <= high <= 1, got low = {self.low}, high = {self.high}")

    @property
    def drawn(self) -> bool:
        return self.low < self.high

    def fraction(self, u: float) -> float:
        return self.low + (self.high - self.low) * u


def participation_by_size(samples: dict[str, int], low: float, high: float) -> dict[str, float]:
    """Participation probability of each client from its sample count: linear from `low`
    (fewest samples) to `high` (most); every client `high` when all have as many."""
    if not samples:
        return {}
    lo, hi = min(samples.values()), max(samples.values())
    if hi == lo:
        return dict.fromkeys(samples, float(high))
    return {name: float(low + (high - low) * (n - lo) / (hi - lo)) for name, n in samples.items()}


def participation_by_label(labels: dict[str, Any], classes: int, low: float, high: float,
                           label: int | None = None) -> dict[str, float]:
    """Participation probability of each client from its training labels (integers 0 ..
    classes − 1): low + (high − low) · s, s the client's share of `label` among its samples,
    or (no `label`, FLGo's YMF) its smallest label over max(1, classes − 1).  A client
    without samples scores 0."""
    out = {}
    for name, y in labels.items():
        y = np.asarray(y)
        if y.size == 0:
            s = 0.0
        elif label is None:
            s = float(y.min()) / max(1, classes - 1)
        else:
            s = float(np.count_nonzero(y == label)) / y.size
        out[name] = float(low + (high - low) * s)
    return out
