"""Named, independent random streams from one root seed (common random numbers).

Two kinds of randomness:

* `Streams.generator(name)` — a `numpy.random.Generator` for a long-lived consumer
  (a data source, a node's initial state), seeded from `SeedSequence(root,
  spawn_key=words(name))`.  Adding a stream never changes another one.
* `Streams.keyed(name).uniform(*coords)` — a counter-based uniform in [0, 1) that
  depends only on (root seed, stream name, coordinates): e.g. the loss draw of the
  message with index 2 in round 7 on `link/client-3->server`.  Two algorithms that
  send in the same (link, round, index) meet the same fate, and nothing one actor
  does shifts another actor's draws.  It is a keyed BLAKE2b hash (about 1 µs a
  draw, 30× cheaper than building a Generator per message).

Names are turned into integers with BLAKE2b, never with `hash()` (salted per process).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from statistics import NormalDist

import numpy as np

__all__ = ["KeyedDraws", "Streams", "name_words"]

_STD_NORMAL = NormalDist()
_TWO_POW_M53 = 2.0**-53


def name_words(name: str, n: int = 4) -> tuple[int, ...]:
    """Stable 32-bit words derived from a stream name (for `SeedSequence.spawn_key`)."""
    digest = hashlib.blake2b(name.encode(), digest_size=4 * n).digest()
    return tuple(int.from_bytes(digest[4 * i : 4 * i + 4], "little") for i in range(n))


class Streams:
    """The random streams of one run, all derived from `seed`."""

    def __init__(self, seed: int) -> None:
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)

    def generator(self, name: str) -> np.random.Generator:
        """An independent Generator for the stream `name` (e.g. ``"data/client-3"``)."""
        seq = np.random.SeedSequence(self.seed, spawn_key=name_words(name))
        return np.random.Generator(np.random.PCG64(seq))

    def keyed(self, name: str) -> KeyedDraws:
        """Counter-based draws for the stream `name`, addressed by coordinates."""
        return KeyedDraws(self.seed, name)


class KeyedDraws:
    """Uniform (and derived) draws that are pure functions of their coordinates."""

    __slots__ = ("name", "_hasher")

    def __init__(self, seed: int, name: str) -> None:
        self.name = name
        key = hashlib.blake2b(f"{seed}\x00{name}".encode(), digest_size=32).digest()
        self._hasher = hashlib.blake2b(key=key, digest_size=8)  # copied per draw: keying costs a block

    def uniform(self, *coords: object) -> float:
        """U[0, 1) with 53 random bits, a pure function of (seed, name, coords).

        The coordinates are hashed as their str() joined by 0x1f (two and three
        coordinates, the hot cases, are formatted directly: the same bytes, faster).
        """
        n = len(coords)
        if n == 3:
            text = f"{coords[0]}\x1f{coords[1]}\x1f{coords[2]}"
        elif n == 2:
            text = f"{coords[0]}\x1f{coords[1]}"
        else:
            text = "\x1f".join(map(str, coords))
        h = self._hasher.copy()
        h.update(text.encode())
        return (int.from_bytes(h.digest(), "little") >> 11) * _TWO_POW_M53

    def uniforms(self, coords: Iterable[tuple]) -> np.ndarray:
        """`uniform(*c)` for every coordinate tuple `c`, as one float64 array: the same
        values as one call each (same bytes hashed), without a Python call per draw —
        e.g. the participation draws of every client of a round; the 64-bit words are
        turned into floats in one array operation."""
        copy = self._hasher.copy
        digests: list[bytes] = []
        append = digests.append
        for c in coords:  # the text `uniform` hashes
            n = len(c)
            h = copy()
            h.update((f"{c[0]}\x1f{c[1]}" if n == 2 else f"{c[0]}\x1f{c[1]}\x1f{c[2]}" if n == 3 else "\x1f".join(map(str, c))).encode())
            append(h.digest())
        words = np.frombuffer(b"".join(digests), dtype="<u8")  # each digest, read as `uniform` reads it (little-endian)
        return (words >> np.uint64(11)).astype(np.float64) * _TWO_POW_M53

    def open_uniform(self, *coords: object) -> float:
        """U(0, 1): never exactly 0, safe for logarithms and inverse CDFs."""
        return self.uniform(*coords) or _TWO_POW_M53

    def normal(self, *coords: object) -> float:
        """Standard normal by inversion of one keyed uniform."""
        return _STD_NORMAL.inv_cdf(self.uniform(*coords) or _TWO_POW_M53)

    def exponential(self, mean: float, *coords: object) -> float:
        return -mean * math.log(self.uniform(*coords) or _TWO_POW_M53)
