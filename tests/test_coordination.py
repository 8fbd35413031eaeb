"""The coordination toolkit: gathering replies until a deadline, every expected sender or a
quorum; who takes part; local DP noise with its privacy spend."""

import math

import numpy as np
import pytest

from helpers import Sender
from netemu import Actor, Constant, Link, World, star
from netemu.coordination import gather, gaussian_release, keep_each, participants, sample, send_each


class Gatherer(Actor):
    """Runs `gather` once on the server with the given options and keeps the result."""

    def __init__(self, **options):
        super().__init__("server")
        self.options, self.seen = options, []

    async def run(self):
        self.got = await gather(self, "update", on_message=lambda m: self.seen.append((m.src, m.round)), **self.options)
        self.ended = self.now


def world_with(gatherer, plans, clients=3):
    """A star with 1 s links; client-k sends `plans[k]` = [(time, dst, kind, payload, round), ...]."""
    g = star(clients)
    world = World(g, seed=0, links={e: Link(Constant(1.0)) for e in g.edges})
    world.add(gatherer)
    for k in range(clients):
        world.add(Sender(f"client-{k}", plans.get(k, []), linger=0.0))
    world.run()
    return gatherer


def update(t, rnd):
    return (t, "server", "update", None, rnd)


def test_gather_stops_at_the_deadline_with_what_came():
    g = world_with(Gatherer(until=5.0), {0: [update(0, 0)], 1: [update(10, 0)]})
    assert [m.src for m in g.got.messages] == ["client-0"] and g.ended == 5.0 and not g.got.complete


def test_gather_stops_when_every_expected_sender_answered():
    g = world_with(Gatherer(until=50.0, round=1, expected=["client-0", "client-1"]),
                   {0: [update(0, 1)], 1: [update(2, 1)], 2: [update(1, 1)]})
    assert g.ended == 3.0 and g.got.sources == {"client-0", "client-1", "client-2"} and g.got.complete


def test_gather_counts_only_the_round_asked_for_but_shows_every_reply():
    g = world_with(Gatherer(until=50.0, round=2, quorum=1), {0: [update(0, 1), update(1, 2)]})
    assert [m.round for m in g.got.messages] == [2] and g.seen == [("client-0", 1), ("client-0", 2)]
    assert g.got.times == [2.0]


def test_gather_stops_at_a_quorum_of_counted_replies():
    g = world_with(Gatherer(until=50.0, quorum=2), {k: [update(k, 0)] for k in range(3)})
    assert g.ended == 2.0 and len(g.got) == 2


def test_gather_with_a_custom_test_counts_what_it_accepts():
    g = world_with(Gatherer(until=50.0, counts=lambda m: m.round >= 3, expected=["client-0"]),
                   {0: [update(0, 2), update(1, 4)]})
    assert g.ended == 2.0 and [m.round for m in g.got.messages] == [4]


def test_gather_receives_nothing_when_nothing_is_expected():
    g = world_with(Gatherer(until=50.0, expected=[]), {0: [update(0, 0)]})
    assert g.ended == 0.0 and g.seen == [] and g.got.complete


class Picker(Actor):
    def __init__(self, fn):
        super().__init__("server")
        self.fn = fn

    async def run(self):
        self.result = self.fn(self)


def run_picker(fn, seed=0, **behaviour):
    from netemu import NodeBehaviour

    g = star(20)
    world = World(g, seed=seed, behaviours={n: NodeBehaviour(**behaviour) for n in g.nodes if n != "server"})
    picker = world.add(Picker(fn))
    world.run()
    return picker.result


CLIENTS = [f"client-{k}" for k in range(20)]


def test_sample_picks_k_by_keyed_draws_the_same_in_every_world():
    first = run_picker(lambda a: sample(a, "schedule/server", CLIENTS, 5, 3))
    assert len(set(first)) == 5 and first == run_picker(lambda a: sample(a, "schedule/server", CLIENTS, 5, 3))
    assert first != run_picker(lambda a: sample(a, "schedule/server", CLIENTS, 5, 4))
    assert run_picker(lambda a: sample(a, "s", CLIENTS, 0, 1)) == CLIENTS


def test_keep_each_keeps_about_p_of_the_candidates():
    kept = [run_picker(lambda a, r=r: keep_each(a, "schedule", CLIENTS, 0.25, r)) for r in range(40)]
    share = sum(map(len, kept)) / (40 * 20)
    assert abs(share - 0.25) < 0.07  # 800 Bernoulli(0.25) draws: sd 0.015, so 0.07 is > 4 sd


def test_participants_are_the_nodes_whose_participation_draw_succeeds():
    assert run_picker(lambda a: participants(a, CLIENTS, 1), participation=1.0) == CLIENTS
    assert run_picker(lambda a: participants(a, CLIENTS, 1), participation=0.0) == []
    some = run_picker(lambda a: participants(a, CLIENTS, 1), participation=0.5)
    assert 0 < len(some) < 20 and some == [c for c in CLIENTS if c in some]


def test_send_each_sends_one_payload_per_receiver():
    class Server(Actor):
        async def run(self):
            self.ids = send_each(self, "model", {"client-0": 1, "client-1": 2}, round=4)
            await self.sleep(1.0)  # the clients are daemons: stay until the messages arrived

    class Client(Actor):
        daemon = True

        async def run(self):
            msg = await self.recv("model")
            self.got = (msg.payload, msg.round)

    g = star(2)
    world = World(g, seed=0)
    server = world.add(Server("server"))
    clients = [world.add(Client(f"client-{k}")) for k in range(2)]
    world.run()
    assert len(server.ids) == 2 and [c.got for c in clients] == [(1, 4), (2, 4)]


def test_gaussian_release_adds_the_streams_noise_and_records_its_zcdp():
    w = np.arange(4.0)
    world = World(star(1), seed=7)
    actor = world.add(Picker(lambda a: None))
    out = gaussian_release(actor, w, sensitivity=2.0, variance=0.5, round=3)
    expected = w + math.sqrt(0.5) * world.streams.generator("privacy/server/3").standard_normal(4)
    assert np.array_equal(out, expected)
    assert world.privacy.spent["server"] == {3: pytest.approx(2.0**2 / (2 * 0.5))}


def test_no_family_keeps_its_own_collect_loop_or_noise_code():
    """The collection loop and the DP release are written once, here; the families call them."""
    import re
    from pathlib import Path

    import netemu.algorithms

    for path in Path(netemu.algorithms.__file__).parent.glob("*.py"):
        text = path.read_text()
        assert not re.search(r"while .*await self\.recv\(", text), f"{path.name}: a collect loop; use coordination.gather"
        assert "privacy.spend(" not in text, f"{path.name}: DP noise by hand; use coordination.gaussian_release"
