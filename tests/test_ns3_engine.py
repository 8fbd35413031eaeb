"""ns-3 as the network engine ([network] engine = "ns3", netemu.ns3): lockstep, outputs, replay, failures.

The tests that run ns-3 skip, saying why, where ns-3 3.37 (Debian's libns3-dev), pkg-config or g++ is
missing; the engine is built once per machine into the cache (netemu.ns3.build), ~15 s the first time.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import msgpack
import pytest

from helpers import Sender, Sink, logged_world, records
from netemu import Actor, Bernoulli, Constant, Exponential, Link
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel
from netemu.errors import InputError
from netemu.ns3 import Ns3Crashed, Ns3Missing, Ns3Unsupported
from netemu.ns3 import build as B
from netemu.trace.body import Decoder3, Encoder

ROOT = Path(__file__).resolve().parent.parent
NS3 = NetModel(engine="ns3", transport="reliable", qdisc="fifo")
DELAY = 0.01


def _engine() -> Path | None:
    try:
        return B.binary()
    except Ns3Missing:
        return None


@pytest.fixture(scope="module")
def engine():
    binary = _engine()
    if binary is None:
        pytest.skip(f"ns-3 3.37, pkg-config or g++ is missing (install: {B.INSTALL})")
    return binary


def star_links(g, bandwidth=10e6, latency=None):
    return {(u, v): Link(latency or Constant(DELAY), bandwidth=bandwidth, link_class=cls) for u, v, cls in g.edges(data="link_class")}


class Echo(Actor):
    """Answers every message at once with one of the same size."""

    daemon = True

    async def run(self):
        while True:
            msg = await self.recv()
            self.send(msg.src, "echo", msg.payload, round=msg.round)


def test_an_actor_reacts_to_a_completion_at_its_exact_time_and_ns3_never_runs_ahead(engine):
    g = T.star(2)
    world, buf = logged_world(g, seed=1, links=star_links(g), model=NS3)
    # client-0 sends at t = 0 and, while its first message is in ns-3, at asyncio timers 0.013 and 0.5 s
    world.add(Sender("client-0", [(0.0, "server", "up", bytes(20_000), 0), (0.013, "server", "up", bytes(3000), 1),
                                  (0.5, "server", "up", bytes(100), 2)], linger=5.0))
    world.add(Echo("server"))
    sink = world.add(Sink("client-1"))
    world.run()
    recs = records(buf)
    sends = {r["id"]: r for r in recs if r["event"] == "send"}
    delivers = {r["id"]: r for r in recs if r["event"] == "deliver"}
    assert set(sends) == set(delivers) and len(sends) == 6  # every message ends delivered: 3 up, 3 echoes
    for r in recs:
        if r["event"] == "send" and r["kind"] == "echo":  # sent by the server at the instant its request arrived
            request = next(d for d in delivers.values() if d["kind"] == "up" and d["round"] == r["round"])
            assert r["t"] == request["t"]
    # a persistent connection delivers in order; 20 kB + handshake over 2 x 10 ms at 10 Mbit/s: ~ 3 RTTs
    ups = sorted((d for d in delivers.values() if d["kind"] == "up"), key=lambda d: d["round"])
    assert ups[0]["t"] < ups[1]["t"] and 0.05 < ups[0]["t"] < 0.12
    assert sink.got == []


def test_the_same_world_and_seed_give_the_same_log_byte_for_byte(engine):
    def once() -> bytes:
        g = T.star(3)
        links = star_links(g)
        links[("client-1", "server")].loss = Bernoulli(0.05)  # ns-3's loss draws, seeded from the world's seed
        world, buf = logged_world(g, seed=7, links=links, model=NS3)
        world.add(Sender("client-0", [(0.0, "server", "up", bytes(50_000), 0), (0.3, "server", "up", bytes(9000), 1)], linger=5.0))
        world.add(Sender("client-1", [(0.0, "server", "up", bytes(200_000), 0)], linger=5.0))
        world.add(Echo("server"))
        world.run()
        return buf.getvalue()

    first = once()
    assert first == once() and first.count(b'"deliver"') == 6


def test_the_scenario_chooses_ns3s_tcp_congestion_control(engine):
    def upload(**tcp) -> float:
        g = T.star(1)
        links = star_links(g)
        links[("client-0", "server")].loss = Bernoulli(0.02)
        world, buf = logged_world(g, seed=3, links=links, model=NetModel(engine="ns3", transport="reliable", qdisc="fifo", **tcp))
        world.network.connect("server", lambda m: False)
        world.at(0.0, lambda: world.network.send("client-0", "server", "up", 0, msgpack.packb(bytes(500_000))))
        world.env.run()
        (deliver,) = [r for r in records(buf) if r["event"] == "deliver"]
        return deliver["t"]

    times = {upload(), upload(congestion_control="newreno", sack=False), upload(congestion_control="bbr")}
    assert len(times) == 3 and min(times) > 0.4  # three TCPs, three answers; 500 kB at 10 Mbit/s take 0.4 s at best


def test_ns3_runs_hundreds_of_kilobytes_in_one_round_trip_time_per_window(engine):
    """One 1 MB upload through a router at 10 Mbit/s: what tools/ns3/transfers.cc gives for it (0.836 s)."""
    g = T.behind_routers(T.star(1), server_link=True)
    links = {(u, v): Link(Constant(0.001), bandwidth=20e6 if cls.startswith("server") else 10e6, link_class=cls)
             for u, v, cls in g.edges(data="link_class")}
    world, buf = logged_world(g, seed=1, links=links, model=NetModel(engine="ns3", transport="reliable", rto_min=1.0, qdisc="fifo"))
    world.network.connect("server", lambda m: False)
    world.at(0.0, lambda: world.network.send("client-0", "server", "up", 0, msgpack.packb(bytes(1_000_000))))
    world.env.run()
    (deliver,) = [r for r in records(buf) if r["event"] == "deliver"]
    assert deliver["t"] == pytest.approx(0.8364072, rel=1e-3)  # transfers.cc, star-up-clients=1 (63 more bytes here)


def test_a_connection_that_delivers_nothing_for_connect_timeout_drops_its_message_as_a_timeout(engine):
    g = T.star(1)
    links = star_links(g, bandwidth=1e6)
    links[("client-0", "server")].add_outage(0.0, 100.0)  # every packet client-0 -> server lost
    model = NetModel(engine="ns3", transport="reliable", connect_timeout=2.0, qdisc="fifo")
    world, buf = logged_world(g, seed=1, links=links, model=model)
    world.network.connect("server", lambda m: False)
    world.at(0.0, lambda: world.network.send("client-0", "server", "up", 0, b"x" * 1000))
    world.env.run()
    (drop,) = [r for r in records(buf) if r["event"] == "drop"]
    assert drop["reason"] in "timeout" and drop["t"] == pytest.approx(2.0, abs=1e-6)


def test_what_ns3_links_cannot_express_is_refused_naming_the_link(engine):
    g = T.star(1)
    with pytest.raises(Ns3Unsupported, match=r"link .*: latency Exponential is random"):
        logged_world(g, seed=1, links=star_links(g, latency=Exponential(0.01)), model=NS3)
    one_way = {(u, v): link for (u, v), link in star_links(g).items() if u == "server"}
    with pytest.raises(Exception, match="reverse link"):
        logged_world(g.edge_subgraph([("server", "client-0")]).copy(), seed=1, links=one_way, model=NS3)


def test_missing_ns3_or_gxx_is_a_bad_input_naming_the_install_line(monkeypatch, tmp_path):
    monkeypatch.setattr(B.shutil, "which", lambda name: None)
    with pytest.raises(Ns3Missing, match="apt-get install -y libns3-dev") as err:
        B.binary()
    assert isinstance(err.value, InputError) and err.value.exit_code == 2


def test_an_engine_that_crashes_mid_run_stops_the_run_naming_it(engine, monkeypatch, tmp_path):
    fake = tmp_path / "engine"
    fake.write_text("#!/bin/sh\nwhile read l; do [ \"$l\" = build ] && break; done\necho ok\nread l\necho boom >&2\nexit 7\n")
    fake.chmod(0o755)
    monkeypatch.setattr("netemu.ns3.engine.binary", lambda: fake)
    g = T.star(1)
    world, _ = logged_world(g, seed=1, links=star_links(g), model=NS3)
    world.at(0.0, lambda: world.network.send("client-0", "server", "up", 0, b"x" * 1000))
    with pytest.raises(Ns3Crashed, match=r"ns-3 engine .* \(exit status 7\):\nboom"):
        world.env.run()


def test_an_ns3_outcome_is_written_and_read_back_by_the_trace_body():
    out: list = []
    enc = Encoder(out.append)
    out.append(enc.section("fedavg", 0))
    out.append(enc.entry(("ns3", "client-0", "server", 3, 1), (None, 1.25)))
    out.append(enc.entry(("ns3", "server", "client-0", 3, 0), ("reset", 2.5)))
    dec = Decoder3({"fedavg"}, 1)
    fates = [got for e in out if (got := dec.fate(e)) is not None]
    assert fates == [("fedavg", 0, ("ns3", "client-0", "server", 3, 1), (None, 1.25)),
                     ("fedavg", 0, ("ns3", "server", "client-0", 3, 0), ("reset", 2.5))]
    with pytest.raises(ValueError, match="delivered, 'timeout', 'reset', 'loss'"):
        enc.entry(("ns3", "a", "b", 0, 0), ("expired", 1.0))


SCENARIO = """
[run]
name = "ns3_star"
seed = 3
rounds = 3

