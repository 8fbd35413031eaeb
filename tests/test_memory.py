"""Memory at scale: what a link, a node and a message in flight cost, and that the savings
(shared link models, state made on first use, no kept graph) change no draw and no record.

Bounds are in bytes per client measured with tracemalloc at a few thousand clients; each
is about twice what this code holds and well below what it held before (noted per test),
so a regression fails and allocator noise does not.
"""

import gc
import io
import tracemalloc
from pathlib import Path

import msgpack
import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

import netemu.engine.net.network as network_module
from helpers import Sink, records
from netemu import Actor, Constant, Exponential, GilbertElliott, Jitter, Link, LogNormal, World, from_graph, star
from netemu.log import MessageLog
from netemu.engine.net.links import RoundCounter
from netemu.engine.rng import Streams
from netemu.scenario import load_scenario
from netemu.scenario.build import build_behaviours, build_links
from netemu.scenario.graph import build_graph
from netemu.trace import TraceWriter, topology_fingerprint

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


class DictCounter:
    """The round counter as it was (one dict entry per kept round): the reference."""

    def __init__(self, window=64):
        self.window, self.counts, self.late = window, {}, 0

    def next(self, round):
        index = self.counts.get(round)
        if index is None:
            index = 0
            if len(self.counts) >= self.window:
                oldest = min(self.counts)
                if round < oldest:
                    self.late += 1
                    return -self.late
                del self.counts[oldest]
        self.counts[round] = index + 1
        return index


@settings(max_examples=300, deadline=None)
@given(rounds=st.lists(st.integers(-3, 12), max_size=150), window=st.integers(1, 6))
def test_the_compact_round_counter_and_a_links_indices_match_the_dict_counter(rounds, window):
    ref, compact = DictCounter(window), RoundCounter(window)
    expected = [ref.next(r) for r in rounds]
    assert [compact.next(r) for r in rounds] == expected
    link, ref64 = Link(), DictCounter()  # a link keeps the last round's counter in its own slots
    assert [link.next_index(r) for r in rounds] == [ref64.next(r) for r in rounds]


def fates(link, draws, n=60, rounds=3):
    return [link.draw_fate(draws, r, i) for r in range(rounds) for i in range(n)]


def test_links_sharing_stateful_components_draw_what_links_with_their_own_draw():
    streams = Streams(5)
    ge, jitter, latency = GilbertElliott(0.2, 0.3), Jitter(0.05, correlation=0.8), LogNormal(-1.0, 0.5)
    shared = [Link(latency, jitter=jitter, loss=ge, shared=True) for _ in range(2)]
    own = [Link(LogNormal(-1.0, 0.5), jitter=Jitter(0.05, correlation=0.8), loss=GilbertElliott(0.2, 0.3)) for _ in range(2)]
    draws = [streams.keyed(f"link/{k}") for k in range(2)]
    # interleave the two links' messages: each link's state must follow its own traffic only
    got = {k: [] for k in range(2)}
    want = {k: [] for k in range(2)}
    for i in range(200):
        for k in (0, 1) if i % 3 else (1, 0):
            got[k].append(shared[k].draw_fate(draws[k], 0, i))
            want[k].append(own[k].draw_fate(draws[k], 0, i))
    assert got == want
    assert ge.bad is False and jitter._last == 0.0  # the shared originals never drew


def test_reading_a_shared_component_gives_the_link_its_own_copy():
    latency = Exponential(0.5)
    a, b = Link(latency, shared=True), Link(latency, shared=True)
    a.latency.mean = 5.0  # a script changing one link
    assert b.latency.mean == 0.5 and latency.mean == 0.5
    c = Link()
    c.latency.delay = 1.0  # the default no-delay model is shared too
    assert Link().latency.delay == 0.0


def test_a_links_own_components_stay_the_objects_it_was_given():
    ge = GilbertElliott(0.5, 0.5)
    link = Link(Constant(0.1), loss=ge)
    fates(link, Streams(1).keyed("l"))
    assert link.loss is ge and ge.bad in (True, False)


