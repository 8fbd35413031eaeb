"""What a data kind registers: its parameters and the generator that makes a run's data.

Built-in kinds and users' plug-ins register the same way: a `DataSpec` named by a
`netemu.data` entry point (see `netemu.plugins`).  A scenario's `[data]` table is checked
against `params` (names, types, the class's own range checks) by `netemu validate`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netemu.engine.rng import Streams

__all__ = ["DataSpec", "client_generators"]


@dataclass(frozen=True)
class DataSpec:
    """`params` is a frozen dataclass checking itself in `__post_init__`;
    `make(params, clients, streams)` returns the data of one run for the named clients
    (every node that is not a server), drawing only from `streams`."""

    name: str
    params: type
    make: Callable[[Any, Sequence[str], Streams], Any]
    doc: str = ""


def client_generators(streams: Streams, clients: Sequence[str], suffix: str = "") -> Iterator[np.random.Generator]:
    """Each client's own data stream, ``data/<client><suffix>``, in the order of `clients`
    (`Streams.generators`: the seeds of many clients derived at once)."""
    return streams.generators([f"data/{c}{suffix}" for c in clients])
