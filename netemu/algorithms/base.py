"""What an algorithm family registers: its parameters and how it populates a World."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netemu.world import World

__all__ = ["AlgorithmSpec"]


@dataclass(frozen=True)
class AlgorithmSpec:
    """`params` is a frozen dataclass checking itself in `__post_init__`;
    `build(world, params, data, rounds)` adds the actors to `world`;
    `datasets` lists the `data.kind` values it can learn; `roles` the node roles
    its topology must have."""

    name: str
    params: type
    build: Callable[[World, Any, Any, int], None]
    datasets: tuple[str, ...]
    roles: tuple[str, ...]
    doc: str = ""
