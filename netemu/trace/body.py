"""The body of a trace: how fates are written as entries and read back (docs/formats.md).

Version 3 (written now) keeps an entry small: every name (node, algorithm label) is
written once, as a name entry, and referred to by its number afterwards; the algorithm
and Monte Carlo run are a section marker written when they change, not a part of every
entry; the key kind and the value when it is a choice (drop reason, participation) are
one small-integer code.  Numbers stay what was drawn: delays and slowdown factors as
msgpack float64 (bit-exact), round and index as msgpack integers (1 byte below 128).

    [0|1|2, src, dst, round, index, delay]   msg key: delivered | lost | expired
    [8|9, src, dst, round, index, delay]      msg key: corrupt | duplicated (netem's corrupt and duplicate)
    [3|4, node, round]                        participation key: false | true
    [5, node, round, index, factor]           compute key
    [10, node, round, fraction]               completeness key: the fraction of its local work done
    [11..16|17, src, dst, round, index, at]   ns3 key (engine = "ns3", netemu.ns3): delivered | dropped: timeout |
                                              TCP reset | loss | queue | outage | crash (an end crashed); `at` is the
                                              virtual time of the outcome
    [6, name]                                 the next name number stands for `name`
    [7, run, algorithm]                       the fates below are this algorithm's in this run
    ["end", entries, complete, digest]        end marker (as in version 2; `entries` counts all above)

Version 2 (read, and written on request for older readers) repeats everything:
``["fate", algorithm, run, [kind, names..., round, index], value]``.

`Encoder` turns (key, value) into a version-3 entry; `Decoder3` and `Decoder2` check
one body object each and return the fate it holds, or say what is wrong with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import msgpack

__all__ = ["NAME", "SECTION", "Decoder2", "Decoder3", "Encoder", "Problem"]

DELIVERED, LOST, EXPIRED, NOT_PARTICIPATING, PARTICIPATING, COMPUTE, NAME, SECTION, CORRUPT, DUPLICATE, COMPLETENESS = range(11)
NS3_DELIVERED, NS3_TIMEOUT, NS3_RESET, NS3_LOSS, NS3_QUEUE, NS3_OUTAGE, NS3_CRASH = range(11, 18)
_NS3_REASON_OF_CODE: dict[int, str | None] = {NS3_DELIVERED: None, NS3_TIMEOUT: "timeout", NS3_RESET: "reset", NS3_LOSS: "loss",
                                              NS3_QUEUE: "queue", NS3_OUTAGE: "outage", NS3_CRASH: "crash"}
_NS3_REASON_CODE = {reason: code for code, reason in _NS3_REASON_OF_CODE.items()}
REASONS: tuple[str | None, ...] = (None, "loss", "expired")  # indexed by the msg codes 0, 1, 2
_REASON_OF_CODE: dict[int, str | None] = {DELIVERED: None, LOST: "loss", EXPIRED: "expired", CORRUPT: "corrupt", DUPLICATE: "duplicate"}
_REASON_CODE = {reason: code for code, reason in _REASON_OF_CODE.items()}
_KIND_OF_CODE = ("msg", "msg", "msg", "participation", "participation", "compute", "name", "section", "msg", "msg", "completeness",
                 "ns3", "ns3", "ns3", "ns3", "ns3", "ns3", "ns3")
_LEN_OF_CODE = (6, 6, 6, 3, 3, 5, 2, 3, 6, 6, 4, 6, 6, 6, 6, 6, 6, 6)  # items of an entry, by code
_LAST_CODE = NS3_CRASH
MAX_ITEMS = 6  # the longest entry: the body's unpacker refuses longer arrays
_PARTICIPATION_CODES = (b"\x93" + msgpack.packb(NOT_PARTICIPATING), b"\x93" + msgpack.packb(PARTICIPATING))  # a 3-array, its code


class Encoder:
    """Version-3 entries for (key, value) pairs, writing each name's entry on its first use."""

    def __init__(self, write_entry: Callable[[list], None]) -> None:
        self._write_entry = write_entry
        self._ids: dict[Hashable, int] = {}
        self._heads: tuple[dict[Hashable, bytes], dict[Hashable, bytes]] = ({}, {})  # see `participations`

    def name(self, name: Hashable) -> int:
        """The number of `name`, written as a name entry the first time it is asked for."""
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self._ids)
            self._write_entry([NAME, name])
        return i

    def section(self, algorithm: str, run: int) -> list:
        return [SECTION, run, self.name(algorithm)]

    def participations(self, names: Sequence[Hashable], round: int, values: Sequence[bool], append: Callable[[bytes], None]) -> None:
        """The packed entries of participation fates (name, round) -> value, in order, passed
        to `append`: the bytes msgpack packs `entry`'s lists into (an array header, the code,
        the name's number, the round), from each name's packed head, made once.  A new name's
        entry is written (`write_entry`) before its first use, as `entry` does."""
        tail, heads = msgpack.packb(round), self._heads  # heads[value][name]: the entry up to its round
        try:
            append(tail.join([heads[value][name] for name, value in zip(names, values)]) + tail if names else b"")
        except KeyError:  # a name not seen before: one entry at a time
            for name, value in zip(names, values):
                head = heads[value].get(name)
                if head is None:
                    number = msgpack.packb(self.name(name))
                    heads[False][name], heads[True][name] = _PARTICIPATION_CODES[False] + number, _PARTICIPATION_CODES[True] + number
                    head = heads[value][name]
                append(head + tail)

    def entry(self, key: tuple, value: Any) -> list:
        """The entry of one fate; a key or value the format has no code for is a ValueError."""
        ids, name = self._ids, self.name
        kind = key[0]
        if kind == "msg":
            _, src, dst, round, index = key
            reason, delay = value
            code = _REASON_CODE.get(reason)
            if code is None:
                raise ValueError(f"a trace records a message's fate as delivered, 'loss', 'expired', 'corrupt' or 'duplicate'; {key} drew {value!r}")
            s = ids.get(src)
            d = ids.get(dst)
            return [code, name(src) if s is None else s, name(dst) if d is None else d, round, index, delay]
        if kind == "ns3":
            _, src, dst, round, index = key
            reason, at = value
            code = _NS3_REASON_CODE.get(reason)
            if code is None:
                raise ValueError(f"a trace records an ns-3 message's outcome as delivered, 'timeout', 'reset', 'loss', 'queue', "
                                 f"'outage' or 'crash'; {key} drew {value!r}")
            return [code, name(src), name(dst), round, index, at]
        if kind == "participation":
            n = ids.get(key[1])
            return [PARTICIPATING if value else NOT_PARTICIPATING, name(key[1]) if n is None else n, key[2]]
        if kind == "compute":
            n = ids.get(key[1])
            return [COMPUTE, name(key[1]) if n is None else n, key[2], key[3], value]
        if kind == "completeness":
            n = ids.get(key[1])
            return [COMPLETENESS, name(key[1]) if n is None else n, key[2], value]
        raise ValueError(f"a trace records msg, participation, compute, completeness and ns3 fates; {str(key)[:60]} is none of them")


