"""The numbers a scenario may hold: sizes refused before anything is allocated (with a
memory estimate), seeds, finite numbers, and how deep its tables may nest."""

from __future__ import annotations

import math
import os
from typing import Any

from netemu.scenario.schema import INT_MAX, INT_MIN, Issues

__all__ = ["MAX_DEPTH", "MAX_NODES", "MAX_ROUNDS", "MAX_RUNS", "SEED_MAX", "check_sizes", "finite", "memory_estimate",
           "nesting_depth"]

SEED_MAX = 2**63 - 1  # seeds feed NumPy's SeedSequence and BLAKE2 run seeds (docs/scenarios.md)
MAX_NODES = 2_000_000  # sizes refused before anything is allocated (with a memory estimate)
MAX_RUNS = 100_000
MAX_ROUNDS = 100_000_000
NODE_BYTES = 8_000  # measured (tools/bench_memory.py): ~6 kB per client of a star world at the peak of a round (links, node, actor, messages); rounded up
EDGE_BYTES = 2_000  # per directed link: its Link and the graph's edge dictionaries (order of magnitude)
GRAPH_BYTES = 1_500  # per node: the networkx topology, while a world is built (one at a time)
METRIC_BYTES = 300  # per recorded metric value (metrics list and metrics.csv rows)


def finite(v: Any) -> bool:
    """A number (not a bool) that is neither NaN nor infinite, and fits in 64 bits if an int."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return INT_MIN <= v <= INT_MAX if isinstance(v, int) else math.isfinite(v)


def _node_count(topo: dict) -> tuple[str, int] | None:
    """(key, number of nodes) of a topology, computed without building it."""
    kind = topo["kind"]
    if kind == "star":
        return "topology.clients", topo["clients"] + 1
    if kind == "multi_server":
        return "topology.clients_per_server", topo["servers"] * (topo["clients_per_server"] + 1)
    if kind == "random_peers":
        return "topology.peers", topo["peers"]
    if kind == "geometric":
        return "topology.positions", len(topo["positions"])
    return None


def _gb(n: float) -> str:
    return f"{n / 1e9:.3g} GB" if n >= 1e8 else f"{n / 1e6:.3g} MB"


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def memory_estimate(table: dict, nodes: int) -> int:
    """A rough upper estimate (bytes) of what a run of the scenario holds in memory:
    one World and one topology at a time, the data, every metric value."""
    run, data = table["run"], table["data"] or {}
    dim = data.get("dim", 64) if isinstance(data.get("dim", 64), int) else 64
    samples = max((v for k, v in data.items() if k in ("samples_max", "samples") and isinstance(v, int)), default=100)
    test = data.get("test_samples", 1000) if isinstance(data.get("test_samples", 1000), int) else 1000
    data_bytes = 8 * dim * (nodes * samples + test)
    topo = table["topology"]
    reporters = nodes if topo["kind"] in ("random_peers", "geometric", "graphml") else max(1, nodes // 100)
    metric_bytes = METRIC_BYTES * 3 * reporters * run["rounds"] * run["runs"] * len(table["algorithm"])
    edges = 0  # directed links beyond the star's two per client, which NODE_BYTES covers
    if topo["kind"] == "random_peers":
        edges = int(nodes * min(topo["avg_degree"], nodes))
    elif topo["kind"] == "geometric":  # the links it will have, and an n x n distance matrix while building
        edges, data_bytes = _geometric_links(topo), data_bytes + 24 * nodes * nodes
    elif topo["kind"] == "multi_server":
        edges = int(topo["servers"] * min(topo["server_degree"], topo["servers"]))
    return nodes * NODE_BYTES + edges * EDGE_BYTES * 2 + nodes * GRAPH_BYTES + data_bytes + metric_bytes


def _geometric_links(topo: dict, exact_up_to: int = 20_000) -> int:
    """Directed links of a geometric topology: counted in blocks of rows (no n x n matrix)
    up to `exact_up_to` nodes; above, every pair (an upper bound)."""
    import numpy as np

    pos = np.array(list(topo["positions"].values()), dtype=float).reshape(-1, 2)
    n = len(pos)
    if n > exact_up_to:
        return n * (n - 1)
    count = 0
    for start in range(0, n, 1000):
        block = np.linalg.norm(pos[start:start + 1000, None, :] - pos[None, :, :], axis=-1) < topo["d_max"]
        count += int(block.sum()) - min(1000, n - start)  # not a node's link to itself
    return count


def check_sizes(table: dict, issues: Issues) -> bool:
    """Refuse sizes that cannot fit before anything is allocated; True if the sizes are fine."""
    counted = _node_count(table["topology"])
    if counted is None:  # graphml: the file's size bounds the graph
        return True
    key, nodes = counted
    estimate = memory_estimate(table, nodes)
    need = f"a run would need about {_gb(estimate)} of memory"
    run = table["run"]
    ok = True
    if run["runs"] > MAX_RUNS:
        issues.add("run.runs", run["runs"], f"at most {MAX_RUNS:,} Monte Carlo runs ({need})")
        ok = False
    if run["rounds"] > MAX_ROUNDS:
        issues.add("run.rounds", run["rounds"], f"at most {MAX_ROUNDS:,} rounds ({need})")
        ok = False
    if nodes > MAX_NODES:
        issues.add(key, table["topology"].get(key.split(".")[-1]), f"at most {MAX_NODES:,} nodes in all (this topology has {nodes:,}; {need})")
        ok = False
    if not ok:
        return False
    physical = _physical_memory()
    if physical is not None and estimate > physical:
        issues.add("run", f"{nodes:,} nodes x {run['runs']:,} runs x {run['rounds']:,} rounds",
                   f"a scenario that fits in memory: it would need about {_gb(estimate)}, this machine has {_gb(physical)}")
        return False
    return True


MAX_DEPTH = 32  # no scenario key nests deeper than ~5; a deeper file is hostile (and would exhaust the stack)


def nesting_depth(value: Any) -> int:
    """How deep tables and arrays nest in `value` (iteratively: a hostile file cannot exhaust the stack)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_DEPTH:
            return d
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return deepest
