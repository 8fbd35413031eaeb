"""A delivered message, as the network hands it to its destination's receiver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Message"]


@dataclass(slots=True)
class Message:
    """A delivered message, decoded from its envelope."""

    id: int
    src: str
    dst: str
    kind: str
    round: int
    payload: Any
    sent_at: float
    delivered_at: float
    nbytes: int
