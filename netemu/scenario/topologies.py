"""The built-in topologies of a scenario's `[topology]` table, as TopologySpecs registered by
entry points (group `netemu.topologies` in pyproject.toml) like a user's own: each says its
keys (schema Fields) and builds its graph with netemu.engine.net.topology."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx

from netemu.errors import InputError
from netemu.engine.net import topology as T
from netemu.plugins import TopologySpec
from netemu.engine.rng import Streams
from netemu.scenario.limits import finite
from netemu.scenario.schema import REQUIRED, Field, Issues

__all__ = ["GEOMETRIC", "GRAPHML", "MULTI_SERVER", "RANDOM_PEERS", "STAR", "read_graphml"]


def _multi_server(p: dict, streams: Streams) -> nx.DiGraph:
    degree = min(p["server_degree"], p["servers"] - 1)
    return T.multi_server(T.random_connected_graph(p["servers"], degree, streams.generator("topology")), p["clients_per_server"])


def _positions(p: dict, key: str, issues: Issues) -> None:
    for name, pos in p["positions"].items():
        if not (isinstance(pos, list) and len(pos) == 2 and all(finite(x) for x in pos)):
            issues.add(f"{key}.positions.{name}", pos, "expected [x, y]: two finite numbers")


def read_graphml(path: Path) -> nx.DiGraph:
    """A GraphML topology; a missing, unreadable or malformed file, or one with a self-loop (a node
    linked to itself: a peer would send to itself), is an InputError naming it."""
    try:
        graph = T.from_graphml(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such GraphML file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: a directory, not a GraphML file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the GraphML file: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - networkx/xml raise many types for malformed files
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path}: not a valid GraphML file ({type(exc).__name__}: {first})") from None
    loops = [u for u, v in nx.selfloop_edges(graph)]
    if loops:
        shown = ", ".join(f"{u} -> {u}" for u in loops[:5]) + (f" and {len(loops) - 5} more" if len(loops) > 5 else "")
        raise InputError(f"{path}: a self-loop ({shown}); accepted: a graph whose links join two different nodes")
    return graph


def _graphml(p: dict[str, Any], streams: Streams) -> nx.DiGraph:
    return read_graphml(p["file"])


STAR = TopologySpec(
    "star", {"clients": Field(int, REQUIRED, lambda v: v >= 1, ">= 1")},
    lambda p, streams: T.star(p["clients"]), doc="one server, `clients` clients",
)
MULTI_SERVER = TopologySpec(
    "multi_server",
    {
        "servers": Field(int, REQUIRED, lambda v: v >= 1, ">= 1"),
        "clients_per_server": Field(int, REQUIRED, lambda v: v >= 1, ">= 1"),
        "server_degree": Field(float, 3.0, lambda v: v > 0, "> 0 (average degree of the server graph)"),
    },
    _multi_server, doc="servers on a random connected graph, each with its own clients",
)
RANDOM_PEERS = TopologySpec(
    "random_peers",
    {"peers": Field(int, REQUIRED, lambda v: v >= 2, ">= 2"), "avg_degree": Field(float, 3.0, lambda v: v > 0, "> 0")},
    lambda p, streams: T.random_peers(p["peers"], p["avg_degree"], streams.generator("topology")),
    doc="peers on a random connected graph",
)
GEOMETRIC = TopologySpec(
    "geometric",
    {"positions": Field(dict, REQUIRED, accepts="(node = [x, y] pairs)"), "d_max": Field(float, REQUIRED, lambda v: v > 0, "> 0")},
    lambda p, streams: T.geometric(p["positions"], p["d_max"]), doc="peers linked when closer than d_max",
    check=_positions,
)
GRAPHML = TopologySpec(
    "graphml", {"file": Field(str, REQUIRED, accepts="(path of a GraphML file, relative to the scenario)")},
    _graphml, doc="any graph read from a GraphML file", paths=("file",),
)
