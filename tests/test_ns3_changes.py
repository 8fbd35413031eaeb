"""ns-3 as the network engine: what a script changes during the run (links, crashes) acts in ns-3 too.

Skipped, saying why, where ns-3 3.37, pkg-config or g++ is missing (see tests/test_ns3_engine.py).
"""

from __future__ import annotations

import msgpack
import pytest

from helpers import logged_world, records
from netemu import Bernoulli, Constant, GilbertElliott, Link
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel
from netemu.ns3 import Ns3Missing, Ns3Refused
from netemu.ns3 import build as B
from test_ns3_engine import SCENARIO as ENGINE_SCENARIO

DELAY = 0.01
WIRE = 1478  # bytes of a full UDP packet on the wire: 1448 of payload, UDP 8, IPv4 20, PPP 2
PACKETS = 691  # a 1 MB message (msgpack, envelope) in 1448-byte UDP packets


@pytest.fixture(scope="module")
def engine():
    try:
        return B.binary()
    except Ns3Missing:
        pytest.skip(f"ns-3 3.37, pkg-config or g++ is missing (install: {B.INSTALL})")


def one_link_world(model, bandwidth=10e6):
    g = T.star(1)
    links = {(u, v): Link(Constant(DELAY), bandwidth=bandwidth, link_class=cls) for u, v, cls in g.edges(data="link_class")}
    world, buf = logged_world(g, seed=1, links=links, model=model)
    world.network.connect("server", lambda m: False)
    world.network.connect("client-0", lambda m: False)
    return world, buf


def upload(world, at, nbytes, src="client-0", dst="server"):
    world.at(at, lambda: world.network.send(src, dst, "up", 0, msgpack.packb(bytes(nbytes))))


def ends(buf):
    return [r for r in records(buf) if r["event"] in ("deliver", "drop")]


def test_a_bandwidth_cut_mid_transfer_slows_the_rest_of_it_from_that_instant(engine):
    """691 UDP packets at 10 Mbit/s, the link cut to 5 Mbit/s at 0.4 s: the packets not sent by then take twice as long."""
    world, buf = one_link_world(NetModel(engine="ns3", qdisc="fifo"))
    upload(world, 0.0, 1_000_000)
    link = world.network.link("client-0", "server")
    world.at(0.4, lambda: setattr(link, "bandwidth", 5e6))
    world.env.run()
    (deliver,) = ends(buf)
    fast = PACKETS * WIRE * 8 / 10e6  # 0.817 s at 10 Mbit/s: 0.417 s of it left at 0.4 s, twice that at 5 Mbit/s
    assert deliver["event"] == "deliver" and deliver["t"] == pytest.approx(0.4 + 2 * (fast - 0.4) + DELAY, abs=2 * WIRE * 8 / 5e6)


def test_a_bandwidth_cut_mid_tcp_transfer_lengthens_it_as_the_bytes_left_over_the_new_rate(engine):
    def finish(cut: bool) -> float:
        world, buf = one_link_world(NetModel(engine="ns3", qdisc="fifo", transport="reliable"))
        upload(world, 0.0, 2_000_000)
        link = world.network.link("client-0", "server")
        if cut:
            world.at(1.0, lambda: setattr(link, "bandwidth", 2.5e6))
        world.env.run()
        (deliver,) = ends(buf)
        return deliver["t"]

    whole, cut = finish(False), finish(True)
    # what was left at 1 s took (whole - 1) s at 10 Mbit/s, so four times that at 2.5 Mbit/s; TCP at a quarter of the
    # rate keeps the link as busy (its window is already above the new bandwidth-delay product).  Measured: 3.766 s
    # against 3.796 s (whole: 1.699 s); 2 % leaves room for the packets the queue drops when the rate falls
    assert cut == pytest.approx(1.0 + 4 * (whole - 1.0), rel=0.02)


@pytest.mark.parametrize("in_place", [False, True])
def test_a_delay_changed_on_both_directions_delays_the_next_message_by_the_difference(engine, in_place):
    def arrival(delay: float) -> float:
        world, buf = one_link_world(NetModel(engine="ns3", qdisc="fifo"))
        net = world.network

        def slower():
            for a, b in (("client-0", "server"), ("server", "client-0")):
                if in_place:  # the link's own component, changed where it is
                    net.link(a, b).latency.delay = delay
                else:
                    net.link(a, b).latency = Constant(delay)
        world.at(0.5, slower)
        upload(world, 1.0, 1000)
        world.env.run()
        (deliver,) = ends(buf)
        return deliver["t"]

    assert arrival(0.05) - arrival(DELAY) == pytest.approx(0.04, abs=1e-9)


