"""Messages through routers, on shared links and over the reliable transport (netemu.engine.net.transfers)."""

import msgpack
import pytest

from helpers import Sender, Sink, logged_world, records
from netemu import Bernoulli, Constant, Link, World
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel

MB10 = 10_000_000


def star_behind_router(n, *, access=10e6, server=20e6, delay=0.001, clients_per_ap=0, ap=None, loss=None):
    g = T.behind_routers(T.star(n), server_link=True, clients_per_ap=clients_per_ap)
    links = {}
    for u, v, cls in g.edges(data="link_class"):
        bw = server if cls.startswith("server") else ap if cls.startswith("ap") else access
        links[(u, v)] = Link(Constant(delay), bandwidth=bw, link_class=cls, loss=loss if cls == "uplink" else None)
    return g, links


def uploads(n, size, model, **kw):
    """Every client sends `size` bytes to the server at t=0; (deliveries, log records)."""
    g, links = star_behind_router(n, **kw)
    world, buf = logged_world(g, seed=3, links=links, model=model)
    blob = bytes(size)
    for k in range(n):
        world.add(Sender(f"client-{k}", [(0.0, "server", "up", blob, 0)], linger=400.0))
    sink = world.add(Sink("server"))
    world.run()
    return sink.got, records(buf)


def test_a_client_behind_a_router_has_the_server_for_its_only_neighbour():
    g, links = star_behind_router(3)
    world = World(g, seed=0, links=links)
    assert world.network.neighbours("client-1") == ["server"]
    assert world.network.neighbours("server") == ["client-0", "client-1", "client-2"]
    assert "router" not in world.network.nodes
    assert [h[:2] for h in world.network.hops("client-1", "server")] == [("client-1", "router"), ("router", "server")]


def test_access_points_put_three_hops_between_a_client_and_its_server():
    g, links = star_behind_router(6, clients_per_ap=4, ap=50e6)
    net = World(g, seed=0, links=links).network
    assert [h[:2] for h in net.hops("server", "client-5")] == [("server", "router"), ("router", "ap-1"), ("ap-1", "client-5")]
    assert net.neighbours("client-5") == ["server"]


def test_sixteen_uploads_share_the_server_link_max_min():
    got, _ = uploads(16, MB10, NetModel(sharing="max-min"))
    total = sum(m.nbytes for _, m in got)
    # every transfer at 20 Mbit/s x 0.97 / 16 (< its 10 Mbit/s access link) until all bytes are through; then two 1 ms hops
    assert max(t for t, _ in got) == pytest.approx(total * 8 / (20e6 * 0.97) + 0.002, rel=1e-9)


def test_without_sharing_the_server_link_is_a_fifo_of_whole_messages():
    got, recs = uploads(16, MB10, NetModel())
    sizes = [m.nbytes for _, m in got]
    # store and forward: 8 s on every access link, then one after another on the server link
    assert max(t for t, _ in got) == pytest.approx(min(sizes) * 8 / 10e6 + 0.001 + sum(sizes) * 8 / 20e6 + 0.001, rel=1e-9)
    assert {r["hops"] for r in recs if r["event"] in ("send", "deliver")} == {2}


def test_a_lone_reliable_transfer_pays_the_handshake_and_slow_start():
    got, _ = uploads(1, 10_000, NetModel(sharing="max-min", transport="reliable"), delay=0.05)
    # RTT 0.2 s: handshake, then 10 kB fits the first window of 10 x 1448 bytes; delivered one way later
    (t, m), = got
    assert t == pytest.approx(0.2 + m.nbytes / (10e6 / 8 * 0.97) + 0.1, rel=1e-9)