[topology]
kind = "star"
clients = 4

[network]
engine = "ns3"
transport = "reliable"
qdisc = "fifo"

[links.uplink]
latency = { model = "constant", delay = 0.01 }
bandwidth = 10e6

[links.downlink]
latency = { model = "constant", delay = 0.01 }
bandwidth = 20e6

[nodes]
speed = 200.0

[data]
kind = "linear"
dim = 10
samples_min = 20
samples_max = 80
noise = 0.1

[task]
name = "linear"
lr = 0.1
steps = 5

[[algorithm]]
name = "fedavg"
round_time = 5.0

[output]
plots = false
"""


def _cli(*args: str) -> int:
    from netemu.cli import main

    return main(list(args))


def test_a_star_scenario_on_ns3_completes_and_its_replay_needs_no_ns3(engine, tmp_path, monkeypatch):
    scenario = tmp_path / "star.toml"
    scenario.write_text(SCENARIO)
    assert _cli("run", str(scenario), "--out", str(tmp_path / "run"), "--quiet") == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["complete"] is True
    recs = [json.loads(line) for line in (tmp_path / "run" / "messages.jsonl").read_text().splitlines()]
    sent = [r["id"] for r in recs if r["event"] == "send"]
    ended = sorted(r["id"] for r in recs if r["event"] in ("deliver", "drop"))
    assert len(sent) == 24 and sorted(sent) == ended  # 4 clients x 3 rounds x (model down, update up), each ended once
    # the replay reads every arrival from the trace: with no ns-3 at all it writes the same log and metrics
    monkeypatch.setattr(B, "binary", lambda: pytest.fail("the replay started ns-3"))
    monkeypatch.setattr("netemu.ns3.engine.binary", lambda: pytest.fail("the replay started ns-3"))
    assert _cli("replay", str(tmp_path / "run" / "trace.msgpack"), "--scenario", str(scenario), "--out", str(tmp_path / "again"),
                "--quiet") == 0
    for name in ("messages.jsonl", "metrics.csv"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "run" / name).read_bytes()


def test_the_ns3_engine_keys_without_the_ns3_engine_are_refused(tmp_path):
    from netemu.scenario.load import load_scenario

    scenario = tmp_path / "star.toml"
    scenario.write_text(SCENARIO)
    with pytest.raises(InputError, match=r'network.sack.*only with engine = "ns3"'):
        load_scenario(scenario, ["network.engine=flow", "network.sack=false"])
    # the flow model follows Cubic and NewReno (HyStart, the loss response); BBR and Vegas only ns-3
    with pytest.raises(InputError, match=r'network.congestion_control.*cubic, newreno under the flow model.*engine = "ns3"'):
        load_scenario(scenario, ["network.engine=flow", "network.congestion_control=bbr"])
    assert load_scenario(scenario, ["network.engine=flow", "network.congestion_control=newreno"])


def test_the_queue_discipline_has_one_key_on_both_engines_and_queue_disc_is_refused_naming_it(tmp_path):
    from netemu.scenario.load import load_scenario

    scenario = tmp_path / "star.toml"
    scenario.write_text(SCENARIO.replace('qdisc = "fifo"\n', 'queue_disc = "fq_codel"\n'))
    with pytest.raises(InputError, match=r'network.queue_disc.*not a key: the queue discipline is qdisc = "fair" \(FqCoDel\) or "fifo"'):
        load_scenario(scenario)
    assert NetModel(engine="ns3").fair and NetModel(sharing="max-min").fair  # one default: fair queueing (FqCoDel)
    assert not NetModel(engine="ns3", qdisc="fifo").fair and not NetModel().fair  # sharing = "none": FIFOs of messages


def datagrams(nbytes, *, queue_packets=100, loss=None, qdisc="fifo", server_qdisc=None):
    """One datagram message of `nbytes` from client-0 through a router to the server (10 then 1 Mbit/s):
    its log records.  `server_qdisc`: the server link's own queue discipline."""
    g = T.behind_routers(T.star(1), server_link=True)
    links = {(u, v): Link(Constant(0.001), bandwidth=1e6 if cls.startswith("server") else 10e6, link_class=cls,
                          loss=loss if cls == "uplink" else None, qdisc=server_qdisc if cls.startswith("server") else None)
             for u, v, cls in g.edges(data="link_class")}
    model = NetModel(engine="ns3", queue_packets=queue_packets, qdisc=qdisc)
    world, buf = logged_world(g, seed=1, links=links, model=model)
    world.network.connect("server", lambda m: False)
    world.at(0.0, lambda: world.network.send("client-0", "server", "up", 0, msgpack.packb(bytes(nbytes))))
    world.env.run()
    return [r for r in records(buf) if r["event"] != "send"]


