"""The topology graph of a validated Scenario: what `netemu.scenario.load` checks the
scenario against (`topology_for_validation`) and what `netemu.scenario.build` makes a
run's World of.  It needs the Scenario only as a type, so loading and building both
import it and neither imports the other back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

from netemu import plugins
from netemu.engine.net import topology as T
from netemu.engine.rng import Streams
from netemu.engine.world import fewer_collections
from netemu.errors import InputError
from netemu.scenario.settings import thawed

if TYPE_CHECKING:
    from netemu.scenario.load import Scenario

__all__ = ["build_graph", "release", "topology_for_validation"]


def build_graph(sc: Scenario, streams: Streams) -> nx.DiGraph:
    """The topology of the run whose streams are `streams` (the garbage collector paused
    meanwhile, `fewer_collections`: a large graph is millions of long-lived objects)."""
    with fewer_collections():
        return _graph(sc, streams)


def _graph(sc: Scenario, streams: Streams) -> nx.DiGraph:
    """The graph of the scenario's topology, built by its registered TopologySpec (file keys resolved),
    with routers before the servers for `server_link` / `access_points` (star and multi_server)."""
    topo, shared = sc.settings.topology, sc.settings.links.shared
    spec = plugins.topology(topo.kind)
    params = thawed(topo.params)
    for key in spec.paths:
        params[key] = sc.resolve(params[key])
    try:
        g = spec.build(params, streams)
    except (ValueError, OSError):  # an InputError, or a value the builder refuses: reported as they are
        raise
    except Exception as exc:  # noqa: BLE001 - a plug-in's builder may fail in any way: name it, no traceback
        raise InputError(f"topology {spec.name!r}: build(params, streams) raised {type(exc).__name__}: {exc}") from None
    if not isinstance(g, nx.DiGraph):
        raise InputError(f"topology {spec.name!r}: build(params, streams) returned {type(g).__name__}, expected a networkx DiGraph")
    if shared:
        g = T.behind_routers(g, server_link="server_link" in shared, clients_per_ap=sc.settings.links.clients_per_ap())
    return g


def release(graph: nx.DiGraph) -> None:
    """Empty a graph that is no longer used, so that its memory is freed now: networkx's
    cached views (`nodes`, `edges`, ...) refer back to their graph, so a dropped graph is a
    reference cycle that waits for a full garbage collection — rare while a large world is
    built and run (`fewer_collections`), and 100 MB at 100,000 clients.  Attribute dicts
    still referenced elsewhere (a Network's nodes keep theirs) are not touched."""
    graph.clear()


def topology_for_validation(sc: Scenario) -> nx.DiGraph:
    """The graph the checks of a loaded scenario read: run 0's (the scenario's own seed)."""
    return build_graph(sc, Streams(sc.settings.run.seed))
