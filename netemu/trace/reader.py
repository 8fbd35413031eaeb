"""Reading a trace back and replaying it.

`Trace.read` refuses, with a `TraceError` saying what is wrong, any file it cannot
trust: damage (checksum, shape of every entry), truncation, another format version;
it decodes with limits so that a crafted file cannot make it allocate more than a
small multiple of its own size.  `Trace.fates(algorithm, run)` replays: the algorithm's
own entries first, then the run's first recorded value of the key; keys never recorded
are drawn from the seeded streams and counted as new.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import networkx as nx
import numpy as np

from netemu.errors import TraceError
from netemu.engine.net.network import Fates
from netemu.trace.body import MAX_ITEMS, Decoder2, Decoder3, Problem
from netemu.trace.header import _MISSING, CHECKSUM, _end_prefix, _flatten, _read_header, _same, _show, topology_fingerprint

_ENTRY_MAX = 2**20  # bytes held while decoding one entry of the body (an entry is 3 to 20 bytes; 50 in version 2)
_NAME_MAX = 2**16  # characters of a node name or algorithm label in the body


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
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):  # a FIFO would block open(), a device never end
                raise TraceError(f"{path}: not a regular file (a device, FIFO or socket); expected a trace.msgpack")
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

    def check_scenario(self, network: dict) -> None:
        """Refuse a scenario whose random network models (`network`, what a header records:
        netemu.scenario.settings.network_model) differ from the recorded ones (the fates
        would come from other distributions); name the keys that differ."""
        recorded, now = _flatten(self.header["network"]), _flatten(network)
        differ = [k for k in sorted(recorded.keys() | now.keys()) if not _same(recorded.get(k, _MISSING), now.get(k, _MISSING))]
        if differ:
            shown = "; ".join(
                f"{k}: {_show(recorded.get(k, _MISSING))} in the trace, {_show(now.get(k, _MISSING))} in the scenario"
                for k in differ[:4]
            )
            more = f" (and {len(differ) - 4} more)" if len(differ) > 4 else ""
            raise TraceError(
                f"{self.path}: the trace was drawn from other network models than this scenario's: {shown}{more}. "
                f"A replay may change algorithms, rounds, plain speeds, bandwidth, outages and crashes, not the random models (speed models included)"
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