# ------------------------------------------------------------------ reading


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _delay_ok(x: Any) -> bool:
    return _is_number(x) and math.isfinite(x) and x >= 0


def _factor_ok(x: Any) -> bool:
    return _is_number(x) and math.isfinite(x) and x > 0


def _fraction_ok(x: Any) -> bool:
    return _is_number(x) and 0 < x <= 1


class Decoder3:
    """Reads version-3 body objects: `fate(obj)` returns (algorithm, run, key, value) for a
    fate entry, None for a name entry or section marker, and raises `Problem` for anything
    else.  The end marker is recognized by `is_end` before `fate` is asked."""

    def __init__(self, algorithms: set, n_runs: int) -> None:
        self.algorithms, self.n_runs = algorithms, n_runs
        self.names: list[str] = []
        self.section: tuple[str, int] | None = None

    @staticmethod
    def is_end(obj: Any) -> bool:
        return type(obj) is list and len(obj) in (3, 4) and obj[0] == "end"

    @staticmethod
    def end_fields(obj: list) -> tuple[Any, Any, Any]:
        """(entries counted, complete, digest or None) of an end marker."""
        return obj[1], obj[2], obj[3] if len(obj) == 4 else None

    def _name(self, i: Any) -> str:
        names = self.names
        if _is_int(i) and 0 <= i < len(names):
            return names[i]
        raise Problem(f"name number {str(i)[:20]} is not one of the {len(names)} names written before it")

    def fate(self, obj: Any) -> tuple[str, int, tuple, Any] | None:
        if type(obj) is not list or not obj:
            raise Problem(f"{str(obj)[:80]} is not an entry (an array starting with a code 0 to {_LAST_CODE})")
        code = obj[0]
        if not _is_int(code) or not 0 <= code <= _LAST_CODE:
            raise Problem(f"code {repr(code)[:20]} is not a fate (0 to 5, 8 to 16), name (6) or section (7) code: {str(obj)[:80]}")
        if len(obj) != _LEN_OF_CODE[code]:
            raise Problem(f"a {_KIND_OF_CODE[code]} entry has {_LEN_OF_CODE[code]} items, not {len(obj)}: {str(obj)[:80]}")
        if code == NAME:
            if not isinstance(obj[1], str):
                raise Problem(f"the name {str(obj[1])[:60]} is not a string")
            self.names.append(obj[1])
            return None
        if code == SECTION:
            _, run, alg = obj
            label = self._name(alg)
            if label not in self.algorithms:
                raise Problem(f"algorithm {label[:40]!r} is not in the header")
            if not _is_int(run) or not 0 <= run < self.n_runs:
                raise Problem(f"run {str(run)[:20]} is not one of the header's {self.n_runs}")
            self.section = (label, run)
            return None
        if self.section is None:
            raise Problem("a fate before any section marker (which algorithm and run it belongs to)")
        if code in _REASON_OF_CODE:
            _, src, dst, round, index, delay = obj
            key: tuple = ("msg", self._name(src), self._name(dst), round, index)
            if not _delay_ok(delay):
                raise Problem(f"the delay {str(delay)[:30]} of key {str(key)[:60]} is not a number >= 0")
            value: Any = (_REASON_OF_CODE[code], delay)
        elif code in _NS3_REASON_OF_CODE:
            _, src, dst, round, index, at = obj
            key = ("ns3", self._name(src), self._name(dst), round, index)
            if not _delay_ok(at):
                raise Problem(f"the time {str(at)[:30]} of key {str(key)[:60]} is not a number >= 0")
            value = (_NS3_REASON_OF_CODE[code], at)
        elif code == COMPUTE:
            _, node, round, index, value = obj
            key = ("compute", self._name(node), round, index)
            if not _factor_ok(value):
                raise Problem(f"the value {str(value)[:30]} of key {str(key)[:60]} is not a slowdown factor > 0")
        elif code == COMPLETENESS:
            _, node, round, value = obj
            index = 0
            key = ("completeness", self._name(node), round)
            if not _fraction_ok(value):
                raise Problem(f"the value {str(value)[:30]} of key {str(key)[:60]} is not a work fraction in (0, 1]")
        else:
            round, index = obj[2], 0
            key = ("participation", self._name(obj[1]), round)
            value = code == PARTICIPATING
        if not (_is_int(round) and _is_int(index)):
            raise Problem(f"key {str(key)[:60]}: round and index are not integers")
        return (*self.section, key, value)


