"""Network behaviour: queues, outages, crashes, routing errors and the accounting invariant."""

from collections import Counter

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import Sender, Sink, logged_world, records
from netemu import Actor, Bernoulli, Constant, Exponential, GilbertElliott, Link, NetworkError, NodeBehaviour, World, from_graph


def pair(link):
    g = from_graph(nx.Graph([("a", "b")]))
    return g, {("a", "b"): link}


def test_two_1MB_messages_on_a_1MB_per_s_link_arrive_at_1s_and_2s():
    g, links = pair(Link(bandwidth=8e6))  # 1 MB/s
    blob = bytes(1_000_000)
    world = World(g, seed=0, links=links)
    world.add(Sender("a", [(0.0, "b", "blob", blob, 0), (0.0, "b", "blob", blob, 0)]))
    sink = world.add(Sink("b"))
    world.run()
    (t1, m1), (t2, m2) = sink.got
    assert m1.nbytes == m2.nbytes and 1_000_000 < m1.nbytes < 1_000_100  # payload + small envelope
    assert t1 == pytest.approx(m1.nbytes * 8 / 8e6, rel=1e-12) and t1 == pytest.approx(1.0, abs=1e-4)
    assert t2 == pytest.approx(2 * t1, rel=1e-12)


def test_an_outage_drops_what_is_sent_during_it_and_nothing_else():
    g, links = pair(Link(Constant(0.5), outages=[(10.0, 20.0)]))
    world, buf = logged_world(g, seed=0, links=links)
    world.add(Sender("a", [(t, "b", "x", t, 0) for t in (5.0, 10.0, 15.0, 19.9, 20.0)]))
    sink = world.add(Sink("b"))
    world.run()
    assert [m.payload for _, m in sink.got] == [5.0, 20.0]
    drops = [r for r in records(buf) if r["event"] == "drop"]
    assert [(r["reason"], r["t"]) for r in drops] == [("outage", 10.0), ("outage", 15.0), ("outage", 19.9)]
    outages = [r for r in records(buf) if r["event"] == "outage"]
    assert [(r["t"], r["src"], r["dst"], r["until"]) for r in outages] == [(10.0, "a", "b", 20.0)]


def test_sending_to_a_non_neighbour_names_both_ends():
    g = from_graph(nx.path_graph(["a", "b", "c"]))
    world = World(g, seed=0)
    world.add(Sender("a", [(0.0, "c", "x", None, 0)]))
    with pytest.raises(Exception, match=r"'a' cannot send to 'c': they are not neighbours"):
        world.run()


def test_a_link_for_an_edge_the_graph_lacks_is_refused():
    g, _ = pair(Link())
    with pytest.raises(NetworkError, match="b->c"):
        World(g, seed=0, links={("b", "c"): Link()})


class Pinger(Actor):
    async def run(self):
        for r in range(10):
            self.send("b", "ping", r, round=r)
            await self.sleep(1.0)


def test_messages_reaching_a_crashed_node_are_dropped_and_it_restarts_on_recovery():
    g, links = pair(Link(Constant(0.1)))
    world, buf = logged_world(g, seed=0, links=links, behaviours={"b": NodeBehaviour(crashes=((2.5, 5.5),))})
    world.add(Pinger("a"))
    sink = world.add(Sink("b"))
    world.run()
    assert [m.payload for _, m in sink.got] == [0, 1, 2, 6, 7, 8, 9]
    recs = records(buf)
    assert [r["round"] for r in recs if r.get("reason") == "crash"] == [3, 4, 5]
    assert [(r["event"], r["t"]) for r in recs if r["event"] in ("crash", "recover")] == [("crash", 2.5), ("recover", 5.5)]
    assert sink.incarnation == 1


def test_a_participation_draw_is_keyed_by_node_and_round():
    g = from_graph(nx.star_graph(["s", "a", "b"]))
    behaviours = {"a": NodeBehaviour(participation=0.3), "b": NodeBehaviour(participation=0.3)}
    w1, w2 = World(g, seed=3, behaviours=behaviours), World(g, seed=3, behaviours=behaviours)
    draws1 = [w1.network.participates("a", r) for r in range(400)]
    # another order of questions, interleaved with the other node's draws: same answers
    draws2 = [None] * 400
    for r in reversed(range(400)):
        w2.network.participates("b", r)
        draws2[r] = w2.network.participates("a", r)
    assert draws1 == draws2
    assert abs(np.mean(draws1) - 0.3) < 5 * np.sqrt(0.21 / 400)


def test_compute_time_is_work_over_speed():
    g, links = pair(Link())

    class Worker(Actor):
        async def run(self):
            self.spent = await self.compute(6.0)

    world = World(g, seed=0, links=links, behaviours={"a": NodeBehaviour(speed=2.0)})
    worker = world.add(Worker("a"))
    result = world.run()
    assert worker.spent == 3.0 and result.virtual_time == 3.0


LINK_MODELS = st.builds(
    lambda mean, p, burst, bw: Link(
        Exponential(mean) if mean else Constant(0.0),
        loss=GilbertElliott(0.1, 1 / burst) if burst else (Bernoulli(p) if p else None),
        bandwidth=bw,
        outages=[(3.0, 4.0)],
    ),
    st.sampled_from([0.0, 0.2, 2.0]),
    st.sampled_from([0.0, 0.3]),
    st.sampled_from([0, 3]),
    st.sampled_from([None, 1e4]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(2, 6),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_every_sent_message_ends_delivered_dropped_or_in_flight_exactly_once(n, seed, data):
    rng = np.random.default_rng(seed)
    und = nx.gnm_random_graph(n, min(n * (n - 1) // 2, 2 * n), seed=seed)
    g = from_graph(nx.relabel_nodes(und, str))
    links = {e: data.draw(LINK_MODELS) for e in g.edges}
    world, buf = logged_world(g, seed=seed, links=links)
    for node in g.nodes:
        nbrs = list(g.successors(node))
        times = np.sort(rng.uniform(0, 8, size=5 if nbrs else 0))
        plan = [(float(t), nbrs[rng.integers(len(nbrs))], "m", int(rng.integers(99)), int(t)) for t in times]
        world.add(Sender(node, plan))
    result = world.run(until=6.0)  # stop while some messages still travel
    recs = records(buf)
    sent = {r["id"] for r in recs if r["event"] == "send"}
    ends = [r["id"] for r in recs if r["event"] in ("deliver", "drop", "in_flight")]
    assert sorted(ends) == sorted(sent)  # each sent message has exactly one end
    total = result.messages["total"]
    assert total["sent"] == len(sent) == total["delivered"] + total["dropped"] + total["in_flight"]
    logged: Counter = Counter()  # the network's counts, rebuilt from the log: equal, keys included
    for r in recs:
        if r["event"] == "send":
            logged.update({(r["link"], "sent"): 1, (r["link"], "bytes"): r["bytes"], (r["link"], "payload_bytes"): r["payload_bytes"]})
        elif r["event"] in ("deliver", "drop"):
            logged.update([(r["link"], "delivered")] if r["event"] == "deliver" else [(r["link"], "dropped"), (r["link"], f"dropped_{r['reason']}")])
    assert dict(world.network.counts) == dict(logged)