def test_a_datagram_message_is_udp_packets_delivered_when_the_last_arrives(engine):
    (deliver,) = datagrams(20_000)
    # 14 packets of <= 1448 bytes (+ 28 + 2 header bytes): the last leaves the 1 Mbit/s server link at
    # ~ 14 x 1478 x 8 / 1e6 s after the first reaches it
    assert deliver["event"] == "deliver" and 0.16 < deliver["t"] < 0.18


def test_a_datagram_sender_is_paced_by_its_own_link_and_loses_nothing_at_its_source(engine):
    """691 packets into a 100-packet device queue: the writer waits for room, as a blocking socket does."""
    g = T.star(1)
    world, buf = logged_world(g, seed=1, links=star_links(g), model=NetModel(engine="ns3", qdisc="fifo"))
    world.network.connect("server", lambda m: False)
    world.at(0.0, lambda: world.network.send("client-0", "server", "up", 0, msgpack.packb(bytes(1_000_000))))
    world.env.run()
    (deliver,) = [r for r in records(buf) if r["event"] != "send"]
    # 691 packets of 1478 bytes on the wire (1448 + UDP, IPv4, PPP) at 10 Mbit/s, plus the 10 ms delay
    assert deliver["event"] == "deliver" and deliver["t"] == pytest.approx(691 * 1478 * 8 / 10e6 + DELAY, rel=2e-3)