class Decoder2:
    """Reads version-2 body objects: ``["fate", algorithm, run, key, value]`` and
    ``["end", entries, complete, digest]``; the same interface as `Decoder3`."""

    def __init__(self, algorithms: set, n_runs: int) -> None:
        self.algorithms, self.n_runs = algorithms, n_runs

    @staticmethod
    def is_end(obj: Any) -> bool:
        return isinstance(obj, list) and len(obj) in (3, 4) and obj[0] == "end"

    end_fields = staticmethod(Decoder3.end_fields)

    def fate(self, obj: Any) -> tuple[str, int, tuple, Any]:
        if not (isinstance(obj, list) and len(obj) == 5 and obj[0] == "fate"):
            raise Problem(f"{str(obj)[:80]} is not a fate entry [\"fate\", algorithm, run, key, value]")
        problem = _entry2_problem(obj, self.algorithms, self.n_runs)
        if problem:
            raise Problem(problem)
        _, alg, run, key, value = obj
        return alg, run, tuple(key), tuple(value) if key[0] in ("msg", "ns3") else value


class Problem(Exception):
    """What is wrong with one body object (the reader adds the file and the entry's number)."""


def _entry2_problem(entry: list, algorithms: set, n_runs: int) -> str | None:
    """What is wrong with a version-2 fate entry ["fate", algorithm, run, key, value], or None."""
    _, alg, run, key, value = entry
    if alg not in algorithms:
        return f"algorithm {repr(alg)[:40]} is not in the header"
    if not _is_int(run) or not 0 <= run < n_runs:
        return f"run {repr(run)[:20]} is not one of the header's {n_runs}"
    if not isinstance(key, list) or not key:
        return f"key {str(key)[:60]} is not a list"
    kind = key[0]
    if kind == "ns3":
        ok = len(key) == 5 and isinstance(key[1], str) and isinstance(key[2], str) and _is_int(key[3]) and _is_int(key[4])
        good_value = isinstance(value, list) and len(value) == 2 and value[0] in _NS3_REASON_CODE and _delay_ok(value[1])
        expected = '[nil, "timeout", "reset", "loss", "queue", "outage" or "crash", time >= 0]'
    elif kind == "msg":
        ok = len(key) == 5 and isinstance(key[1], str) and isinstance(key[2], str) and _is_int(key[3]) and _is_int(key[4])
        good_value = isinstance(value, list) and len(value) == 2 and value[0] in _REASON_CODE and _delay_ok(value[1])
        expected = "[nil, \"loss\", \"expired\", \"corrupt\" or \"duplicate\", delay >= 0]"
    elif kind == "participation":
        ok = len(key) == 3 and isinstance(key[1], str) and _is_int(key[2])
        good_value, expected = isinstance(value, bool), "true or false"
    elif kind == "compute":
        ok = len(key) == 4 and isinstance(key[1], str) and _is_int(key[2]) and _is_int(key[3])
        good_value = _factor_ok(value)
        expected = "a slowdown factor > 0"
    elif kind == "completeness":
        ok = len(key) == 3 and isinstance(key[1], str) and _is_int(key[2])
        good_value, expected = _fraction_ok(value), "a work fraction in (0, 1]"
    else:
        return f"key {str(key)[:60]} is not a msg, participation, compute, completeness or ns3 key"
    if not ok:
        return f"key {str(key)[:60]} does not have the shape of a {kind} key"
    if not good_value:
        return f"the value {str(value)[:60]} of key {str(key)[:60]} is not {expected}"
    return None
