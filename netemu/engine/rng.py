"""Named, independent random streams from one root seed (common random numbers).

Two kinds of randomness:

* `Streams.generator(name)` — a `numpy.random.Generator` for a long-lived consumer
  (a data source, a node's initial state), seeded from `SeedSequence(root,
  spawn_key=words(name))`.  Adding a stream never changes another one.
  `Streams.generators(names)` gives the same Generators for many names (one per
  client), their seeds derived for all names at once (`seed_states`).
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
import struct
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from statistics import NormalDist

import numpy as np
from numpy.random.bit_generator import ISpawnableSeedSequence
from numpy.typing import NDArray

__all__ = ["KeyedDraws", "Streams", "name_words", "seed_states"]

_STD_NORMAL = NormalDist()
_TWO_POW_M53 = 2.0**-53
_U64 = struct.Struct("<Q").unpack  # a digest as one little-endian word: a third cheaper than int.from_bytes


def name_words(name: str, n: int = 4) -> tuple[int, ...]:
    """Stable 32-bit words derived from a stream name (for `SeedSequence.spawn_key`)."""
    # the digest's 4-byte groups as little-endian unsigned integers, in one call (a quarter of the cost
    # of one int.from_bytes per word: a client's data stream is named at the world's build)
    return struct.unpack(f"<{n}I", hashlib.blake2b(name.encode(), digest_size=4 * n).digest())


# numpy's SeedSequence (numpy/random/bit_generator.pyx, after M. E. O'Neill's seed_seq):
# its hash constants, all 32-bit arithmetic
_POOL = 4
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R, _SHIFT = 0xCA01F9DD, 0x4973F715, 16
_MASK32 = 0xFFFFFFFF
_CHUNK = 4096  # names whose seeds `Streams.generators` derives at once


def _seed_words(seed: int) -> list[int]:
    """The 32-bit words SeedSequence makes of an integer entropy (little end first; 0 is one word)."""
    words = [seed & _MASK32]
    seed >>= 32
    while seed:
        words.append(seed & _MASK32)
        seed >>= 32
    return words


def seed_states(seed: int, keys: Sequence[Sequence[int]]) -> np.ndarray:
    """`SeedSequence(seed, spawn_key=k).generate_state(4, np.uint64)` for every spawn key
    `k` (each of the same length, of 32-bit words), as one (len(keys), 4) uint64 array:
    the same values, computed for all keys at once in array operations rather than one
    SeedSequence each (~10 µs apiece: a second per 100,000 clients).  The hash constants
    evolve the same way for every key, so each step of numpy's loops is one operation
    over a column.  tests/test_rng.py checks it against SeedSequence itself."""
    words = np.asarray(keys, dtype=np.uint64)
    if words.ndim != 2 or (words.size and int(words.max()) > _MASK32):
        raise ValueError("seed_states: spawn keys must be equal-length sequences of 32-bit words")
    run = _seed_words(int(seed))
    if words.shape[1] and len(run) < _POOL:  # numpy pads the run entropy of a spawned sequence to the pool
        run += [0] * (_POOL - len(run))
    n = words.shape[0]
    entropy: list[NDArray[np.uint32]] = [np.full(n, w, dtype=np.uint32) for w in run]
    entropy += [words[:, j].astype(np.uint32) for j in range(words.shape[1])]
    with np.errstate(over="ignore"):  # uint32 arithmetic wraps, as in numpy's C code
        const = _INIT_A

        def hashmix(value: NDArray[np.uint32]) -> NDArray[np.uint32]:
            nonlocal const
            value = value ^ np.uint32(const)
            const = (const * _MULT_A) & _MASK32
            value = value * np.uint32(const)
            return value ^ (value >> np.uint32(_SHIFT))

        def mix(x: NDArray[np.uint32], y: NDArray[np.uint32]) -> NDArray[np.uint32]:
            r = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y
            return r ^ (r >> np.uint32(_SHIFT))

        zero = np.zeros(n, dtype=np.uint32)
        pool = [hashmix(entropy[i] if i < len(entropy) else zero) for i in range(_POOL)]
        for src in range(_POOL):
            for dst in range(_POOL):
                if src != dst:
                    pool[dst] = mix(pool[dst], hashmix(pool[src]))
        for src in range(_POOL, len(entropy)):
            for dst in range(_POOL):
                pool[dst] = mix(pool[dst], hashmix(entropy[src]))
        out = np.empty((n, 8), dtype="<u4")
        const = _INIT_B
        for i in range(8):  # generate_state(4, uint64): 8 words, cycling through the pool
            value = pool[i % _POOL] ^ np.uint32(const)
            const = (const * _MULT_B) & _MASK32
            value = value * np.uint32(const)
            out[:, i] = value ^ (value >> np.uint32(_SHIFT))
    return out.view("<u8").astype(np.uint64)


class _Derived(ISpawnableSeedSequence):
    """The SeedSequence(seed, spawn_key=key) of one stream, its first state already
    derived (`seed_states`): a bit generator seeded from it gets that state; anything else
    asked of it (spawn, other states, its entropy) goes to the SeedSequence itself."""

    __slots__ = ("_key", "_seed", "_seq", "_state")

    def __init__(self, seed: int, key: tuple[int, ...], state: np.ndarray) -> None:
        self._seed, self._key, self._state = seed, key, state
        self._seq: np.random.SeedSequence | None = None

    def _real(self) -> np.random.SeedSequence:
        if self._seq is None:
            self._seq = np.random.SeedSequence(self._seed, spawn_key=self._key)
        return self._seq

    def generate_state(self, n_words: int, dtype=np.uint32) -> np.ndarray:
        if n_words == 4 and (dtype is np.uint64 or np.dtype(dtype) == np.uint64):  # `is`: what PCG64 passes, without a dtype
            return self._state.copy()
        return self._real().generate_state(n_words, dtype)

    def spawn(self, n_children: int) -> list[np.random.SeedSequence]:  # type: ignore[override]  # numpy's stub says list[Self]; the children are SeedSequences
        return self._real().spawn(n_children)

    def __getattr__(self, name: str):  # entropy, spawn_key, pool, n_children_spawned, ...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._real(), name)

    def __reduce__(self):  # pickled as what it stands for
        return (_sequence, (self._seed, self._key))


def _sequence(seed: int, key: tuple[int, ...]) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed, spawn_key=key)


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

    def generators(self, names: Iterable[str]) -> Iterator[np.random.Generator]:
        """`generator(name)` for each name in turn — the same streams (state, draws) —
        with the seeds of a few thousand names derived at once (`seed_states`): about a
        third of the cost each (3.5 rather than 13 µs), for one stream per client."""
        it = iter(names)
        while chunk := list(islice(it, _CHUNK)):
            keys = [name_words(name) for name in chunk]
            for key, state in zip(keys, seed_states(self.seed, keys)):
                yield np.random.Generator(np.random.PCG64(_Derived(self.seed, key, state)))

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
        return (_U64(h.digest())[0] >> 11) * _TWO_POW_M53

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
