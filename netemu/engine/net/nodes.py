"""A node's behaviour as a scenario sets it (`NodeBehaviour`) and its current state in a
running network (`Node`).  Used by `netemu.engine.net.network.Network`, which re-exports both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from netemu.engine.net.message import Message

__all__ = ["Node", "NodeBehaviour"]


@dataclass(frozen=True)
class NodeBehaviour:
    """How a node behaves: participation probability per round, compute speed
    (work units per second), log-normal compute-time noise (sigma of the log
    slowdown factor; 0 = deterministic), scheduled (crash, recover) times, and the
    completeness of its local work per round: a fraction uniform in [low, high]
    (netemu.engine.net.heterogeneity.Completeness; (1, 1) = all of it, nothing drawn)."""

    participation: float = 1.0
    speed: float = 1.0
    slowdown_sigma: float = 0.0
    crashes: tuple[tuple[float, float | None], ...] = ()
    completeness: tuple[float, float] = (1.0, 1.0)

    def __post_init__(self) -> None:
        if not 0 <= self.participation <= 1:
            raise ValueError(f"participation must be in [0, 1], got {self.participation}")
        if not self.speed > 0:
            raise ValueError(f"speed must be > 0, got {self.speed}")
        if self.slowdown_sigma < 0:
            raise ValueError(f"slowdown_sigma must be >= 0, got {self.slowdown_sigma}")
        low, high = self.completeness
        if not 0 < low <= high <= 1:
            raise ValueError(f"completeness must be (low, high) with 0 < low <= high <= 1, got {self.completeness}")


@dataclass(slots=True)
class Node:
    """A node's current state; scenario scripts may change `speed` and `participation`.

    `attrs` is the topology graph's own attribute dict of the node (not a copy)."""

    name: str
    attrs: dict
    participation: float = 1.0
    speed: float = 1.0
    slowdown_sigma: float = 0.0
    up: bool = True
    crashes: tuple = ()
    completeness: tuple[float, float] = (1.0, 1.0)
    receiver: Callable[[Message], bool | None] | None = field(default=None, repr=False)
    #: delivered a group of one arrival batch's messages for the nodes sharing it, as a list (a cohort's)
    batch: Callable[[list[Message]], bool | None] | None = field(default=None, repr=False)

    @property
    def role(self) -> str:
        return self.attrs.get("role", "peer")