def test_a_datagram_burst_that_overflows_a_queue_is_dropped_there(engine):
    (drop,) = datagrams(1_000_000, queue_packets=10)
    # the router's 10-packet queue into the 1 Mbit/s link overflows within the burst's first packets
    assert drop["event"] == "drop" and drop["reason"] == "queue" and drop["t"] < 0.05


def test_fq_codel_drops_a_standing_queue_after_its_interval(engine):
    (drop,) = datagrams(1_000_000, qdisc="fair")
    # the router's FqCoDel (ns-3's default queue disc) holds the burst (its limit is 10,240 packets) and
    # drops only once the sojourn time stayed above its 5 ms target for its 100 ms interval (RFC 8289 sec. 3);
    # a 100-packet FIFO there drops within the first 0.15 s (100 packets arrive 1.2 ms apart, leave 12 ms apart)
    assert drop["event"] == "drop" and drop["reason"] == "queue" and 0.1 < drop["t"] < 1.0


def test_a_link_s_own_queue_discipline_overrides_the_network_s(engine):
    """The server link alone behind FqCoDel in a FIFO network drops as FqCoDel does, and alone FIFO in a fair
    network as a 100-packet DropTail queue does (the test above)."""
    (fair,) = datagrams(1_000_000, qdisc="fifo", server_qdisc="fair")
    (fifo,) = datagrams(1_000_000, qdisc="fair", server_qdisc="fifo")
    assert fair["reason"] == fifo["reason"] == "queue"
    assert fair == datagrams(1_000_000, qdisc="fair")[0] and 0.1 < fair["t"] < 1.0
    assert fifo == datagrams(1_000_000, qdisc="fifo")[0] and fifo["t"] < 0.15


