"""The trace file's frame and header: format constants, what a header records of a run's
network (`network_model`, `topology_fingerprint`), and reading and checking a header.

Shared by the writer (`netemu.tracewriter`) and the reader (`netemu.tracereader`);
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


_DETERMINISTIC_LINK_KEYS = ("bandwidth", "outages", "queue_bytes", "clients_per_ap")  # not drawn, not in the trace: free to differ on replay


def network_model(table: dict) -> dict:
    """The random models of a resolved scenario table whose draws a trace records.

    Link latency, jitter and loss (per class and per-link overrides), and the nodes'
    participation, slowdown, speed model and completeness (with their groups).
    Deterministic parts — bandwidth, outages, plain speeds, crashes, algorithms, rounds,
    the compute mode — are left out: a replay may change them (that is what a what-if
    replay is for).  A latency or speed read from a file is named by the file's name
    only, so a run folder replays on another machine.
    """

    def link(t: dict) -> dict:
        # duplicate and corrupt are drawn; at 0 (their default) they draw nothing, so a trace recorded
        # before they existed still matches its scenario
        out = {k: v for k, v in t.items() if k not in _DETERMINISTIC_LINK_KEYS and not (k in ("duplicate", "corrupt") and not v)}
        latency = out.get("latency")
        if isinstance(latency, dict) and latency.get("file"):
            out["latency"] = {**latency, "file": Path(latency["file"]).name}
        return out

    def behaviour(t: dict) -> dict:
        out = {k: t[k] for k in ("name", "members", "participation", "slowdown_sigma") if k in t}
        # a speed model draws the population (a plain speed is deterministic: free to differ); completeness is
        # drawn below 1 (absent, or 1, draws nothing, so traces recorded before it existed still match)
        speed = t.get("speed")
        if isinstance(speed, dict):
            out["speed"] = {**speed, "file": Path(speed["file"]).name} if speed.get("file") else speed
        if t.get("completeness") not in (None, 1.0):
            out["completeness"] = t["completeness"]
        return out

    nodes = table.get("nodes", {})
    shared = {f"topology.{k}": link(t) for k, t in sorted(table.get("topology", {}).items()) if k in ("server_link", "access_points")}
    return {
        "links": {cls: link(t) for cls, t in sorted(table.get("links", {}).items())},
        **({"shared_links": shared} if shared else {}),
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
