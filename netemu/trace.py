"""Record and replay every random fate the network drew.

A trace is a msgpack stream (schema in docs/formats.md):

1. header map: ``format`` = "netemu-trace", ``version``, ``netemu`` version,
   ``scenario`` name, ``scenario_hash``, ``seed``, ``algorithms`` (labels) and
   ``runs``: per Monte Carlo run its ``seed`` and ``topology`` fingerprint;
2. ``["fate", algorithm, run, key, value]`` arrays in draw order; keys are
   ``["msg", src, dst, round, index]`` -> ``[drop reason or nil, delay]``,
   ``["participation", node, round]`` -> bool, ``["compute", node, round, index]`` ->
   slowdown factor.  A fate is written once per Monte Carlo run: when another
   algorithm of the run draws the same key with the same value (keyed draws make this
   the rule), nothing is written; only a differing value (stateful links) is;
3. ``["end", entries, complete]`` — absent when the file was cut short.

`TraceWriter.fates(algorithm, run)` records while drawing; `Trace.fates(algorithm,
run)` replays: the algorithm's own entries first, then the run's first recorded value
of the key; keys never recorded are drawn from the seeded streams and counted as new.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import networkx as nx

from netemu.errors import TraceError
from netemu.net.network import Fates

__all__ = ["FORMAT", "VERSION", "Trace", "TraceError", "TraceWriter", "topology_fingerprint"]

FORMAT, VERSION = "netemu-trace", 1


def topology_fingerprint(graph: nx.DiGraph) -> str:
    """A short hash of the nodes, their roles and the links with their classes."""
    nodes = sorted((n, str(r)) for n, r in graph.nodes(data="role"))
    edges = sorted((u, v, str(c)) for u, v, c in graph.edges(data="link_class"))
    return hashlib.blake2b(msgpack.packb([nodes, edges]), digest_size=12).hexdigest()


class TraceWriter:
    def __init__(self, file: BinaryIO, header: dict) -> None:
        self.file, self.entries = file, 0
        self._pack = msgpack.Packer(use_bin_type=True).pack
        self._run, self._seen = None, {}
        file.write(self._pack({"format": FORMAT, "version": VERSION, **header}))

    def fates(self, algorithm: str, run: int, inner: Fates | None = None) -> Fates:
        """A fate source that records what `inner` (default: draw) returns."""
        write, pack = self.file.write, self._pack
        if run != self._run:  # runs come one after another: forget the previous run's fates
            self._run, self._seen = run, {}
        seen = self._seen

        def record(key: tuple, draw: Callable[[], Any]) -> Any:
            value = inner(key, draw) if inner is not None else draw()
            if seen.get(key, _MISSING) != value:
                seen.setdefault(key, value)
                write(pack(["fate", algorithm, run, key, value]))
                self.entries += 1
            return value

        return record

    def close(self, complete: bool) -> None:
        self.file.write(self._pack(["end", self.entries, complete]))
        self.file.flush()


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
        path = Path(path)
        try:
            f = open(path, "rb")
        except OSError as exc:
            raise TraceError(f"{path}: cannot open the trace: {exc.strerror}") from None
        with f:
            unpacker = msgpack.Unpacker(f, raw=False, strict_map_key=False)
            try:
                header = next(unpacker)
            except (StopIteration, ValueError, msgpack.UnpackException) as exc:
                raise TraceError(f"{path}: not a netemu trace (no readable header: {exc or 'empty file'})") from None
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise TraceError(f"{path}: not a netemu trace (the header has no format = {FORMAT!r})")
            if header.get("version") != VERSION:
                raise TraceError(f"{path}: trace format version {header.get('version')!r}; this netemu reads version {VERSION}")
            fates: dict[tuple[str, int], dict[tuple, Any]] = {}
            first: dict[int, dict[tuple, Any]] = {}
            n, end = 0, None
            try:
                for entry in unpacker:
                    if end is not None:
                        raise TraceError(f"{path}: data after the end marker (entry {n + 1})")
                    if isinstance(entry, list) and len(entry) == 5 and entry[0] == "fate":
                        _, alg, run, key, value = entry
                        key = tuple(key)
                        fates.setdefault((alg, run), {})[key] = value
                        first.setdefault(run, {}).setdefault(key, value)
                        n += 1
                    elif isinstance(entry, list) and len(entry) == 3 and entry[0] == "end":
                        end = entry
                    else:
                        raise TraceError(f"{path}: corrupted trace: entry {n + 1} is {str(entry)[:80]}")
            except (ValueError, msgpack.UnpackException) as exc:
                if isinstance(exc, TraceError):
                    raise
                raise TraceError(f"{path}: corrupted trace after {n} entries ({exc})") from None
        if end is None:
            raise TraceError(f"{path}: truncated trace: no end marker after {n} entries")
        if end[1] != n:
            raise TraceError(f"{path}: corrupted trace: the end marker counts {end[1]} entries, the file has {n}")
        return cls(path, header, fates, first, complete=bool(end[2]))

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

        return replay


_MISSING = object()
