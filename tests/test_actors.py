"""Actor messaging: recv filters by kind, times out in virtual time, leaves no stale waiters."""

import networkx as nx
import numpy as np
import pytest

from helpers import Sender
from netemu import Actor, Constant, Link, World, from_graph


def pair_world(b_actor, plan, delay=1.0):
    g = from_graph(nx.Graph([("a", "b")]))
    world = World(g, seed=0, links={("a", "b"): Link(Constant(delay))})
    world.add(Sender("a", plan, linger=0.0))
    world.add(b_actor)
    return world


class Recorder(Actor):
    def __init__(self, name, script):
        super().__init__(name)
        self.script, self.log = script, []

    async def run(self):
        for kind, timeout in self.script:
            msg = await self.recv(kind, timeout=timeout)
            self.log.append((self.now, None if msg is None else msg.payload))


def test_recv_takes_the_first_message_of_the_requested_kind():
    rec = Recorder("b", [("y", None), ("x", None), (("x", "z"), None)])
    pair_world(rec, [(0, "b", "x", 1, 0), (0, "b", "x", 2, 0), (0.5, "b", "y", 3, 0)]).run()
    assert rec.log == [(1.5, 3), (1.5, 1), (1.5, 2)]


def test_recv_returns_none_when_its_timeout_passes():
    rec = Recorder("b", [("x", 0.5), ("x", 10.0)])
    pair_world(rec, [(0, "b", "x", 7, 0)]).run()
    assert rec.log == [(0.5, None), (1.0, 7)]


def test_timed_out_receives_leave_no_waiters_behind():
    class Poller(Actor):
        async def run(self):
            for _ in range(100):
                await self.recv("x", timeout=0.01)

    poller = Poller("b")
    pair_world(poller, [(5.0, "b", "x", 1, 0)]).run()
    assert len(poller.inbox._waiters) == 0 and len(poller.inbox) == 0


def test_an_unencodable_payload_names_the_sender_kind_and_field():
    class Bad(Actor):
        async def run(self):
            self.send("b", "update", {"w": np.array([None], dtype=object)})

    g = from_graph(nx.Graph([("a", "b")]))
    world = World(g, seed=0)
    world.add(Bad("a"))
    with pytest.raises(Exception, match=r"a sending 'update' to 'b': field payload\['w'\]: object dtype") as info:
        world.run()
    assert "WireError" in str(info.value)
