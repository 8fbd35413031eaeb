"""A link's own queue discipline (`qdisc` in a link's table): it overrides [network] qdisc for that link, in the
flow model (1/RTT weights and FIFO overflow where a flow crosses it) and in ns-3 (DropTail or FqCoDel per device)."""

import msgpack
import pytest

from netemu import Constant, Link, World
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel
from netemu.scenario.build import build_world
from netemu.scenario.schema import ScenarioError
from test_network_scenario import scenario

RELIABLE = {"sharing": "max-min", "transport": "reliable", "rto_min": 1.0}


def uploads(model, qdisc=lambda cls: None, n=8, nbytes=100_000):
    """n uploads at t = 0 through a 20 Mbit/s server link, client k 1 + k ms from the router (uneven RTTs);
    each link's qdisc `qdisc(link class)`; the delivery times in client order."""
    g = T.behind_routers(T.star(n), server_link=True)
    links = {}
    for u, v, cls in g.edges(data="link_class"):
        k = int((u if cls == "uplink" else v).rsplit("-", 1)[1]) if cls in ("uplink", "downlink") else 0
        links[(u, v)] = Link(Constant(0.001 * (1 + k)), bandwidth=20e6 if cls.startswith("server") else 10e6, link_class=cls,
                             qdisc=qdisc(cls))
    world = World(g, seed=0, links=links, model=model)
    done = {}
    world.network.connect("server", lambda m: done.__setitem__(m.src, m.delivered_at))
    for k in range(n):
        world.at(0.0, lambda s=f"client-{k}": world.network.send(s, "server", "up", 0, msgpack.packb(bytes(nbytes))))
    world.env.run()
    return [done[f"client-{k}"] for k in range(n)]


def test_every_link_fifo_is_the_network_s_fifo_and_every_link_fair_the_network_s_fair():
    fifo, fair = NetModel(**RELIABLE, qdisc="fifo"), NetModel(**RELIABLE)
    assert uploads(fair, lambda cls: "fifo") == uploads(fifo)
    assert uploads(fifo, lambda cls: "fair") == uploads(fair)
    assert uploads(fifo) != uploads(fair)


def test_a_fifo_server_link_weights_the_flows_through_it_by_their_rtt():
    fair = NetModel(**RELIABLE)
    mixed = uploads(fair, lambda cls: "fifo" if cls.startswith("server") else None)
    assert mixed != uploads(fair)
    assert mixed == sorted(mixed)  # behind one FIFO the shortest RTT's window fills the queue first: its upload ends first


def test_a_link_qdisc_is_a_scenario_key_checked_like_the_network_s(tmp_path):
    sc = scenario(tmp_path, "server_link = { bandwidth = 20e6, qdisc = \"fifo\" }",
                  '[network]\nsharing = "max-min"\ntransport = "reliable"\n[links.uplink]\nqdisc = "fair"')
    net = build_world(sc, 0, 0).network
    assert net.links[("router", "server")].qdisc == "fifo" and net.links[("client-0", "router")].qdisc == "fair"
    assert net.links[("router", "client-0")].qdisc is None  # the downlink class says nothing: the network's
    for extra, accepts in [('[links.uplink]\nqdisc = "lifo"', "one of fair, fifo"),
                           ('[network]\nsharing = "max-min"\n[links.uplink]\nqdisc = "fifo"', 'needs transport = "reliable"'),
                           ('[links.uplink]\nqdisc = "fair"', 'needs sharing = "max-min"')]:
        with pytest.raises(ScenarioError) as err:
            scenario(tmp_path, extra=extra)
        (issue,) = err.value.issues
        assert issue.key == "links.uplink.qdisc" and accepts in issue.accepts


def test_ns3_gets_each_direction_s_queue_discipline():
    from netemu.ns3.topology import setup_lines

    g = T.behind_routers(T.star(1), server_link=True)
    links = {(u, v): Link(Constant(0.001), bandwidth=10e6, link_class=cls, qdisc="fifo" if cls == "server_uplink" else None)
             for u, v, cls in g.edges(data="link_class")}
    lines = setup_lines(list(g.nodes), links, NetModel(engine="ns3", transport="reliable"), 1)
    discs = {" ".join(line.split()[1:3]): line.split()[-2:] for line in lines if line.startswith("link ")}
    server, router = list(g.nodes).index("server"), list(g.nodes).index("router")
    pair = f"{min(server, router)} {max(server, router)}"
    up = 0 if router < server else 1  # router -> server is the server_uplink: the pair's first direction if router is lower
    assert discs[pair][up] == "fifo" and discs[pair][1 - up] == "fq_codel"
    assert not any(line.startswith("queue ") for line in lines)


def test_a_link_s_qdisc_is_deterministic_so_the_trace_header_leaves_it_out(tmp_path):
    """A trace records what was drawn; a queue discipline draws nothing, so a replay may change it (and a scenario
    that does not set it hashes and traces as before)."""
    from netemu.scenario.settings import network_model

    sc = scenario(tmp_path, extra='[network]\nsharing = "max-min"\ntransport = "reliable"\n[links.uplink]\nqdisc = "fifo"')
    assert "qdisc" not in network_model(sc.settings)["links"]["uplink"]
