"""Writing a trace: the header at once, a fate per new draw, the end marker on close.

`TraceWriter.fates(algorithm, run)` is a fate source (`netemu.engine.net.network.Fates`) that
records what it draws; a fate already written for the run with the same value is not
written again.  The body's entries are encoded by `netemu.trace.body`; the format is in
docs/formats.md.  A write the machine refuses (disk full, read-only, I/O error) raises
`WriteFailed` naming the trace file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

import msgpack
import numpy as np

from netemu.engine.net.network import Fates, fates_many
from netemu.errors import writing
from netemu.trace.body import Encoder
from netemu.trace.header import _MISSING, CHECKSUM, FORMAT, VERSION, VERSIONS, _end_prefix, _versions


class TraceWriter:
    """Writes a trace: the header at once, a fate per new draw, the end marker on `close`.

    Every byte written is hashed as it goes; the end marker carries the digest.
    `version` 3 (the default) writes the compact body (`netemu.trace.body`); 2 writes the
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
        try:
            self.file.write(data)
        except OSError as exc:
            self._refused(exc)

    def _refused(self, exc: OSError) -> None:
        """A write raised `exc`: `WriteFailed` naming the trace file when the machine refused it."""
        with writing(str(getattr(self.file, "name", "the trace"))):
            raise exc

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
            try:
                file_write(data)
            except OSError as exc:
                self._refused(exc)
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
        with writing(str(getattr(self.file, "name", "the trace"))):
            self.file.write(self._pack(["end", body, complete, self._hash.digest()]))
            self.file.flush()