def test_datagram_losses_name_the_hop_and_reliable_losses_cost_time_not_messages():
    kw = {"loss": Bernoulli(0.3), "server": 100e6}
    got_d, recs_d = uploads(20, 1000, NetModel(sharing="max-min"), **kw)
    drops = [r for r in recs_d if r["event"] == "drop"]
    assert drops and {r["reason"] for r in drops} == {"loss"} and {r["hop"] for r in drops} <= {f"client-{k}->router" for k in range(20)}
    assert len(got_d) + len(drops) == 20
    got_r, recs_r = uploads(20, 1000, NetModel(sharing="max-min", transport="reliable"), **kw)
    assert len(got_r) == 20 and not [r for r in recs_r if r["event"] == "drop"]
    attempts = {r["src"]: r["attempts"] for r in recs_r if r["event"] == "deliver"}
    assert max(attempts.values()) > 1
    # the first attempt drew what the datagram drew: the same messages were lost on it
    assert {r["src"] for r in drops} == {s for s, a in attempts.items() if a > 1}


def test_a_reliable_message_gives_up_after_the_connect_timeout_of_an_outage():
    g, links = star_behind_router(1)
    links[("router", "server")].add_outage(0.0, 100.0)
    world, buf = logged_world(g, seed=0, links=links, model=NetModel(transport="reliable", connect_timeout=5.0))
    world.add(Sender("client-0", [(0.0, "server", "up", 1, 0)], linger=400.0))
    world.add(Sink("server"))
    world.run()
    (drop,) = [r for r in records(buf) if r["event"] == "drop"]
    assert drop["reason"] == "timeout" and drop["hop"] == "router->server" and drop["last"] == "outage"
    assert drop["t"] == pytest.approx(5.0)


def test_a_full_queue_drops_a_datagram_at_that_hop():
    g, links = star_behind_router(4, server=1e6)
    links[("router", "server")].queue_bytes = 2500  # the message on the wire and one waiting (1,034 bytes each)
    world, buf = logged_world(g, seed=0, links=links, model=NetModel())
    for k in range(4):
        world.add(Sender(f"client-{k}", [(0.0, "server", "up", bytes(1000), 0)], linger=400.0))
    sink = world.add(Sink("server"))
    world.run()
    drops = [r for r in records(buf) if r["event"] == "drop"]
    assert len(sink.got) == 2 and [(r["reason"], r["hop"]) for r in drops] == [("queue", "router->server")] * 2


def test_the_same_seed_gives_the_same_log_bytes():
    kw = {"loss": Bernoulli(0.2)}
    model = NetModel(sharing="max-min", transport="reliable")
    assert uploads(12, 50_000, model, **kw)[1] == uploads(12, 50_000, model, **kw)[1]


def test_a_broadcast_through_the_router_reaches_every_client_once():
    g, links = star_behind_router(5)
    world, buf = logged_world(g, seed=0, links=links, model=NetModel(sharing="max-min"))
    world.add(Sender("server", [], linger=400.0))
    sinks = [world.add(Sink(f"client-{k}")) for k in range(5)]
    world.network.send_many("server", [f"client-{k}" for k in range(5)], "model", 0, msgpack.packb([1, 2, 3]))
    world.run()
    assert [len(s.got) for s in sinks] == [1] * 5 and all(s.got[0][1].payload == [1, 2, 3] for s in sinks)


def test_peers_in_a_graphml_file_reach_each_other_through_a_switch(tmp_path):
    import networkx as nx

    from netemu.engine.net.topology import from_graphml

    g = nx.Graph()
    g.add_node("sw", role="switch")
    for p in ("peer-0", "peer-1", "peer-2"):
        g.add_node(p, role="peer")
        g.add_edge(p, "sw")
    g.add_edge("peer-0", "peer-1")  # also a direct cable
    path = tmp_path / "lan.graphml"
    nx.write_graphml(g, path)
    net = World(from_graphml(path), seed=0).network
    assert net.neighbours("peer-0") == ["peer-1", "peer-2"] and net.neighbours("peer-2") == ["peer-0", "peer-1"]
    assert [h[:2] for h in net.hops("peer-0", "peer-1")] == [("peer-0", "peer-1")]  # the direct cable is shorter
    assert [h[:2] for h in net.hops("peer-2", "peer-0")] == [("peer-2", "sw"), ("sw", "peer-0")]
