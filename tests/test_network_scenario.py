"""The scenario keys of the network model: [network], [topology] server_link / access_points, queue_bytes."""

import pytest

from netemu.scenario import load_scenario
from netemu.scenario.build import build_world
from netemu.scenario.schema import ScenarioError

BASE = """
[run]
rounds = 2
[topology]
kind = "star"
clients = 6
{topology}
{extra}
[nodes]
speed = 200.0
[data]
kind = "linear"
dim = 3
[[algorithm]]
name = "fedavg"
round_time = 5.0
"""


def scenario(tmp_path, topology="", extra=""):
    path = tmp_path / "s.toml"
    path.write_text(BASE.format(topology=topology, extra=extra))
    return load_scenario(path)


def test_a_server_link_and_access_points_put_routers_between_clients_and_server(tmp_path):
    sc = scenario(tmp_path, 'server_link = { bandwidth = 20e6 }\naccess_points = { clients_per_ap = 4, bandwidth = 50e6 }',
                  '[network]\nsharing = "max-min"')
    world = build_world(sc, 0, 0)
    net = world.network
    assert [h[:2] for h in net.hops("client-5", "server")] == [("client-5", "ap-1"), ("ap-1", "router"), ("router", "server")]
    assert net.links[("router", "server")].bandwidth == 20e6 and net.links[("ap-1", "router")].bandwidth == 50e6
    assert net.model.sharing == "max-min" and "router" not in net.nodes
    world.run()


def test_a_links_table_for_a_shared_class_wins_over_the_topology_key(tmp_path):
    sc = scenario(tmp_path, "server_link = { bandwidth = 20e6 }", "[links.server_uplink]\nbandwidth = 5e6")
    net = build_world(sc, 0, 0).network
    assert net.links[("router", "server")].bandwidth == 5e6 and net.links[("server", "router")].bandwidth == 20e6


@pytest.mark.parametrize(("extra", "key", "says"), [
    ('[network]\nsharing = "fair"', "network.sharing", "one of none, max-min"),
    ('[network]\ntransport = "tcp"', "network.transport", "one of datagram, reliable"),
    ("[network]\nbandwidth_factor = 1.5", "network.bandwidth_factor", "in (0, 1]"),
    ("[network]\nwindows = 3", "network.windows", "unknown key"),
    ('[network]\ntransport = "reliable"\nconnection = "pooled"', "network.connection", "one of persistent, per-message"),
    ("[links.uplink]\nqueue_bytes = -1", "links.uplink.queue_bytes", ">= 0 bytes"),
])
def test_a_bad_network_key_is_named_with_what_is_accepted(tmp_path, extra, key, says):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, extra=extra)
    assert any(i.key == key and says in i.accepts for i in err.value.issues), err.value


def test_shared_links_are_only_for_star_and_multi_server(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE.format(topology="", extra="").replace('kind = "star"\nclients = 6', 'kind = "random_peers"\npeers = 4\nserver_link = { bandwidth = 1e6 }'))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert any(i.key == "topology.server_link" and "only for the star and multi_server" in i.accepts for i in err.value.issues)


def test_the_default_network_model_is_the_historical_one(tmp_path):
    net = build_world(scenario(tmp_path), 0, 0).network
    assert net.model.default and net.routes is None and net._transfers is None


def test_a_router_cannot_crash(tmp_path):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, "server_link = { bandwidth = 20e6 }", '[[nodes.crash]]\nnode = "router"\nat = 1.0')
    assert any(i.key == "nodes.crash[0].node" and "a router does not crash" in i.accepts for i in err.value.issues)


@pytest.mark.parametrize("key", ["rto_min = 1.0", "connect_timeout = 4.0", "mss = 536", "initial_window = 4", "handshake = false",
                                 'connection = "per-message"'])
def test_a_transport_key_without_the_reliable_transport_is_refused_by_name(tmp_path, key):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, extra=f'[network]\nsharing = "max-min"\n{key}')
    (issue,) = err.value.issues
    assert issue.key == f"network.{key.split(' =')[0]}" and 'only with transport = "reliable"' in issue.accepts


def test_queue_bytes_is_refused_under_max_min_where_no_queue_can_overflow(tmp_path):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, extra='[network]\nsharing = "max-min"\n[links.uplink]\nqueue_bytes = 4000')
    (issue,) = err.value.issues
    assert issue.key == "links.uplink.queue_bytes" and 'only with transport = "reliable"' in issue.accepts


