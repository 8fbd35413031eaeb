"""Queues under max-min sharing (netemu.engine.net.queues): slow starts that overflow a bounded queue
wait a retransmission timeout, FIFO shares a link by window (1 / RTT), a fair queue drops only from
the flows above their share, and the settings that cannot act are refused."""

import math

import msgpack
import networkx as nx
import pytest

from netemu import Constant, Link, World
from netemu.config import ConfigError
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel
from netemu.engine.net.queues import Burst, Bursts, hystart_delay, rounds, window
from netemu.engine.net.sharing import MaxMin

RELIABLE = {"sharing": "max-min", "transport": "reliable", "rto_min": 1.0}
FIFO = NetModel(**RELIABLE, qdisc="fifo")
FAIR = NetModel(**RELIABLE)


def uploads(n, nbytes, model, queue=None):
    """n clients upload `nbytes` each at t = 0 over 10 Mbit/s access links into a 20 Mbit/s server
    link (1 ms per hop), every link holding `queue` bytes; (delivery time per client, transport counts)."""
    g = T.behind_routers(T.star(n), server_link=True)
    links = {(u, v): Link(Constant(0.001), bandwidth=20e6 if cls.startswith("server") else 10e6, link_class=cls, queue_bytes=queue)
             for u, v, cls in g.edges(data="link_class")}
    world = World(g, seed=0, links=links, model=model)
    net, done = world.network, {}
    net.connect("server", lambda m: done.__setitem__(m.src, m.delivered_at))
    payload = msgpack.packb(bytes(nbytes))
    for k in range(n):
        world.at(0.0, lambda s=f"client-{k}": net.send(s, "server", "up", 0, payload))
    world.env.run()
    assert len(done) == n
    return done, net.transport_counts


def test_initial_windows_that_overflow_a_fifo_queue_wait_a_retransmission_timeout():
    # 16 x 10 kB (7 segments each, all in the first window) into a 10-packet queue: the link takes
    # ~35 kB of the 160 kB burst, about 2 segments of each window, too few for three duplicate ACKs
    fair, _ = uploads(16, 10_000, FAIR)
    fifo, counts = uploads(16, 10_000, FIFO, queue=15_000)
    assert max(fair.values()) < 0.1
    assert min(fifo.values()) > 1.0  # every one waited out the 1 s minimum RTO
    assert counts[("uplink", "queue_overflows")] == 16 and counts[("uplink", "queue_timeouts")] == 16


def test_a_fair_queue_bounded_by_queue_bytes_overflows_as_well():
    # 16 equal windows: the equal share of what the link takes (~2 kB each) is too little for any
    fair, counts = uploads(16, 10_000, FAIR, queue=15_000)
    assert min(fair.values()) > 1.0 and counts[("uplink", "queue_timeouts")] == 16


def test_an_unbounded_fair_queue_overflows_nothing():
    _, counts = uploads(16, 10_000, FAIR)
    assert not counts[("uplink", "queue_overflows")] and not counts[("uplink", "queue_timeouts")]


def test_of_many_overflowing_slow_starts_pftks_share_time_out_and_the_rest_recover():
    # 8 x 100 kB: the second round (8 windows of 20 segments) overflows a 100-packet queue; each
    # loss is a timeout with PFTK's chance min(1, 3 / w) = 0.15: one of the eight waits the RTO
    fifo, counts = uploads(8, 100_000, FIFO, queue=150_000)
    fair, _ = uploads(8, 100_000, FAIR)
    assert counts[("uplink", "queue_overflows")] == 8 and counts[("uplink", "queue_timeouts")] == 1
    late = [t for t in fifo.values() if t > 1.0]
    assert len(late) == 1 and max(fair.values()) < 0.5
    assert uploads(8, 100_000, FIFO, queue=150_000)[0] == fifo  # deterministic


def test_a_lone_slow_start_leaves_by_hystart_before_it_overflows():
    # one 1 MB upload: its window sees the queue's delay in its second round and stops doubling
    fifo, counts = uploads(1, 1_000_000, FIFO)
    fair, _ = uploads(1, 1_000_000, FAIR)
    assert fifo == fair and not counts[("uplink", "queue_overflows")]


def test_newreno_has_no_hystart_so_a_lone_slow_start_overflows_the_queue():
    # the same upload with NetModel(congestion_control="newreno"): nothing ends its slow start before the
    # window outgrows pipe and queue (ns-3's TcpNewReno and Linux's Reno have no HyStart)
    # (one loss in a window of ~100 segments: recovered by fast retransmit, PFTK's timeout chance 3 / w unmet)
    reno = NetModel(**RELIABLE, qdisc="fifo", congestion_control="newreno")
    _, counts = uploads(1, 1_000_000, reno)
    assert counts[("uplink", "queue_overflows")] == 1 and not counts[("uplink", "queue_timeouts")]
    assert not uploads(1, 1_000_000, FIFO)[1][("uplink", "queue_overflows")]


