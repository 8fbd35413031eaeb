"""What a data kind registers: its parameters and the generator that makes a run's data.

Built-in kinds and users' plug-ins register the same way: a `DataSpec` named by a
`netemu.data` entry point (see `netemu.plugins`).  A scenario's `[data]` table is checked
against `params` (names, types, the class's own range checks) by `netemu validate`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netemu.engine.rng import Streams

__all__ = ["DataSpec", "client_generators", "part_sizes"]


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


def part_sizes(parts: Mapping[str, Any], clients: Iterable[str]) -> list[int]:
    """Each client's number of samples in a partition `parts` (client -> (X, y), or a sized
    part): parts drawn on use (`netemu.data.synthetic.DrawnParts`) tell it without drawing."""
    size = getattr(parts, "size", None)
    if size is not None:
        return [size(c) for c in clients]
    return [len(part[1]) if isinstance(part, tuple) else len(part) for part in map(parts.__getitem__, clients)]
