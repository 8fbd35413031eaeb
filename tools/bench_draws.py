"""What one keyed draw costs, today's and the counter-based candidates', per draw and per
message fate: the measurements behind the choice of the network's keyed generator.

Today a link's fates are keyed BLAKE2b draws (`netemu.engine.rng.KeyedDraws`): one hash per
component (an uplink of the quick start draws three: Gilbert-Elliott's state and loss, the
log-normal delay), under a key derived from the link's name, made when the link first draws
and kept for the last 65,536 links (at 100,000 clients it is made again for almost every
message).  The candidates, each checked here to produce what it claims:

- Philox4x64-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011, the
  generator of `numpy.random.Philox`), keyed by the stream, the link's id in its counter:
  * one block in pure Python (four 64-bit words: every component of a message at once);
  * a batch of blocks at arbitrary counters in NumPy array operations (the 64 x 64 -> 128-bit
    products from 32-bit halves): what drawing every message of a broadcast at once would cost;
  both equal to `numpy.random.Philox` at the same key and counter (asserted before timing);
- one keyed BLAKE2b digest of 64 bytes per message (eight 64-bit words, one per component),
  the link's name in the hashed text and one key for every link: nothing made or kept per
  link, one hash per message (`_LaneDraws` below, a drop-in for the draws a link passes to
  its components);
- the floor: `numpy.random.Philox.random_raw`, a word at consecutive counters.

Fates are timed as a small world draws them (the link's key kept: up to 65,536 links) and as
one of 100,000 clients does (the key made for the message), for the quick start's uplink
(Gilbert-Elliott loss, log-normal delay: three draws) and downlink (exponential delay: one).
CPU time (time.process_time), the minimum of --reps repetitions, in µs per draw or per fate.

    python tools/bench_draws.py
    python tools/bench_draws.py --reps 5 --batch 100000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import struct
import time
from collections.abc import Callable

import numpy as np

from netemu.engine.net.impairments import Exponential, GilbertElliott, LogNormal
from netemu.engine.net.links import Link
from netemu.engine.rng import KeyedDraws, Streams

_M64 = (1 << 64) - 1
_M32 = np.uint64(0xFFFFFFFF)
_MULT = (0xD2E7470EE14C6C93, 0xCA5A826395121157)  # Philox4x64's multipliers (Random123, philox.h)
_WEYL = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)  # its key increments per round
_ROUNDS = 10


def philox_block(c0: int, c1: int, c2: int, c3: int, k0: int, k1: int) -> tuple[int, int, int, int]:
    """Philox4x64-10 of counter (c0..c3) under key (k0, k1), in Python integers (Salmon et al. 2011, §3.2:
    each round two 64 x 64 -> 128-bit products, the words permuted and xored with the round's key)."""
    m0, m1 = _MULT
    for r in range(_ROUNDS):
        p0, p1 = m0 * c0, m1 * c2
        c0, c1, c2, c3 = (p1 >> 64) ^ c1 ^ k0, p1 & _M64, (p0 >> 64) ^ c3 ^ k1, p0 & _M64
        if r < _ROUNDS - 1:
            k0, k1 = (k0 + _WEYL[0]) & _M64, (k1 + _WEYL[1]) & _M64
    return c0, c1, c2, c3


def _mulhilo(a: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 64-bit words of a x m for uint64 arrays `a`, from 32-bit halves."""
    m_hi, m_lo = np.uint64(m >> 32), np.uint64(m & 0xFFFFFFFF)
    a_hi, a_lo = a >> np.uint64(32), a & _M32
    lolo, lohi, hilo = a_lo * m_lo, a_lo * m_hi, a_hi * m_lo
    mid = (lolo >> np.uint64(32)) + (lohi & _M32) + (hilo & _M32)
    hi = a_hi * m_hi + (lohi >> np.uint64(32)) + (hilo >> np.uint64(32)) + (mid >> np.uint64(32))
    return hi, a * np.uint64(m)  # the low word: the product modulo 2^64


def philox_blocks(counters: np.ndarray, k0: int, k1: int) -> np.ndarray:
    """Philox4x64-10 of every row of `counters` ((n, 4) uint64) under one key, as an (n, 4) array."""
    c0, c1, c2, c3 = (counters[:, j].copy() for j in range(4))
    key0, key1 = k0, k1
    with np.errstate(over="ignore"):
        for r in range(_ROUNDS):
            hi0, lo0 = _mulhilo(c0, _MULT[0])
            hi1, lo1 = _mulhilo(c2, _MULT[1])
            c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(key0), lo1, hi0 ^ c3 ^ np.uint64(key1), lo0
            if r < _ROUNDS - 1:
                key0, key1 = (key0 + _WEYL[0]) & _M64, (key1 + _WEYL[1]) & _M64
    return np.stack([c0, c1, c2, c3], axis=1)


def _check_philox() -> None:
    """Both implementations equal numpy's Philox (which draws the block of counter + 1 first)."""
    rng = np.random.default_rng(7)
    key = [int(k) for k in rng.integers(0, 2**63, 2, dtype=np.uint64)]
    counters = rng.integers(1, 2**63, (5, 4), dtype=np.uint64)
    batch = philox_blocks(counters, *key)
    for row, out in zip(counters, batch):
        before = row.copy()
        before[0] -= np.uint64(1)
        ref = np.random.Philox(counter=before, key=np.array(key, dtype=np.uint64)).random_raw(4)
        assert [int(x) for x in ref] == [int(x) for x in out] == list(philox_block(*(int(x) for x in row), *key))


_LANES = {"latency": 0, "loss": 1, "state": 2, "jitter": 3, "corrupt": 4, "duplicate": 5}
_EIGHT_WORDS = struct.Struct("<8Q").unpack
_TWO_POW_M53 = 2.0**-53


class _LaneDraws(KeyedDraws):
    """The candidate: the draws of link `link` from one keyed 64-byte digest per (round, index),
    the component naming its word (other coordinates: hashed in full, as KeyedDraws does)."""

    __slots__ = ("_link", "_wide", "_round", "_index", "_words")

    def __init__(self, link: str, narrow: object, wide: object) -> None:
        self.name, self._link, self._hasher, self._wide = "link/", link, narrow, wide
        self._round: object = None
        self._index: object
        self._words: tuple[int, ...]

    def uniform(self, *coords: object) -> float:
        if len(coords) == 3:
            lane = _LANES.get(coords[2])  # type: ignore[call-overload]
            if lane is not None:
                r, i = coords[0], coords[1]
                if r != self._round or i != self._index or type(r) is not type(self._round) or type(i) is not type(self._index):
                    h = self._wide.copy()  # type: ignore[attr-defined]
                    h.update(f"{self._link}\x1f{r}\x1f{i}".encode())
                    self._words, self._round, self._index = _EIGHT_WORDS(h.digest()), r, i
                return (self._words[lane] >> 11) * _TWO_POW_M53
        h = self._hasher.copy()
        h.update("\x1f".join(map(str, (self._link, *coords))).encode())
        return (int.from_bytes(h.digest(), "little") >> 11) * _TWO_POW_M53


def best(fn: Callable[[], object], reps: int) -> float:
    """The least CPU seconds of `reps` calls of `fn`."""
    times = []
    for _ in range(reps):
        c0 = time.process_time()
        fn()
        times.append(time.process_time() - c0)
    return min(times)


def measure(n: int, batch: int, reps: int) -> dict:
    streams = Streams(1)
    names = [f"link/client-{k}->server" for k in range(n)]
    cached = streams.keyed(names[0])
    out: dict[str, float] = {}

    def per(label: str, fn: Callable[[], object], count: int) -> None:
        out[label] = round(best(fn, reps) / count * 1e6, 3)

    per("blake2b_draw_us", lambda: [cached.uniform(0, i, "latency") for i in range(n)], n)
    per("blake2b_link_key_us", lambda: [streams.keyed(name) for name in names], n)
    narrow = KeyedDraws(1, "link/")._hasher
    wide = hashlib.blake2b(key=hashlib.blake2b(b"1\x00link/", digest_size=32).digest(), digest_size=64)
    ends = [name[len("link/"):] for name in names]
    lanes = _LaneDraws(ends[0], narrow, wide)
    per("lane_draws_made_us", lambda: [_LaneDraws(end, narrow, wide) for end in ends], n)
    per("lane_draw_first_component_us", lambda: [lanes.uniform(0, i, "latency") for i in range(n)], n)
    per("lane_draw_next_component_us", lambda: [lanes.uniform(0, 0, "loss") for i in range(n)], n)
    for kind, link in (("uplink", Link(LogNormal(-1.0, 0.5), loss=GilbertElliott(0.05, 0.5))), ("downlink", Link(Exponential(0.2, 0.05)))):
        per(f"{kind}_fate_key_kept_us", lambda link=link: [link.draw_fate(cached, 0, i) for i in range(n)], n)
        per(f"{kind}_fate_key_made_us", lambda link=link: [link.draw_fate(streams.keyed(name), 0, 0) for name in names], n)
        per(f"{kind}_fate_lanes_us", lambda link=link: [link.draw_fate(_LaneDraws(end, narrow, wide), 0, 0) for end in ends], n)

    k0, k1 = 0x1234567890ABCDEF, 0x0FEDCBA987654321
    ids = [int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little") for name in names]
    per("philox_python_block_us", lambda: [philox_block(i, 0, 0, 0, k0, k1) for i in ids], n)
    counters = np.zeros((batch, 4), dtype=np.uint64)
    counters[:, 0] = np.arange(batch, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    per("philox_numpy_batch_block_us", lambda: philox_blocks(counters, k0, k1), batch)
    per("philox_numpy_batch_of_one_block_us", lambda: [philox_blocks(counters[:1], k0, k1) for _ in range(200)], 200)
    floor = np.random.Philox(1)
    per("numpy_philox_random_raw_word_us", lambda: floor.random_raw(4 * batch), 4 * batch)
    out["uplink_draws_per_fate"] = 3
    out["python_block_vs_three_blake2b_draws"] = round(out["philox_python_block_us"] / (3 * out["blake2b_draw_us"]), 2)
    for kind in ("uplink", "downlink"):  # > 1: the lanes are faster
        out[f"{kind}_lanes_speedup_key_kept"] = round(out[f"{kind}_fate_key_kept_us"] / out[f"{kind}_fate_lanes_us"], 2)
        out[f"{kind}_lanes_speedup_key_made"] = round(out[f"{kind}_fate_key_made_us"] / out[f"{kind}_fate_lanes_us"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="draws (links) per timed loop")
    parser.add_argument("--batch", type=int, default=100_000, help="blocks per NumPy batch")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    _check_philox()
    result = measure(args.n, args.batch, max(3, args.reps))
    assert all(math.isfinite(v) for v in result.values())
    print(json.dumps({"n": args.n, "batch": args.batch, "reps": max(3, args.reps), **result}))


if __name__ == "__main__":
    main()