def two_rtts(model, queue=None):
    """Two 5 MB uploads through one 10 Mbit/s link, RTT 2 ms and 20 ms; their delivery times."""
    g = nx.DiGraph()
    g.add_node("server", role="server")
    g.add_node("router", role="router")
    links = {("router", "server"): Link(Constant(0.0005), bandwidth=10e6, link_class="server_uplink", queue_bytes=queue)}
    g.add_edge("router", "server", link_class="server_uplink")
    g.add_edge("server", "router", link_class="server_downlink")
    for k, delay in enumerate((0.0005, 0.0095)):
        g.add_node(f"client-{k}", role="client")
        g.add_edge(f"client-{k}", "router", link_class="uplink")
        g.add_edge("router", f"client-{k}", link_class="downlink")
        links[(f"client-{k}", "router")] = Link(Constant(delay), bandwidth=100e6, link_class="uplink", queue_bytes=queue)
    world = World(g, seed=0, links=links, model=model)
    net, done = world.network, {}
    net.connect("server", lambda m: done.__setitem__(m.src, m.delivered_at))
    payload = msgpack.packb(bytes(5_000_000))
    for k in range(2):
        world.at(0.0, lambda s=f"client-{k}": net.send(s, "server", "up", 0, payload))
    world.env.run()
    return done["client-0"], done["client-1"]


def test_fifo_shares_a_link_by_window_and_a_fair_queue_equally():
    near, far = two_rtts(FAIR)
    assert near == pytest.approx(far, rel=0.02)  # equal shares: they finish together
    near, far = two_rtts(FIFO, queue=1e9)  # a queue too long to overflow: only the service differs
    # behind FIFO the 2 ms flow gets 10/11 of the link (rates go as 1 / RTT) and finishes first
    assert near < 0.6 * far
    assert far == pytest.approx(10e6 * 8 / (10e6 * 0.97) + 0.01, rel=0.02)  # both, at the link's rate


def test_weighted_filling_gives_rates_in_proportion_to_the_weights():
    m = MaxMin({"L": 3.0})
    m.add(0.0, 0, ["L"], 100.0, weight=2.0)
    m.add(0.0, 1, ["L"], 100.0, weight=1.0)
    assert m.rates() == pytest.approx({0: 2.0, 1: 1.0})
    m = MaxMin({"L": 3.0})
    m.add(0.0, 0, ["L"], 100.0, bound=1.0, weight=2.0)  # held below its weighted share: the rest goes to the other
    m.add(0.0, 1, ["L"], 100.0, weight=1.0)
    assert m.rates() == pytest.approx({0: 1.0, 1: 2.0})


def test_a_paused_transfer_keeps_its_bytes_and_leaves_its_share():
    m = MaxMin({"L": 10.0})
    m.add(0.0, 0, ["L"], 100.0)
    m.add(0.0, 1, ["L"], 100.0)
    assert m.remove(4.0, 0) == pytest.approx(80.0)
    assert m.rates() == {1: 10.0}


def bursts_on_one_link(fifo, firsts, capacity=1e6, queue=20_000.0):
    b = Bursts(1448)
    for i, first in enumerate(firsts):
        b.start(Burst(i, 0.0, 0.01, first, first, {"L": math.inf}), ["L"])
    return b.overflows([("L", capacity, queue, 0.0, fifo)], 0.0, lambda c, r: 0.0)


def test_a_fifo_queue_drops_from_every_flow_and_a_fair_one_only_above_the_share():
    firsts = [100_000.0] + [5_000.0] * 4  # one window of 100 kB and four of 5 kB, one round each
    assert sorted(i for i, _, _ in bursts_on_one_link(True, firsts)) == [0, 1, 2, 3, 4]
    assert [i for i, _, _ in bursts_on_one_link(False, firsts)] == [0]  # the share is (10 kB + 20 kB) / 5


def test_slow_start_rounds_and_windows():
    assert rounds(14480.0, 14480.0) == 1 and rounds(14481.0, 14480.0) == 2 and rounds(100_000.0, 14480.0) == 3
    assert [window(100_000.0, 14480.0, k) for k in range(3)] == [14480.0, 28960.0, pytest.approx(100_000.0 - 3 * 14480.0)]
    assert hystart_delay(0.004) == 0.004 and hystart_delay(0.064) == 0.008 and hystart_delay(1.0) == 0.016


def test_the_default_fifo_queue_is_one_bandwidth_delay_product_and_at_least_100_packets():
    assert FIFO.default_queue(1.25e6, 0.004) == 100 * 1500
    assert FIFO.default_queue(125e6, 0.1) == pytest.approx(12.5e6)


@pytest.mark.parametrize("kw, accepts", [
    ({"qdisc": "lifo"}, "one of fair, fifo"),
    ({"qdisc": "fair"}, '"fair" needs sharing = "max-min"'),
    ({"sharing": "max-min", "qdisc": "fifo"}, 'it needs transport = "reliable"'),
])
def test_a_queue_discipline_that_cannot_act_is_refused(kw, accepts):
    with pytest.raises(ConfigError) as err:
        NetModel(**kw)
    assert err.value.field == "qdisc" and accepts in err.value.accepts


def test_fifo_under_sharing_none_is_what_it_always_was():
    assert NetModel(qdisc="fifo").default and not NetModel(qdisc="fifo").fifo


def test_a_links_load_is_the_sum_of_its_transfers_rates():
    m = MaxMin({"L": 10.0, "slow": 2.0})
    assert m.load("L") == 0.0
    m.add(0.0, 0, ["slow", "L"], 100.0)
    assert m.load("L") == pytest.approx(2.0)  # alone: held by its own slow link
    m.add(0.0, 1, ["L"], 100.0)
    m.add(0.0, 2, ["L"], 100.0, bound=1.0)
    assert m.load("L") == pytest.approx(sum(m.rates().values())) == pytest.approx(10.0)
