"""Record and replay every random fate the network drew.

A trace is a msgpack stream (schema in docs/formats.md):

1. header map: ``format`` = "netemu-trace", ``version`` (3), ``checksum`` =
   "blake2b-256", ``netemu`` version, ``scenario`` name, ``scenario_hash``, ``seed``,
   ``algorithms`` (labels), ``runs``: per Monte Carlo run its ``seed`` and ``topology``
   fingerprint, and ``network``: the random models the fates were drawn from
   (`network_model`);
2. the body, in draw order: one entry per fate, keyed ``("msg", src, dst, round,
   index)`` -> (drop reason or None, delay), ``("participation", node, round)`` ->
   bool, ``("compute", node, round, index)`` -> slowdown factor, written compactly
   (names once, the algorithm and run as section markers, small codes: the layout is
   in `netemu.tracebody`).  A fate is written once per Monte Carlo run: when another
   algorithm of the run draws the same key with the same value (keyed draws make this
   the rule), nothing is written; only a differing value (stateful links) is;
3. ``["end", entries, complete, digest]`` — `digest` is the BLAKE2b-256 of every byte
   before the end marker followed by msgpack ``["end", entries, complete]``; absent when
   the file was cut short.

Version 2 traces (every entry ``["fate", algorithm, run, key, value]``) are read as well.

`TraceWriter.fates(algorithm, run)` records while drawing; `Trace.fates(algorithm,
run)` replays: the algorithm's own entries first, then the run's first recorded value
of the key; keys never recorded are drawn from the seeded streams and counted as new.
Both also take the participation fates of a round as one batch (`many`, see
`netemu.net.network.ManyFates`): the same entries, bytes and values as one call per key.
`Trace.read` refuses, with a `TraceError` saying what is wrong, any file it cannot
trust: damage (checksum, shape of every entry), truncation, another format version;
it decodes with limits so that a crafted file cannot make it allocate more than a
small multiple of its own size.  `check_scenario` refuses a scenario whose random
models differ from those the trace was drawn from.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import msgpack.fallback
import networkx as nx

from netemu.errors import TraceError
import numpy as np

from netemu.net.network import Fates, fates_many
from netemu.tracebody import MAX_ITEMS, Decoder2, Decoder3, Encoder, Problem

__all__ = ["FORMAT", "VERSION", "VERSIONS", "Trace", "TraceError", "TraceWriter", "network_model", "topology_fingerprint"]

FORMAT, VERSION = "netemu-trace", 3
VERSIONS = (2, 3)  # read and written; 2 is the previous, uncompacted body
CHECKSUM = "blake2b-256"
_HEADER_MAX = 16 * 2**20  # bytes: a header (network models, runs) is kilobytes; refuse more than this
_ENTRY_MAX = 2**20  # bytes held while decoding one entry of the body (an entry is 3 to 20 bytes; 50 in version 2)
_NAME_MAX = 2**16  # characters of a node name or algorithm label in the body


def topology_fingerprint(graph: nx.DiGraph) -> str:
    """A short hash of the nodes, their roles and the links with their classes."""
    nodes = sorted((n, str(r)) for n, r in graph.nodes(data="role"))
    edges = sorted((u, v, str(c)) for u, v, c in graph.edges(data="link_class"))
    return hashlib.blake2b(msgpack.packb([nodes, edges]), digest_size=12).hexdigest()


_DETERMINISTIC_LINK_KEYS = ("bandwidth", "outages")  # not drawn, not in the trace: free to differ on replay


def network_model(table: dict) -> dict:
    """The random models of a resolved scenario table whose draws a trace records.

    Link latency, jitter and loss (per class and per-link overrides), and the nodes'
    participation and slowdown (with their groups).  Deterministic parts — bandwidth,
    outages, speeds, crashes, algorithms, rounds — are left out: a replay may change
    them (that is what a what-if replay is for).  A latency read from a file is named
    by the file's name only, so a run folder replays on another machine.
    """

    def link(t: dict) -> dict:
        out = {k: v for k, v in t.items() if k not in _DETERMINISTIC_LINK_KEYS}
        latency = out.get("latency")
        if isinstance(latency, dict) and latency.get("file"):
            out["latency"] = {**latency, "file": Path(latency["file"]).name}
        return out

    def behaviour(t: dict) -> dict:
        return {k: t[k] for k in ("name", "members", "participation", "slowdown_sigma") if k in t}

    nodes = table.get("nodes", {})
    return {
        "links": {cls: link(t) for cls, t in sorted(table.get("links", {}).items())},
        "link": [link(t) for t in table.get("link", [])],
        "nodes": {**behaviour(nodes), "group": [behaviour(g) for g in nodes.get("group", [])]},
    }


def _flatten(x: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(x, dict):
        out: dict[str, Any] = {}
        for k, v in x.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out or {prefix: {}}
    if isinstance(x, (list, tuple)) and any(isinstance(v, (dict, list, tuple)) for v in x):
        out = {}
        for i, v in enumerate(x):
            out.update(_flatten(v, f"{prefix}[{i}]"))
        return out or {prefix: []}
    return {prefix: list(x) if isinstance(x, tuple) else x}


def _same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


class TraceWriter:
    """Writes a trace: the header at once, a fate per new draw, the end marker on `close`.

    Every byte written is hashed as it goes; the end marker carries the digest.
    `version` 3 (the default) writes the compact body (`netemu.tracebody`); 2 writes the
    previous format, for a netemu that reads only that.  `entries` counts the fates written.
    """

    def __init__(self, file: BinaryIO, header: dict, version: int = VERSION) -> None:
        if version not in VERSIONS:
            raise ValueError(f"trace format version {version!r}: this netemu writes versions {_versions()}")
        self.file, self.version, self.entries = file, version, 0
        self._marks = 0  # name entries and section markers: with the fates, the end marker's count
        self._pack = msgpack.Packer(use_bin_type=True).pack
        self._hash = hashlib.blake2b(digest_size=32)
        self._run: int | None = None
        self._seen: dict[tuple, Any] = {}  # the run's fates by key (participation ones below)
        self._participation: dict[int, dict[str, bool]] = {}  # round -> node -> the run's participation fate
        self._algorithms = tuple(header.get("algorithms", ()))
        self._started: set[str] = set()  # algorithms of the current run that drew fates
        self._section: tuple[str, int] | None = None  # (algorithm, run) of the last section marker
        self._encoder = Encoder(self._write_entry)
        self._buffer: list[bytes] | None = None  # while a batch is encoded: its bytes, written at once
        self._write(self._pack({"format": FORMAT, "version": version, "checksum": CHECKSUM, **header}))

    def _write(self, data: bytes) -> None:
        self._hash.update(data)
        self.file.write(data)

    def _write_entry(self, entry: list) -> None:
        """A name entry or section marker (fates are written by `fates`' recorder)."""
        if self._buffer is None:
            self._write(self._pack(entry))
        else:
            self._buffer.append(self._pack(entry))
        self._marks += 1

    def fates(self, algorithm: str, run: int, inner: Fates | None = None) -> Fates:
        """A fate source that records what `inner` (default: draw) returns; its `many`
        records a batch of keys (`ManyFates`) as the same calls one key at a time would."""
        if run != self._run:  # runs come one after another: forget the previous run's fates
            self._run, self._seen, self._participation, self._started = run, {}, {}, set()
        seen, participation = self._seen, self._participation
        self._started.add(algorithm)
        # A message key is drawn once in a world (its link's index counts up), so only a later
        # algorithm of the run looks it up: the run's last one keeps none (memory: at a million
        # clients these are most of the entries).  Participation and compute keys may repeat.
        last = bool(self._algorithms) and self._started.issuperset(self._algorithms)
        pack, hash_update, file_write = self._pack, self._hash.update, self.file.write
        encoder, section, v2 = self._encoder, (algorithm, run), self.version == 2
        encode = encoder.entry

        def record(key: tuple, draw: Callable[[], Any]) -> Any:
            value = inner(key, draw) if inner is not None else draw()
            if key[0] == "participation":  # kept per round and node (shared with the batches of `many`)
                known = participation.get(key[2])
                if known is None:
                    known = participation[key[2]] = {}
                old = known.get(key[1], _MISSING)
                if not old != value:
                    return value
                if old is _MISSING:
                    known[key[1]] = value
            else:
                old = seen.get(key, _MISSING)
                if not old != value:
                    return value
                if old is _MISSING and not (last and key[0] == "msg"):
                    seen[key] = value
            if v2:
                data = pack(["fate", algorithm, run, key, value])
            else:
                if self._section != section:  # another algorithm or run wrote since: say whose fates follow
                    self._write_entry(encoder.section(algorithm, run))
                    self._section = section
                data = pack(encode(key, value))
            hash_update(data)
            file_write(data)
            self.entries += 1
            return value

        record.many = self._many(algorithm, run, inner)  # type: ignore[attr-defined]
        return record

    def _many(self, algorithm: str, run: int, inner: Fates | None) -> Callable[..., np.ndarray]:
        """The batch form of `fates`' recorder, for participation keys (kind, name, round):
        their values from `inner` (its `many` when it has one) or one vectorized `draw`, then
        the entries of those that differ from the run's earlier fates, in key order, written
        at once — the bytes one recorder call per key writes, name entries and section
        marker included."""
        participation, section = self._participation, (algorithm, run)

        def many(kind: str, names: Sequence[str], round: int, draw: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
            if kind != "participation":
                raise ValueError(f"a trace records batches of participation fates, not of {kind!r}")
            values = np.asarray(fates_many(inner, kind, names, round, draw) if inner is not None else draw(np.arange(len(names))), dtype=bool)
            yes = values.tolist()
            known = participation.get(round)
            if known is None:  # the round's first draws in this run: all of them new
                known = dict(zip(names, yes))
                if len(known) == len(yes):
                    participation[round] = known
                    self._write_participations(section, names, round, yes)
                    return values
                known = participation[round] = {}  # a name twice: the general case below
            old = np.array([known.get(name, 2) for name in names], dtype=np.int8)  # 2: not drawn before
            changed = np.flatnonzero(old != values)
            if not changed.size:
                return values
            index = changed.tolist()
            first = changed[old[changed] == 2].tolist()
            added = {names[i]: yes[i] for i in first}
            if len(added) < len(first):  # a name twice among the new ones: key by key, as the recorder
                index = []
                for i, (name, value) in enumerate(zip(names, yes)):
                    was = known.get(name, _MISSING)
                    if was != value:
                        if was is _MISSING:
                            known[name] = value
                        index.append(i)
            else:
                known.update(added)
            self._write_participations(section, [names[i] for i in index], round, [yes[i] for i in index])
            return values

        return many

    def _write_participations(self, section: tuple[str, int], names: Sequence[str], round: int, values: list[bool]) -> None:
        """The entries of participation fates (name, round) -> value, in order, as one write."""
        algorithm, run = section
        if self.version == 2:
            pack = self._pack
            data = b"".join([pack(["fate", algorithm, run, ("participation", name, round), value]) for name, value in zip(names, values)])
        else:
            buffer: list[bytes] = []
            self._buffer = buffer  # the name entries the encoder writes go in between
            try:
                if self._section != section:
                    self._write_entry(self._encoder.section(algorithm, run))
                    self._section = section
                self._encoder.participations(names, round, values, buffer.append)
            finally:
                self._buffer = None
            data = b"".join(buffer)
        self._write(data)
        self.entries += len(values)

    def _kept(self) -> int:
        """How many fates of the current run are kept to de-duplicate the next ones."""
        return len(self._seen) + sum(map(len, self._participation.values()))

    def close(self, complete: bool) -> None:
        body = self.entries + self._marks
        self._hash.update(_end_prefix(body, complete))
        self.file.write(self._pack(["end", body, complete, self._hash.digest()]))
        self.file.flush()


# ------------------------------------------------------------------ reading


def _versions() -> str:
    return " and ".join(str(v) for v in VERSIONS)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _header_problem(h: dict) -> str | None:
    """What is wrong with a header (versions 2 and 3 have the same), or None."""
    def bad(key: str, expected: str) -> str:
        return f"header key {key!r} is {repr(h[key])[:60] if key in h else '(missing)'}: expected {expected}"

    for key in ("netemu", "scenario", "scenario_hash"):
        if not isinstance(h.get(key), str):
            return bad(key, "a string")
    if not _is_int(h.get("seed")) or h["seed"] < 0:
        return bad("seed", "an integer >= 0")
    algs = h.get("algorithms")
    if not isinstance(algs, list) or not algs or not all(isinstance(a, str) for a in algs):
        return bad("algorithms", "a non-empty list of labels")
    runs = h.get("runs")
    if not isinstance(runs, list) or not runs or not all(
        isinstance(r, dict) and _is_int(r.get("seed")) and isinstance(r.get("topology"), str) for r in runs
    ):
        return bad("runs", "a non-empty list of {seed, topology} maps")
    if not isinstance(h.get("network"), dict):
        return bad("network", "a map of the random network models")
    return None


def _read_header(path: Path, f: BinaryIO, size: int) -> tuple[dict, int]:
    """The header map and its length in bytes.  Decoded by msgpack's pure-Python
    unpacker, which allocates only for what is present (the C one preallocates every
    array a header declares), from at most `_HEADER_MAX` bytes."""
    head = f.read(min(size, _HEADER_MAX))
    n = max(len(head), 1)
    unpacker = msgpack.fallback.Unpacker(
        raw=False, strict_map_key=False, max_buffer_size=n,
        max_str_len=n, max_bin_len=n, max_array_len=n, max_map_len=n // 2, max_ext_len=0,
    )
    unpacker.feed(head)
    try:
        header = unpacker.unpack()
    except msgpack.OutOfData:
        if size > _HEADER_MAX:
            raise TraceError(f"{path}: not a netemu trace (no header in its first {_HEADER_MAX // 2**20} MiB)") from None
        raise TraceError(f"{path}: not a netemu trace (no complete header{'' if size else ': empty file'})") from None
    except (ValueError, TypeError, RecursionError, msgpack.UnpackException) as exc:
        raise TraceError(f"{path}: not a netemu trace (no readable header: {exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TraceError(f"{path}: not a netemu trace (the header has no format = {FORMAT!r})")
    version = header.get("version")
    if version == 1:
        raise TraceError(
            f"{path}: trace format version 1 (no checksum, written by netemu before this one) is not read "
            f"any more; this netemu reads versions {_versions()}. Record it again: `netemu run` of the scenario.toml "
            f"beside it draws the same fates (same scenario and seed)"
        )
    if version not in VERSIONS:
        raise TraceError(f"{path}: trace format version {str(version)[:20]}; this netemu reads versions {_versions()}")
    if header.get("checksum") != CHECKSUM:
        raise TraceError(f"{path}: the header names checksum {str(header.get('checksum'))[:40]!r}; expected {CHECKSUM!r}")
    problem = _header_problem(header)
    if problem:
        raise TraceError(f"{path}: corrupted trace header: {problem}")
    return header, unpacker.tell()


def _end_prefix(entries: int, complete: bool) -> bytes:
    """What the checksum covers of the end marker: its count and completeness."""
    return msgpack.packb(["end", entries, complete])


def _digest(f: BinaryIO, length: int, end: list) -> bytes:
    h = hashlib.blake2b(digest_size=32)
    f.seek(0)
    while length > 0:
        chunk = f.read(min(length, 2**20))
        if not chunk:
            break
        h.update(chunk)
        length -= len(chunk)
    h.update(_end_prefix(end[1], end[2]))
    return h.digest()


@dataclass
class Trace:
    """A trace read back from a file, ready to replay."""

    path: Path
    header: dict
    fates_by_run: dict[tuple[str, int], dict[tuple, Any]]  # each algorithm's own entries
    first_by_run: dict[int, dict[tuple, Any]]  # the first recorded value of each key in a run
    complete: bool
    counts: dict[str, int] = field(default_factory=lambda: {"replayed": 0, "new": 0})

    @classmethod
    def read(cls, path: str | Path) -> Trace:
        """Read and verify a trace; any damage, truncation or unknown version is a TraceError."""
        path = Path(path)
        try:
            f = open(path, "rb")
            size = os.fstat(f.fileno()).st_size
        except OSError as exc:
            raise TraceError(f"{path}: cannot open the trace: {exc.strerror}") from None
        with f:
            header, offset = _read_header(path, f, size)
            version, algorithms, n_runs = header["version"], set(header["algorithms"]), len(header["runs"])
            decoder = Decoder3(algorithms, n_runs) if version == 3 else Decoder2(algorithms, n_runs)
            f.seek(offset)
            # the body holds short arrays and no maps: with these limits nothing a crafted
            # entry declares can make the C unpacker allocate more than ~1 MiB at once
            unpacker = msgpack.Unpacker(
                f, raw=False, max_buffer_size=_ENTRY_MAX, max_array_len=MAX_ITEMS if version == 3 else 5, max_map_len=0,
                max_str_len=_NAME_MAX, max_bin_len=64, max_ext_len=0,
            )
            fates: dict[tuple[str, int], dict[tuple, Any]] = {}
            first: dict[int, dict[tuple, Any]] = {}
            own: dict[tuple, Any] = {}
            first_of_run: dict[tuple, Any] = {}
            is_end, fate, section = decoder.is_end, decoder.fate, None
            n, end, end_at = 0, None, offset  # n: body entries before the end marker
            try:
                while True:
                    at = offset + unpacker.tell()
                    try:
                        entry = next(unpacker)
                    except StopIteration:
                        break
                    if end is not None:
                        raise TraceError(f"{path}: corrupted trace: data after the end marker (entry {n + 1})")
                    if is_end(entry):
                        end, end_at = entry, at
                        continue
                    try:
                        got = fate(entry)
                    except Problem as problem:
                        raise TraceError(f"{path}: corrupted trace: entry {n + 1}: {problem}") from None
                    n += 1
                    if got is not None:
                        alg, run, key, value = got
                        if section is None or section[0] != alg or section[1] != run:
                            section = (alg, run)
                            own = fates.setdefault(section, {})
                            first_of_run = first.setdefault(run, {})
                        own[key] = value
                        if key not in first_of_run:
                            first_of_run[key] = value
            except (ValueError, TypeError, msgpack.UnpackException) as exc:
                if isinstance(exc, TraceError):
                    raise
                raise TraceError(f"{path}: corrupted trace after {n} entries ({exc})") from None
            if end is None:
                raise TraceError(f"{path}: truncated trace: no end marker after {n} entries")
            counted, complete, digest = decoder.end_fields(end)
            if counted != n:
                raise TraceError(f"{path}: corrupted trace: the end marker counts {str(counted)[:20]} entries, the file has {n}")
            if not isinstance(digest, bytes) or not isinstance(complete, bool):
                raise TraceError(f"{path}: corrupted trace: the end marker {str(end)[:80]} has no {CHECKSUM} checksum")
            computed = _digest(f, end_at, end)
        if computed != digest:
            raise TraceError(
                f"{path}: corrupted trace: its {CHECKSUM} checksum is {computed.hex()[:16]}…, the end marker records "
                f"{digest.hex()[:16]}…: the file changed after it was written ({n} entries, {end_at} bytes before the end marker)"
            )
        return cls(path, header, fates, first, complete=complete)

    def check_scenario(self, table: dict) -> None:
        """Refuse a scenario whose random network models differ from the recorded ones
        (the fates would come from other distributions); name the keys that differ."""
        recorded, now = _flatten(self.header["network"]), _flatten(network_model(table))
        differ = [k for k in sorted(recorded.keys() | now.keys()) if not _same(recorded.get(k, _MISSING), now.get(k, _MISSING))]
        if differ:
            shown = "; ".join(
                f"{k}: {_show(recorded.get(k, _MISSING))} in the trace, {_show(now.get(k, _MISSING))} in the scenario"
                for k in differ[:4]
            )
            more = f" (and {len(differ) - 4} more)" if len(differ) > 4 else ""
            raise TraceError(
                f"{self.path}: the trace was drawn from other network models than this scenario's: {shown}{more}. "
                f"A replay may change algorithms, rounds, speeds, bandwidth, outages and crashes, not the random models"
            )

    def check_topology(self, run: int, graph: nx.DiGraph) -> None:
        runs = self.header.get("runs", [])
        if run >= len(runs):
            raise TraceError(f"{self.path}: the trace has {len(runs)} Monte Carlo run(s); the scenario asks for run {run}")
        recorded, now = runs[run]["topology"], topology_fingerprint(graph)
        if recorded != now:
            raise TraceError(
                f"{self.path}: run {run} was recorded on another topology (fingerprint {recorded}); "
                f"this scenario builds {now} ({graph.number_of_nodes()} nodes, {graph.number_of_edges()} links)"
            )

    def source_for(self, algorithm: str, source: str | None = None) -> str:
        """Whose fates an algorithm replays: its own if recorded, else `source` or the first."""
        recorded = self.header.get("algorithms", [])
        if source is not None:
            if source not in recorded:
                raise TraceError(f"{self.path}: no algorithm {source!r} in the trace; recorded: {', '.join(recorded)}")
            return source
        return algorithm if algorithm in recorded else recorded[0]

    def fates(self, algorithm: str, run: int) -> Fates:
        own = self.fates_by_run.get((algorithm, run), {})
        first = self.first_by_run.get(run, {})
        counts = self.counts

        def replay(key: tuple, draw: Callable[[], Any]) -> Any:
            value = own.get(key, _MISSING)
            if value is _MISSING:
                value = first.get(key, _MISSING)
            if value is _MISSING:
                counts["new"] += 1
                return draw()
            counts["replayed"] += 1
            return value

        def many(kind: str, names: Sequence[str], round: int, draw: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
            """`replay` of keys (kind, name, round) for every name; those never recorded drawn at once."""
            values, missing = [], []
            for i, name in enumerate(names):
                key = (kind, name, round)
                value = own.get(key, _MISSING)
                if value is _MISSING:
                    value = first.get(key, _MISSING)
                    if value is _MISSING:
                        missing.append(i)
                values.append(value)
            if missing:
                for i, value in zip(missing, draw(np.array(missing, dtype=np.intp)).tolist()):
                    values[i] = value
            counts["new"] += len(missing)
            counts["replayed"] += len(values) - len(missing)
            return np.array(values, dtype=bool)

        replay.many = many  # type: ignore[attr-defined]
        return replay


_MISSING = object()


def _show(v: Any) -> str:
    return "(absent)" if v is _MISSING else repr(v)[:60]
