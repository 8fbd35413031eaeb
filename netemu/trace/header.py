"""The trace file's frame and header: format constants, the header a run records (`header`,
`topology_fingerprint`; what it records of the scenario's network models it is given), and
reading and checking a header.

Shared by the writer (`netemu.trace.writer`) and the reader (`netemu.trace.reader`);
`netemu.trace` re-exports the public names.  The format is in docs/formats.md.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import msgpack.fallback
import networkx as nx

from netemu.errors import TraceError

FORMAT, VERSION = "netemu-trace", 3
VERSIONS = (2, 3)  # read and written; 2 is the previous, uncompacted body
CHECKSUM = "blake2b-256"
_HEADER_MAX = 16 * 2**20  # bytes: a header (network models, runs) is kilobytes; refuse more than this
_MISSING = object()  # absent from a map (a recorded value may be None)


def topology_fingerprint(graph: nx.DiGraph) -> str:
    """A short hash of the nodes, their roles and the links with their classes."""
    nodes = sorted((n, str(r)) for n, r in graph.nodes(data="role"))
    edges = sorted((u, v, str(c)) for u, v, c in graph.edges(data="link_class"))
    return hashlib.blake2b(msgpack.packb([nodes, edges]), digest_size=12).hexdigest()


def header(*, version: str, scenario: str, scenario_hash: str, seed: int, algorithms: list[str],
           runs: list[tuple[int, str]], network: dict, calibration: dict[str, float] | None = None) -> dict:
    """A trace header (without the format keys `TraceWriter` adds): the netemu `version` that wrote
    it, the scenario's name and hash, the root seed, the algorithms' labels, each Monte Carlo
    run's (seed, topology fingerprint), the random `network` models whose draws it records and,
    when compute times were measured, the `calibration` (seconds per work unit by algorithm)."""
    return {"netemu": version, "scenario": scenario, "scenario_hash": scenario_hash, "seed": seed, "algorithms": algorithms,
            "runs": [{"seed": s, "topology": f} for s, f in runs], "network": network,
            **({"calibration": calibration} if calibration else {})}


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



def _show(v: Any) -> str:
    return "(absent)" if v is _MISSING else repr(v)[:60]
