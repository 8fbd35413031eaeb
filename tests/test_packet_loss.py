"""Loss per packet under the reliable transport, TCP's loss response (netemu.engine.net.tcp);
the datagram transport and Gilbert-Elliott bursts keep whole-message loss."""

import math

import pytest

from helpers import Sender, Sink, logged_world, records
from netemu import Bernoulli, Constant, GilbertElliott, Link
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel
from netemu.engine.net.tcp import loss_given_hit, pftk_rate, segments

MB = 1_000_000


def one_upload(size, model, loss, *, delay=0.01, access=10e6, seed=1, count=1):
    """`count` clients each upload `size` bytes at t = 0 over a lossy access link to a router,
    then a lossless 1 Gbit/s server link; (delivery times, log records, network)."""
    g = T.behind_routers(T.star(count), server_link=True)
    links = {}
    for u, v, cls in g.edges(data="link_class"):
        links[(u, v)] = Link(Constant(delay), bandwidth=1e9 if cls.startswith("server") else access, link_class=cls,
                             loss=loss if cls == "uplink" else None)
    world, buf = logged_world(g, seed=seed, links=links, model=model)
    for k in range(count):
        world.add(Sender(f"client-{k}", [(0.0, "server", "up", bytes(size), 0)], linger=4000.0))
    sink = world.add(Sink("server"))
    world.run()
    return [t for t, _ in sink.got], records(buf), world.network


def test_pftk_rate_is_equation_30_of_padhye_et_al():
    # p = 2 %, RTT 40 ms, T0 = 1 s, b = 2: 1 / (0.04 sqrt(4 p / 3) + 1 x 3 sqrt(6 p / 8) x p x (1 + 32 p^2)) packets/s
    p = 0.02
    packets = 1.0 / (0.04 * math.sqrt(4 * p / 3) + 3 * math.sqrt(6 * p / 8) * p * (1 + 32 * p * p))
    assert pftk_rate(p, 0.04, 1.0, 1448) == pytest.approx(packets * 1448, rel=1e-12)
    assert pftk_rate(0.0, 0.04, 1.0, 1448) == math.inf


def test_a_message_that_lost_a_segment_lost_n_p_over_its_hit_probability_of_them():
    assert loss_given_hit(0.3, 1) == pytest.approx(1.0)  # one segment, known lost
    assert loss_given_hit(0.02, 700) == pytest.approx(0.02, rel=1e-6)  # a long message: the unconditional rate
    assert loss_given_hit(0.02, 10) == pytest.approx(0.02 / (1 - 0.98**10), rel=1e-12)
    assert segments(1, 1448) == 1 and segments(1448, 1448) == 1 and segments(1449, 1448) == 2


def test_a_reliable_megabyte_over_two_percent_packet_loss_runs_at_the_pftk_rate():
    got, recs, net = one_upload(MB, NetModel(sharing="max-min", transport="reliable"), Bernoulli(0.02))
    lossless, _, _ = one_upload(MB, NetModel(sharing="max-min", transport="reliable"), None)
    (deliver,) = [r for r in recs if r["event"] == "deliver"]
    rtt = 4 * 0.01  # two hops of 10 ms, both ways
    rate = pftk_rate(0.02 * 1.0000001, rtt, 0.2, 1448)  # 691 segments: P(no loss) = 0.98^691 ~ 1e-6
    # the whole message at the loss-limited rate (far below 10 Mbit/s), after the handshake and the slow start to that rate
    assert got[0] > 5 * lossless[0]
    assert got[0] == pytest.approx(deliver["bytes"] / rate + 2 * rtt, rel=0.05)
    assert deliver["attempts"] == 1 and net.transport_counts[("uplink", "loss_limited")] == 1


def test_without_sharing_the_sender_is_held_to_the_same_loss_limited_rate():
    got, _, _ = one_upload(MB, NetModel(transport="reliable"), Bernoulli(0.02))
    rate = pftk_rate(0.02, 0.04, 0.2, 1448)
    assert got[0] == pytest.approx(MB / rate, rel=0.05)


def test_a_datagram_keeps_whole_message_loss():
    got, recs, _ = one_upload(MB, NetModel(sharing="max-min"), Bernoulli(0.02), count=50)
    # one draw per message against p: about 2 % of 50 lost, the others at the lossless time
    drops = [r for r in recs if r["event"] == "drop"]
    assert len(drops) <= 4 and len(got) + len(drops) == 50


def test_a_short_reliable_message_recovers_its_loss_by_a_timeout():
    # 3 segments cannot make three duplicate ACKs: a loss is a retransmission timeout and a resend
    got, recs, net = one_upload(3000, NetModel(sharing="max-min", transport="reliable"), Bernoulli(0.1), count=40)
    delivers = [r for r in recs if r["event"] == "deliver"]
    assert len(delivers) == 40 and max(r["attempts"] for r in delivers) > 1
    assert net.transport_counts[("uplink", "retransmissions")] == sum(r["attempts"] - 1 for r in delivers)
    assert not net.transport_counts[("uplink", "loss_limited")]


def test_gilbert_elliott_bursts_stay_whole_message_losses_under_the_reliable_transport():
    # the bad state (loss_bad = 1) loses every packet: TCP waits out a timeout, whatever the size
    ge = GilbertElliott(p_gb=0.3, p_bg=0.5)
    got, recs, net = one_upload(MB, NetModel(sharing="max-min", transport="reliable"), ge, count=20)
    delivers = [r for r in recs if r["event"] == "deliver"]
    assert len(delivers) == 20 and max(r["attempts"] for r in delivers) > 1
    assert not net.transport_counts[("uplink", "loss_limited")]


def test_packet_loss_is_deterministic_for_a_seed():
    model = NetModel(sharing="max-min", transport="reliable")
    assert one_upload(50_000, model, Bernoulli(0.05), count=12)[1] == one_upload(50_000, model, Bernoulli(0.05), count=12)[1]


def test_a_run_with_packet_loss_and_persistent_connections_replays_exactly(tmp_path):
    from netemu.cli import main

    (tmp_path / "s.toml").write_text("""
[run]
rounds = 3
seed = 5
[topology]
kind = "star"
clients = 6
server_link = { bandwidth = 20e6 }
[network]
sharing = "max-min"
transport = "reliable"
[links.uplink]
latency = { model = "uniform", low = 0.005, high = 0.02 }
loss = { model = "bernoulli", p = 0.05 }
bandwidth = 5e6
[nodes]
speed = 200.0
[data]
kind = "linear"
dim = 2000
[[algorithm]]
name = "fedavg"
round_time = 5.0
""")
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(a), "--quiet", "--set", "output.plots=false"]) == 0
    assert main(["replay", str(a / "trace.msgpack"), "--scenario", str(a / "scenario.toml"), "--out", str(b), "--quiet",
                 "--set", "output.plots=false"]) == 0
    assert (a / "messages.jsonl").read_bytes() == (b / "messages.jsonl").read_bytes()