def run_logged(seed=3, clients=6):
    g = star(clients)
    links = {e: Link(Exponential(0.2), loss=GilbertElliott(0.3, 0.4), jitter=Jitter(0.01, 0.5),
                     link_class=g.edges[e]["link_class"]) for e in g.edges}
    buf = io.BytesIO()
    world = World(g, seed=seed, links=links, log=MessageLog(buf))

    class Chatty(Actor):
        async def run(self):
            for r in range(4):
                self.round = r
                for _ in range(3):
                    self.broadcast("x", r)
                await self.sleep(1.0)

    world.add(Chatty("server"))
    for k in range(clients):
        world.add(Sink(f"client-{k}"))
    world.run()
    return buf.getvalue()


def test_link_draws_made_again_after_the_cache_is_emptied_are_the_same(monkeypatch):
    kept = run_logged()
    monkeypatch.setattr(network_module, "_DRAWS_KEPT", 2)  # emptied every second new link
    assert run_logged() == kept
    assert any(r["event"] == "drop" for r in records(io.BytesIO(kept))) and b'"deliver"' in kept


def test_the_network_rebuilds_the_graph_it_was_given():
    und = nx.Graph()
    und.add_edge("a", "b", weight=2.0)
    und.add_edge("b", "c")
    g = from_graph(und)
    g.nodes["a"]["pos"] = (1.0, 2.0)
    g.add_edge("c", "d")  # no link_class at all
    g.nodes["d"]["role"] = "peer"
    world = World(g, seed=0, links={("a", "b"): Link(link_class="special")})
    rebuilt = world.network.graph
    assert list(rebuilt.nodes(data=True)) == list(g.nodes(data=True))
    assert sorted(rebuilt.edges(data=True)) == sorted(g.edges(data=True))
    assert topology_fingerprint(rebuilt) == topology_fingerprint(g)
    assert world.network.neighbours("b") == list(g.successors("b"))


def held_per_client(build, clients):
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del kept
    return held / clients


def test_an_idle_client_costs_the_network_under_1500_bytes():
    # nodes, two links with the quick start's models, successors; the graph is freed.
    # Measured ~870 B (it was ~3,300 B: a keyed hasher and component objects per link, a
    # dict per node, the networkx graph kept).
    n = 4000
    sc = load_scenario(SCENARIOS / "quickstart.toml", [f"topology.clients={n}"])

    def build():
        streams = Streams(1)
        g = build_graph(sc, streams)
        return World(g, seed=1, links=build_links(sc, g), behaviours=build_behaviours(sc, g))

    assert held_per_client(build, n) < 1500


def test_a_broadcast_in_flight_holds_its_payload_once():
    # 2,000 messages of a 20 kB model in flight: each holds its envelope header and its
    # event (~0.4 kB), not a copy of the payload (that was 40 MB here).
    n, blob = 2000, bytes(20_000)
    world = World(star(n), seed=0, links={e: Link(Constant(1.0)) for e in star(n).edges})

    def send():
        world.network.send_many("server", [f"client-{k}" for k in range(n)], "model", 0, msgpack.packb(blob))
        return world

    assert held_per_client(send, n) < 1_000
    assert len(world.network.in_flight()) == n


def test_the_last_algorithm_of_a_run_keeps_no_message_keys():
    # a message key is drawn once per world: only a later algorithm of the run could look it up
    writer = TraceWriter(io.BytesIO(), {"algorithms": ["a", "b"]})
    first = writer.fates("a", 0)
    first(("msg", "x", "y", 0, 0), lambda: (None, 0.5))
    first(("participation", "x", 0), lambda: True)
    assert writer._kept() == 2
    last = writer.fates("b", 0)
    assert last(("msg", "x", "y", 0, 0), lambda: (None, 0.5)) == (None, 0.5)  # the same: not written again
    last(("msg", "x", "y", 0, 1), lambda: (None, 0.7))
    last(("participation", "x", 1), lambda: False)
    last(("participation", "x", 1), lambda: False)
    assert writer.entries == 4 and writer._kept() == 3
