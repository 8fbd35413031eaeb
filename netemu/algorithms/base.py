"""What an algorithm family registers: its parameters and how it populates a World."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netemu.world import World

__all__ = ["AlgorithmSpec"]


@dataclass(frozen=True)
class AlgorithmSpec:
    """`params` is a frozen dataclass checking itself in `__post_init__`;
    `build(world, params, data, rounds)` adds the actors to `world`;
    `datasets` lists the `data.kind` values it can learn; `roles` the node roles
    its topology must have; `defaults` overrides parameter defaults, so that one
    params class serves several named variants."""

    name: str
    params: type
    build: Callable[[World, Any, Any, int], None]
    datasets: tuple[str, ...]
    roles: tuple[str, ...]
    doc: str = ""
    defaults: dict = field(default_factory=dict)

    def make_params(self, values: dict) -> Any:
        return self.params(**{**self.defaults, **values})