@pytest.mark.parametrize(("src", "dst", "key", "value", "message"), [
    # one channel, one delay: a delay changed one way only
    ("client-0", "server", "latency", Constant(0.05), r"during the run \(seen at virtual time 1\) cannot reach ns-3: links server->client-0 "
                                                        r"and client-0->server have delays 0.01 and 0.05 s; .* the same delay both ways"),
    ("server", "client-0", "loss", GilbertElliott(0.1, 0.5), r"link server->client-0: loss model GilbertElliott .* \(accepted: bernoulli"),
    ("client-0", "server", "qdisc", "fair", r"link client-0->server: qdisc changed during the run \(None -> fair\)"),
])
def test_a_change_ns3_cannot_take_during_the_run_is_refused_naming_the_link_and_key(engine, src, dst, key, value, message):
    world, _ = one_link_world(NetModel(engine="ns3", qdisc="fifo"))
    upload(world, 0.0, 1000)
    world.at(0.5, lambda: setattr(world.network.link(src, dst), key, value))
    upload(world, 1.0, 1000)
    with pytest.raises(Ns3Refused, match=message):
        world.env.run()


def test_a_loss_set_during_the_run_loses_the_packets_sent_after_it(engine):
    world, buf = one_link_world(NetModel(engine="ns3", qdisc="fifo"))
    upload(world, 0.0, 1000)
    world.at(0.5, lambda: setattr(world.network.link("client-0", "server"), "loss", Bernoulli(1.0)))
    upload(world, 1.0, 1000)
    world.env.run()
    first, second = ends(buf)
    assert first["event"] == "deliver" and (second["event"], second["reason"]) == ("drop", "loss")


def test_an_outage_added_during_the_run_stalls_tcp_until_it_ends(engine):
    world, buf = one_link_world(NetModel(engine="ns3", qdisc="fifo", transport="reliable", rto_min=0.2))
    upload(world, 0.0, 1000)
    world.at(0.5, lambda: world.network.link("client-0", "server").add_outage(1.0, 3.0))
    upload(world, 1.5, 1000)
    world.env.run()
    first, second = ends(buf)
    # the second message's segment is lost in [1, 3) and sent again after timeouts of 0.2, 0.4, 0.8 and 1.6 s (rto_min,
    # doubling): the fifth copy, at 4.5 s, is the first after the outage
    assert first["t"] < 0.1 and second["event"] == "deliver" and second["t"] == pytest.approx(1.5 + 0.2 * 15 + DELAY, abs=2e-3)


def test_a_crash_ends_what_its_node_was_receiving_and_its_connections_never_resume(engine):
    """A 1 MB upload to the server, which crashes at 0.3 s and recovers at 1 s: the upload is dropped (crash) at
    0.3 s; another 1 MB upload at 1.5 s then takes what it takes on an idle network (the dead connection's packets are
    lost for good, and take no bandwidth)."""
    model = NetModel(engine="ns3", qdisc="fifo", transport="reliable", connection="per-message", rto_min=0.2)
    world, buf = one_link_world(model)
    upload(world, 0.0, 1_000_000)
    world.crash("server", at=0.3, recover_at=1.0)
    upload(world, 1.5, 1_000_000)
    world.env.run()
    first, second = ends(buf)
    assert (first["event"], first["reason"], first["t"]) == ("drop", "crash", 0.3)

    alone, buf = one_link_world(model)
    upload(alone, 1.5, 1_000_000)
    alone.env.run()
    (reference,) = ends(buf)
    assert second["event"] == "deliver" and second["t"] == pytest.approx(reference["t"], abs=1e-6)


def test_a_node_a_script_sets_down_directly_is_down_in_ns3_from_that_instant(engine):
    world, buf = one_link_world(NetModel(engine="ns3", qdisc="fifo", transport="reliable"))
    upload(world, 0.0, 1_000_000)
    world.at(0.3, lambda: setattr(world.network.nodes["server"], "up", False))  # not through world.crash
    world.env.run()
    (drop,) = ends(buf)
    assert (drop["event"], drop["reason"], drop["t"]) == ("drop", "crash", 0.3)


def test_a_message_sent_to_a_crashed_node_waits_for_it_as_tcp_does(engine):
    """Sent while the server is down (0.3 s to 1 s), its SYN is lost: ns-3 sends it again 3 s later (ConnTimeout)."""
    world, buf = one_link_world(NetModel(engine="ns3", qdisc="fifo", transport="reliable", connection="per-message"))
    world.crash("server", at=0.3, recover_at=1.0)
    upload(world, 0.5, 1000)
    world.env.run()
    (deliver,) = ends(buf)
    assert deliver["event"] == "deliver" and 3.5 < deliver["t"] < 3.6


def test_a_datagram_to_or_from_a_crashed_node_is_dropped_as_crash(engine):
    world, buf = one_link_world(NetModel(engine="ns3", qdisc="fifo"))
    upload(world, 0.0, 1_000_000)  # still on its way at 0.3 s
    world.crash("client-0", at=0.3)
    upload(world, 0.5, 1000, src="server", dst="client-0")
    world.env.run()
    first, second = ends(buf)
    assert (first["event"], first["reason"], first["t"]) == ("drop", "crash", 0.3)
    # lost where it reaches the crashed node: its packet's transmission and the link's delay after it was sent
    assert (second["event"], second["reason"]) == ("drop", "crash") and 0.5 + DELAY < second["t"] < 0.5 + DELAY + 0.002


