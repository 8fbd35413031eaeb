"""Fate sources: where the network's random fates come from.

A fate source is called as ``fates(key, draw)`` and returns the fate of `key`: `draw_now`
(the default) draws it from the seeded streams; the trace layer records or replays it
(keys and values are documented in docs/formats.md).  A source may also take the yes/no
fates of many keys of one round at once (`ManyFates`, used through `fates_many`): the
participation draws of a round go through it as one call of arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol, TypeVar

import numpy as np

__all__ = ["Fates", "ManyFates", "draw_now", "fates_many"]

T = TypeVar("T")
Fates = Callable[[tuple, Callable[[], T]], T]


def draw_now(key: tuple, draw: Callable[[], T]) -> T:
    """The default fate source: draw from the seeded streams."""
    return draw()


class ManyFates(Protocol):
    """A fates hook that also takes many keys at once (the trace's recorder and replayer).

    ``many(kind, names, round, draw)`` returns, as one bool array, what one call
    ``fates((kind, name, round), ...)`` per name, in order, would return (and records or
    counts the same): ``draw(index)`` draws the values of ``names[index]`` (an int array)
    from the seeded streams, so a hook draws only the keys it does not already know."""

    def __call__(self, key: tuple, draw: Callable[[], T]) -> T: ...

    def many(self, kind: str, names: Sequence[str], round: int, draw: Callable[[np.ndarray], np.ndarray]) -> np.ndarray: ...


def fates_many(fates: Fates, kind: str, names: Sequence[str], round: int, draw: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The yes/no fates of keys (kind, name, round) for every name, through `fates`: drawn at
    once for `draw_now`, by its `many` for a `ManyFates` hook, else one `fates` call per key."""
    if fates is draw_now:
        return np.asarray(draw(np.arange(len(names))), dtype=bool)
    many = getattr(fates, "many", None)
    if many is not None:
        return many(kind, names, round, draw)
    return np.array([fates((kind, name, round), partial(_one, draw, i)) for i, name in enumerate(names)], dtype=bool)


def _one(draw: Callable[[np.ndarray], np.ndarray], i: int) -> bool:
    return bool(draw(np.array([i]))[0])
