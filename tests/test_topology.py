"""Topology builders: roles, link classes, connectivity."""

import networkx as nx
import numpy as np
import pytest

from netemu import from_graphml, geometric, multi_server, random_peers, star


def test_a_star_has_uplinks_and_downlinks():
    g = star(3)
    assert g.nodes["server"]["role"] == "server" and g.nodes["client-2"]["role"] == "client"
    assert g.edges["client-0", "server"]["link_class"] == "uplink"
    assert g.edges["server", "client-0"]["link_class"] == "downlink"
    assert g.number_of_edges() == 6


def test_a_star_lists_its_nodes_and_links_in_client_order():
    """The order is what the topology's fingerprint, the links and the log follow."""
    g = star(3)
    assert list(g.nodes) == ["server", "client-0", "client-1", "client-2"]
    assert list(g.edges) == [("server", "client-0"), ("server", "client-1"), ("server", "client-2"),
                             ("client-0", "server"), ("client-1", "server"), ("client-2", "server")]
    assert list(g.predecessors("server")) == ["client-0", "client-1", "client-2"]
    assert g.nodes["client-0"] is not g.nodes["client-1"]  # each node its own attributes
    assert g.edges["server", "client-0"] is g.pred["client-0"]["server"]  # one dict per link, as networkx keeps it

def test_multi_server_links_servers_as_their_graph_and_gives_each_its_clients():
    g = multi_server(nx.path_graph(3), [2, 1, 2])
    assert sorted(n for n, r in g.nodes(data="role") if r == "server") == ["server-0", "server-1", "server-2"]
    assert g.nodes["client-2-1"]["server"] == "server-2"
    assert g.edges["server-0", "server-1"]["link_class"] == "server-server"
    assert not g.has_edge("server-0", "server-2")


def test_random_peers_are_connected_with_the_target_average_degree():
    g = random_peers(50, 3.0, np.random.default_rng(0))
    und = g.to_undirected()
    assert nx.is_connected(und) and und.number_of_edges() == 75
    assert random_peers(50, 3.0, np.random.default_rng(0)).edges == g.edges


def test_random_peers_refuse_an_impossible_degree():
    with pytest.raises(ValueError, match="10 nodes with average degree 1.0"):
        random_peers(10, 1.0, np.random.default_rng(0))


def test_geometric_links_nodes_closer_than_d_max():
    g = geometric({"a": (0, 0), "b": (1, 0), "c": (3, 0)}, d_max=1.5)
    assert set(g.edges) == {("a", "b"), ("b", "a")}


def test_graphml_files_load_with_string_names(tmp_path):
    path = tmp_path / "g.graphml"
    nx.write_graphml(nx.cycle_graph(4), path)
    g = from_graphml(path)
    assert set(g.nodes) == {"0", "1", "2", "3"} and g.number_of_edges() == 8
