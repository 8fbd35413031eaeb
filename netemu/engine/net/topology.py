"""Topology builders.  Each returns a `networkx.DiGraph` with node attribute `role`
(server | client | peer) and edge attribute `link_class` (uplink, downlink,
server-server, peer): both directions of every connection are edges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import networkx as nx
import numpy as np

__all__ = ["behind_routers", "from_graph", "logical", "from_graphml", "geometric", "multi_server", "random_connected_graph", "random_peers", "star"]


def _both_ways(g: nx.DiGraph, u: str, v: str, uv_class: str, vu_class: str) -> None:
    g.add_edge(u, v, link_class=uv_class)
    g.add_edge(v, u, link_class=vu_class)


def star(n_clients: int, server: str = "server", prefix: str = "client-") -> nx.DiGraph:
    """One server and `n_clients` clients: uplinks client->server, downlinks server->client."""
    if n_clients < 1:
        raise ValueError(f"a star needs at least one client, got {n_clients}")
    g = nx.DiGraph()
    g.add_node(server, role="server")
    clients = [f"{prefix}{k}" for k in range(n_clients)]
    # the same graph, in the same order of nodes and edges, as adding each client and its two
    # links in turn: the server's successors and predecessors are the clients in order, each
    # client's only neighbour is the server; networkx's bulk adds cost a third less per client
    g.add_nodes_from(clients, role="client")
    g.add_edges_from(((c, server) for c in clients), link_class="uplink")
    g.add_edges_from(((server, c) for c in clients), link_class="downlink")
    return g


def multi_server(server_graph: nx.Graph, clients_per_server: int | Sequence[int]) -> nx.DiGraph:
    """Servers `server-i` linked as `server_graph`; server i has clients `client-i-j`."""
    counts = (
        [clients_per_server] * server_graph.number_of_nodes()
        if isinstance(clients_per_server, int)
        else list(clients_per_server)
    )
    if len(counts) != server_graph.number_of_nodes():
        raise ValueError(f"{len(counts)} client counts for {server_graph.number_of_nodes()} servers")
    g = nx.DiGraph()
    index = {s: i for i, s in enumerate(sorted(server_graph.nodes))}
    for i in index.values():
        g.add_node(f"server-{i}", role="server")
        for j in range(counts[i]):
            g.add_node(f"client-{i}-{j}", role="client", server=f"server-{i}")
            _both_ways(g, f"client-{i}-{j}", f"server-{i}", "uplink", "downlink")
    for a, b in sorted(server_graph.edges, key=lambda e: (index[e[0]], index[e[1]])):
        _both_ways(g, f"server-{index[a]}", f"server-{index[b]}", "server-server", "server-server")
    return g


def random_connected_graph(n: int, avg_degree: float, rng: np.random.Generator, max_tries: int = 1000) -> nx.Graph:
    """A connected G(n, m) with m = round(n·avg_degree/2) edges on nodes 0..n-1 (rejection sampling)."""
    m = int(round(n * avg_degree / 2))
    if n == 1:
        return nx.empty_graph(1)
    if not (n - 1 <= m <= n * (n - 1) // 2):
        raise ValueError(f"cannot build a connected graph of {n} nodes with average degree {avg_degree}")
    for _ in range(max_tries):
        und = nx.gnm_random_graph(n, m, seed=int(rng.integers(2**32)))
        if nx.is_connected(und):
            return und
    raise ValueError(f"no connected graph of {n} nodes with average degree {avg_degree} in {max_tries} tries")


def random_peers(n: int, avg_degree: float, rng: np.random.Generator) -> nx.DiGraph:
    """Peers `peer-k` on a connected random graph with the target average degree."""
    und = random_connected_graph(n, avg_degree, rng)
    return from_graph(nx.relabel_nodes(und, {k: f"peer-{k}" for k in und.nodes}))


def geometric(positions: Mapping[str, Sequence[float]], d_max: float) -> nx.DiGraph:
    """Peers linked when their distance is below `d_max` (A_ij = 1[d_ij < d_max], G-Fedfilt eq. 1)."""
    names = list(positions)
    pos = np.array([positions[k] for k in names], dtype=float)
    und = nx.Graph()
    und.add_nodes_from(names)
    dist = np.linalg.norm(pos[:, None, :] - pos[None, :, :], axis=-1)
    for i, j in zip(*np.nonzero(np.triu(dist < d_max, k=1))):
        und.add_edge(names[i], names[j])
    g = from_graph(und)
    for k, p in positions.items():
        g.nodes[k]["pos"] = tuple(float(x) for x in p)
    return g


def from_graph(graph: nx.Graph, default_class: str = "peer") -> nx.DiGraph:
    """Any networkx graph: undirected edges become two directed links; names become strings."""
    g = nx.DiGraph()
    for node, attrs in graph.nodes(data=True):
        g.add_node(str(node), **{"role": "peer", **attrs})
    for u, v, attrs in graph.edges(data=True):
        cls = attrs.get("link_class", default_class)
        g.add_edge(str(u), str(v), **{**attrs, "link_class": cls})
        if not graph.is_directed():
            g.add_edge(str(v), str(u), **{**attrs, "link_class": cls})
    return g


def from_graphml(path: str | Path, default_class: str = "peer") -> nx.DiGraph:
    return from_graph(nx.read_graphml(path), default_class)


def access_point_index(name: str) -> int:
    """j of access point ``ap-j`` (or ``ap-i-j``): its group under uneven `clients_per_ap`."""
    return int(name.rsplit("-", 1)[1])


def behind_routers(graph: nx.DiGraph, *, server_link: bool = False, clients_per_ap: int | Sequence[int] = 0) -> nx.DiGraph:
    """`graph` (a star or multi_server) with each server's clients behind shared links.

    `server_link`: a router ``router`` (``router-i`` for ``server-i``) stands before each server;
    the server's own link (classes ``server_uplink`` router->server, ``server_downlink``
    server->router) carries every transfer to or from it.  `clients_per_ap` > 0: a server's
    clients are grouped, in topology order, behind access points ``ap-j`` (``ap-i-j``) whose
    link to the server or its router (classes ``ap_uplink``, ``ap_downlink``) they share; a
    sequence of counts puts that many clients behind ``ap-0``, ``ap-1``, ... (uneven groups).
    Clients keep their own links (``uplink``, ``downlink``) to their first hop.  Servers stay
    linked to each other directly."""
    servers = [n for n, r in graph.nodes(data="role") if r == "server"]
    g = nx.DiGraph()
    g.add_nodes_from(graph.nodes(data=True))
    for u, v, attrs in graph.edges(data=True):
        if u in servers and v in servers:
            g.add_edge(u, v, **attrs)
    for s in servers:
        suffix = s[len("server"):]  # "" for "server", "-i" for "server-i"
        clients = [c for c in graph.successors(s) if graph.nodes[c].get("role") == "client"]
        core = s
        if server_link:
            core = f"router{suffix}"
            g.add_node(core, role="router")
            _both_ways(g, core, s, "server_uplink", "server_downlink")
        sizes = _group_sizes(len(clients), clients_per_ap)
        if sizes:
            start = 0
            for j, size in enumerate(sizes):
                ap = f"ap{suffix}-{j}"
                g.add_node(ap, role="router")
                _both_ways(g, ap, core, "ap_uplink", "ap_downlink")
                for c in clients[start:start + size]:
                    _both_ways(g, c, ap, "uplink", "downlink")
                start += size
        else:
            for c in clients:
                _both_ways(g, c, core, "uplink", "downlink")
    return g


def _group_sizes(n: int, clients_per_ap: int | Sequence[int]) -> list[int]:
    """The sizes of the access-point groups of `n` clients: equal groups of `clients_per_ap` (the
    last one the rest), or the given sizes, which must add up to `n`; [] for no access points."""
    if isinstance(clients_per_ap, int):
        return [min(clients_per_ap, n - j) for j in range(0, n, clients_per_ap)] if clients_per_ap > 0 else []
    sizes = list(clients_per_ap)
    if sum(sizes) != n or any(s < 1 for s in sizes):
        raise ValueError(f"access point groups of {sizes} clients for a server with {n} clients: they must be >= 1 and add up to {n}")
    return sizes


def logical(graph: nx.DiGraph) -> nx.DiGraph:
    """The actors of `graph` and who can send to whom: its direct links between actors, and an
    edge for each pair of neighbours through routers (netemu.engine.net.routing), with the class of
    the first hop.  What an algorithm's requirements are checked on; `graph` itself if it has
    no routers."""
    from netemu.engine.net.routing import ROUTER_ROLES, Routes  # topology builders need no routing otherwise

    roles = dict(graph.nodes(data="role"))
    if not any(r in ROUTER_ROLES for r in roles.values()):
        return graph
    routes = Routes({u: list(graph.successors(u)) for u in graph.nodes}, roles)
    g = nx.DiGraph()
    g.add_nodes_from((n, a) for n, a in graph.nodes(data=True) if n not in routes.routers)
    for u in g.nodes:
        for v in routes.neighbours(u):
            if graph.has_edge(u, v):
                g.add_edge(u, v, **graph.edges[u, v])
            else:
                path = routes.path(u, v)
                assert path is not None
                g.add_edge(u, v, link_class=graph.edges[path[0], path[1]].get("link_class", "link"), via=len(path) - 2)
    return g