def test_pcap_files_of_every_link_where_the_user_asks(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("NETEMU_NS3_PCAP", str(tmp_path / "pcap"))
    assert datagrams(20_000)[0]["event"] == "deliver"
    assert datagrams(20_000)[0]["event"] == "deliver"  # a second world: a folder of its own, nothing overwritten
    assert sorted(p.name for p in (tmp_path / "pcap").iterdir()) == ["world-1", "world-2"]
    files = sorted(p.name for p in (tmp_path / "pcap" / "world-1").iterdir())
    assert len(files) == 4 and all(f.endswith(".pcap") for f in files)  # two links, both ends
    assert any(f.startswith("client-0--router-") for f in files)
    assert all((tmp_path / "pcap" / "world-1" / f).stat().st_size > 24 for f in files)  # more than a pcap header


def test_a_datagram_that_loses_a_packet_is_lost(engine):
    (drop,) = datagrams(20_000, loss=Bernoulli(1.0))
    assert drop["event"] == "drop" and drop["reason"] == "loss"


# ------------------------------------------------------------------ the referee of the referee

sys.path.insert(0, str(ROOT / "tools" / "ns3"))


def _point(name: str) -> dict:
    ref = json.loads((ROOT / "tools" / "ns3" / "reference.json").read_text())
    return next(e for e in ref if e["point"]["name"] == name)


def _referee(name: str) -> None:
    import compare

    entry = _point(name)
    p = entry["point"]
    got = compare.run(p, compare.NS3(p), exact=True)
    assert got == pytest.approx(entry["ns3"]["last"], rel=0.01)  # the bound; measured: equal to the nanosecond


@pytest.mark.parametrize("name", ["star-up-base", "star-down-clients=4", "star-up-bytes=10000"])
def test_ns3_through_netemu_equals_the_standalone_ns3_program_within_1_percent(engine, name):
    """tools/ns3/transfers.cc's last completion time (tools/ns3/reference.json) against the same point
    sent through netemu with engine = "ns3" (tools/ns3/compare.py: one connection per transfer, each
    message exactly the point's bytes)."""
    _referee(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["star-up-queue=10", "star-down-clients=32", "star-up-clients=64"])
def test_ns3_through_netemu_equals_the_standalone_program_where_queues_overflow(engine, name):
    """Where SYNs and first windows are lost to full queues (stalled starts: every packet's order matters)."""
    _referee(name)


def test_the_ns3_engine_source_is_shipped_as_package_data():
    assert all(part.is_file() for part in B.SOURCES)
    assert '"netemu.ns3" = ["engine.cc", "*.h"]' in (ROOT / "pyproject.toml").read_text()
    included = {line.split('"')[1] for line in B.SOURCE.read_text().splitlines() if line.startswith('#include "') and "/" not in line}
    assert included == {part.name for part in B.SOURCES[1:]}  # the cache key covers every file the program includes
    assert shutil.which  # the build looks tools up on PATH


def test_a_datagram_is_cut_into_packets_of_the_scenarios_mss(engine, tmp_path):
    from netemu.scenario.load import load_scenario

    scenario = tmp_path / "star.toml"
    scenario.write_text(SCENARIO)
    got = load_scenario(scenario, ["network.transport=datagram", "network.mss=500"]).settings.network
    assert (got["transport"], got["mss"]) == ("datagram", 500)  # the one transport key the datagram transport takes, under ns-3
    g = T.star(1)
    world, buf = logged_world(g, seed=1, links=star_links(g), model=NetModel(engine="ns3", qdisc="fifo", mss=500))
    world.network.connect("server", lambda m: False)
    world.at(0.0, lambda: world.network.send("client-0", "server", "up", 0, msgpack.packb(bytes(100_000))))
    world.env.run()
    send, deliver = records(buf)
    # packets of at most 500 bytes, each with 30 bytes of headers on the wire (UDP 8, IPv4 20, PPP 2), at 10 Mbit/s, and
    # the 10 ms delay (in 1448-byte packets it would arrive 3 ms sooner)
    wire = send["bytes"] + 30 * -(-send["bytes"] // 500)
    assert deliver["t"] == pytest.approx(wire * 8 / 10e6 + DELAY, abs=1e-6)
