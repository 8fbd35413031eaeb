"""What a data kind registers: its parameters and the generator that makes a run's data.

Built-in kinds and users' plug-ins register the same way: a `DataSpec` named by a
`netemu.data` entry point (see `netemu.plugins`).  A scenario's `[data]` table is checked
against `params` (names, types, the class's own range checks) by `netemu validate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from netemu.rng import Streams

__all__ = ["DataSpec"]


@dataclass(frozen=True)
class DataSpec:
    """`params` is a frozen dataclass checking itself in `__post_init__`;
    `make(params, clients, streams)` returns the data of one run for the named clients
    (every node that is not a server), drawing only from `streams`."""

    name: str
    params: type
    make: Callable[[Any, Sequence[str], Streams], Any]
    doc: str = ""