def test_queue_bytes_and_a_fifo_qdisc_act_under_max_min_with_the_reliable_transport(tmp_path):
    sc = scenario(tmp_path, 'server_link = { bandwidth = 20e6 }',
                  '[network]\nsharing = "max-min"\ntransport = "reliable"\nqdisc = "fifo"\n[links.uplink]\nqueue_bytes = 4000')
    world = build_world(sc, 0, 0)
    assert world.network.model.fifo and world.network.links[("client-0", "router")].queue_bytes == 4000


def test_a_fair_qdisc_is_refused_under_sharing_none(tmp_path):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, extra='[network]\nqdisc = "fair"')
    (issue,) = err.value.issues
    assert issue.key == "network.qdisc" and issue.value == "fair" and 'needs sharing = "max-min"' in issue.accepts


def test_queue_bytes_acts_on_direct_links_of_the_default_model():
    # four 1 kB datagrams at t = 0 on one 1 Mbit/s link bounded to 2,500 bytes: the one on the
    # wire and one waiting pass, the other two find the queue full (as behind a router)
    from helpers import Sender, Sink, logged_world, records
    from netemu import Link
    from netemu.engine.net import topology as T

    g = T.star(1)
    links = {("client-0", "server"): Link(bandwidth=1e6, link_class="uplink", queue_bytes=2500)}
    world, buf = logged_world(g, seed=0, links=links)
    world.add(Sender("client-0", [(0.0, "server", "up", bytes(1000), 0)] * 4, linger=10.0))
    sink = world.add(Sink("server"))
    world.run()
    assert len(sink.got) == 2 and [r["reason"] for r in records(buf) if r["event"] == "drop"] == ["queue", "queue"]


def test_queue_bytes_under_max_min_without_the_reliable_transport_is_refused_in_python_too():
    from netemu import Link, World
    from netemu.engine.net import topology as T
    from netemu.engine.net.model import NetModel
    from netemu.engine.net.network import NetworkError

    links = {("client-0", "server"): Link(bandwidth=1e6, link_class="uplink", queue_bytes=2500)}
    with pytest.raises(NetworkError, match="queue_bytes"):
        World(T.star(1), seed=0, links=links, model=NetModel(sharing="max-min"))


UNEVEN = """access_points = [
  { clients = 2, bandwidth = 50e6, latency = { model = "constant", delay = 0.01 } },
  { clients = 4, bandwidth = 5e6 },
]"""


def test_uneven_access_point_groups_give_each_access_point_its_clients_and_link(tmp_path):
    sc = scenario(tmp_path, UNEVEN, '[network]\nsharing = "max-min"\n[links.ap_downlink]\nbandwidth = 1e9')
    net = build_world(sc, 0, 0).network
    assert [h[1] for h in net.hops("client-1", "server")][:1] == ["ap-0"] and net.hops("client-2", "server")[0][1] == "ap-1"
    assert net.links[("ap-0", "server")].bandwidth == 50e6 and net.links[("ap-1", "server")].bandwidth == 5e6
    assert net.links[("ap-0", "server")].latency.delay == 0.01 and net.links[("ap-1", "server")].latency.delay == 0.0
    # a group's keys apply over its class's table: ap-1's downlink keeps [links.ap_downlink]'s bandwidth
    assert net.links[("server", "ap-0")].bandwidth == 50e6 and net.links[("server", "ap-1")].bandwidth == 5e6


def test_uneven_access_point_groups_must_hold_every_client(tmp_path):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, UNEVEN.replace("clients = 4", "clients = 3"))
    (issue,) = err.value.issues
    assert issue.key == "topology.access_points" and "add up to the 6 clients" in issue.accepts


def test_a_scenario_with_uneven_access_points_runs_into_a_folder_and_replays(tmp_path):
    from netemu.cli import main

    path = tmp_path / "s.toml"
    path.write_text(BASE.format(topology=UNEVEN, extra='[network]\nsharing = "max-min"\ntransport = "reliable"'))
    assert main(["run", str(path), "--out", str(tmp_path / "a"), "--quiet", "--set", "output.plots=false"]) == 0
    assert main(["replay", str(tmp_path / "a" / "trace.msgpack"), "--scenario", str(tmp_path / "a" / "scenario.toml"),
                 "--out", str(tmp_path / "b"), "--quiet", "--set", "output.plots=false"]) == 0
    assert (tmp_path / "a" / "messages.jsonl").read_bytes() == (tmp_path / "b" / "messages.jsonl").read_bytes()
