"""Keys of random draws cannot collide: one counter per (link, round) and per (node, round).

A message's fate is keyed by (link, round, index) and a compute's slowdown by (node,
round, index).  Two messages (or computes) sharing a key would share one fate and one
trace entry, so every key must be unique, whatever order rounds are used in (acks,
late resends, interleaved rounds).
"""

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from netemu import Actor, Bernoulli, Link, NodeBehaviour, World, from_graph
from netemu.engine.net.links import RoundCounter


def test_interleaved_rounds_count_each_round_on_its_own():
    # the case of issue 13: rounds 1, 2, 1, 1, 2 used to get (1,0) (2,0) (1,0) (1,1) (2,0)
    c = RoundCounter()
    assert [(r, c.next(r)) for r in (1, 2, 1, 1, 2)] == [(1, 0), (2, 0), (1, 1), (1, 2), (2, 1)]


def test_rounds_in_order_get_the_indices_they_always_had():
    # the shipped algorithms send rounds in order: their keys (and logs) must not change
    c = RoundCounter(window=4)
    rounds = [r for r in range(20) for _ in range(3)]
    assert [c.next(r) for r in rounds] == [i for _ in range(20) for i in range(3)]


def test_a_round_revisited_after_the_window_gets_a_fresh_negative_index():
    c = RoundCounter(window=2)
    assert [c.next(r) for r in (0, 0, 1, 2)] == [0, 1, 0, 0]  # round 0 forgotten when 2 arrives
    assert [c.next(0), c.next(0), c.next(-5)] == [-1, -2, -3]
    assert len(c) == 2  # memory: the window, not every round ever seen


@settings(max_examples=300, deadline=None)
@given(rounds=st.lists(st.integers(0, 12), max_size=200), window=st.integers(1, 8))
def test_no_two_uses_share_a_key_and_recent_rounds_count_from_zero(rounds, window):
    c = RoundCounter(window=window)
    keys = [(r, c.next(r)) for r in rounds]
    assert len(set(keys)) == len(keys)
    assert len(c) <= window
    # with no more distinct rounds than the window, every round counts 0, 1, 2, ... exactly
    if len(set(rounds)) <= window:
        seen: dict[int, int] = {}
        for r, i in keys:
            assert i == seen.get(r, 0)
            seen[r] = i + 1


# ------------------------------------------------------------- through the emulator


class Talker(Actor):
    """Sends (dst, round) in order, computing once before each send; records nothing itself."""

    def __init__(self, name, plan):
        super().__init__(name)
        self.plan = plan

    async def run(self):
        for dst, rnd in self.plan:
            self.round = rnd
            await self.compute(1.0)
            self.send(dst, "m", None, round=rnd)
            await self.sleep(0.01)


def recorded_keys(plans):
    """Every keyed draw of a two-node world running `plans` (node -> [(dst, round)])."""
    keys = []

    def fates(key, draw):
        keys.append(key)
        return draw()

    g = from_graph(nx.Graph([("a", "b")]))
    links = {("a", "b"): Link(loss=Bernoulli(0.5)), ("b", "a"): Link(loss=Bernoulli(0.5))}
    behaviours = {n: NodeBehaviour(slowdown_sigma=0.3) for n in ("a", "b")}
    world = World(g, seed=3, links=links, behaviours=behaviours, fates=fates)
    for node, plan in plans.items():
        world.add(Talker(node, plan))
    world.run()
    return keys


@settings(max_examples=60, deadline=None)
@given(
    a_rounds=st.lists(st.integers(0, 5), max_size=25),
    b_rounds=st.lists(st.integers(0, 5), max_size=25),
)
def test_acks_and_late_resends_in_both_directions_never_share_a_key(a_rounds, b_rounds):
    # a sends data in arbitrary round order (late resends), b answers with acks of any round
    keys = recorded_keys({"a": [("b", r) for r in a_rounds], "b": [("a", r) for r in b_rounds]})
    messages = [k for k in keys if k[0] == "msg"]
    computes = [k for k in keys if k[0] == "compute"]
    assert len(messages) == len(a_rounds) + len(b_rounds)
    assert len(computes) == len(a_rounds) + len(b_rounds)
    assert len(set(messages)) == len(messages)
    assert len(set(computes)) == len(computes)


def test_a_message_of_an_earlier_round_takes_the_next_index_of_that_round():
    keys = recorded_keys({"a": [("b", 1), ("b", 2), ("b", 1), ("b", 1), ("b", 2)]})
    assert [k[3:] for k in keys if k[0] == "msg"] == [(1, 0), (2, 0), (1, 1), (1, 2), (2, 1)]
    assert [k[2:] for k in keys if k[0] == "compute"] == [(1, 0), (2, 0), (1, 1), (1, 2), (2, 1)]