# test_ns3_engine's star scenario, with a script, 3 clients and 10 rounds
SCENARIO = 'script = "events.py"\n' + ENGINE_SCENARIO.replace('name = "ns3_star"', 'name = "ns3_scripted"').replace(
    "rounds = 3", "rounds = 10").replace("clients = 4", "clients = 3")

EVENTS = '''
from netemu import Bernoulli, Constant


def setup(world):
    net = world.network

    def worse():
        net.link("client-0", "server").bandwidth = 1e4
        net.link("client-1", "server").loss = Bernoulli(0.05)
        for a, b in (("client-2", "server"), ("server", "client-2")):
            net.link(a, b).latency = Constant(0.2)
    world.at(3.0, worse)
    world.at(3.5, lambda: net.link("server", "client-1").add_outage(6.0, 7.0))
    world.crash("client-2", at=8.0, recover_at=10.0)
'''


def test_a_scripted_run_on_ns3_meets_its_changes_and_replays_without_ns3(engine, tmp_path, monkeypatch):
    import json

    from netemu.cli import main

    (tmp_path / "events.py").write_text(EVENTS)
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    assert main(["run", str(scenario), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    recs = [json.loads(line) for line in (tmp_path / "run" / "messages.jsonl").read_text().splitlines()]
    up = [r for r in recs if r["event"] == "deliver" and r["dst"] == "server"]

    def delays(src: str, after: bool) -> list[float]:
        return [r["delay"] for r in up if r["src"] == src and (r["t"] - r["delay"] > 3.0) == after]

    # from 3 s client-0's uplink carries 10 kbit/s (its 126-byte updates take 0.1 s) and client-2's link delays 0.2 s
    assert max(delays("client-0", False)) < 0.05 < 0.1 < min(delays("client-0", True))  # (the first: a handshake more)
    assert max(delays("client-2", False)) < 0.05 and min(delays("client-2", True)) > 0.2
    assert [r["t"] for r in recs if r["event"] == "crash"] == [8.0] and len(up) == 29  # client-2 crashed in round 5
    # replayed from the trace: the same log and metrics, and ns-3 is never started
    monkeypatch.setattr("netemu.ns3.engine.binary", lambda: pytest.fail("the replay started ns-3"))
    assert main(["replay", str(tmp_path / "run" / "trace.msgpack"), "--scenario", str(scenario), "--out", str(tmp_path / "again"),
                 "--quiet"]) == 0
    for name in ("messages.jsonl", "metrics.csv"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "run" / name).read_bytes()


CRASHES = '''
def setup(world):
    world.crash("client-2", at=1.95, recover_at=5.0)  # while the server's round-1 model is on its way to it
    world.crash("client-1", at=3.4, recover_at=6.0)  # while its round-1 update is on its way to the server
'''


def test_crashes_end_the_same_messages_as_in_the_flow_model_but_what_a_crashed_node_was_sending(engine, tmp_path):
    """FedAvg with 400 kB models, 4 rounds; two clients crash mid-transfer and recover (in both engines, the rounds
    after run as before).  Every message ends as the flow
    model (sharing = "max-min", qdisc = "fair") ends it, with one difference the models allow: an update whose
    sender crashed while sending it is dropped (crash) in ns-3, where the flow model, which has no sender state,
    delivers it."""
    import json

    from netemu.cli import main

    (tmp_path / "events.py").write_text(CRASHES)
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.replace("dim = 10", "dim = 50000\ntest_samples = 10"))  # 400 kB models, a small test set
    ends = {}
    for engine_, sets in (("ns3", ["run.rounds=4"]), ("flow", ["run.rounds=4", "network.engine=flow", "network.sharing=max-min",
                                                               "network.qdisc=fair"])):
        assert main(["run", str(scenario), "--out", str(tmp_path / engine_), "--quiet", *(a for s in sets for a in ("--set", s))]) == 0
        recs = [json.loads(line) for line in (tmp_path / engine_ / "messages.jsonl").read_text().splitlines()]
        ends[engine_] = {(r["src"], r["dst"], r["kind"], r["round"]): (r["event"], r.get("reason"), r["t"])
                         for r in recs if r["event"] in ("deliver", "drop")}
    ns3, flow = ends["ns3"], ends["flow"]
    assert set(ns3) == set(flow) and len(ns3) == 23  # 4 rounds x 3 clients x 2, but the update of client-2's lost model
    differ = {k for k in ns3 if ns3[k][:2] != flow[k][:2]}
    assert differ == {("client-1", "server", "update", 1)}
    assert ns3[("client-1", "server", "update", 1)] == ("drop", "crash", 3.4) and flow[("client-1", "server", "update", 1)][0] == "deliver"
    # the model on its way to client-2: dropped as crash by both, at the crash in ns-3, on arrival in the flow model
    lost = ("server", "client-2", "model", 1)
    assert ns3[lost] == ("drop", "crash", 1.95) and flow[lost][:2] == ("drop", "crash") and flow[lost][2] > 1.95
