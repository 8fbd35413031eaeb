"""Batched sends and deliveries: one `send_many` call (or `broadcast`) gives every
message exactly what one `send` each would — ids, fates, records, in the same order —
and messages of a batch due at one instant, delivered in one event, interleave with
the code they wake exactly as one event per message would.  Proved by byte-identical
message logs and traces of the same traffic sent both ways."""

import io

import numpy as np

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import records
from netemu import Actor, Bernoulli, Constant, Exponential, Link, MessageLog, NodeBehaviour, World, star
from netemu.trace import TraceWriter


class Server(Actor):
    def __init__(self, name, rounds, mode, reply_payloads=False):
        super().__init__(name)
        self.rounds, self.mode, self.reply_payloads = rounds, mode, reply_payloads

    async def run(self):
        clients = sorted(self.neighbours)
        for r in range(self.rounds):
            self.round = r
            if self.mode == "batch" and not self.reply_payloads:
                self.broadcast("model", [r, 1.5], clients)
            elif self.mode == "batch":
                self.send_many(clients, "model", [[r, k] for k in range(len(clients))])
            else:
                for k, c in enumerate(clients):
                    self.send(c, "model", [r, k] if self.reply_payloads else [r, 1.5])
            got = 0
            while got < len(clients) and (await self.recv("update", until=(r + 1) * 10.0)) is not None:
                got += 1


class Client(Actor):
    daemon = True

    def __init__(self, name, busy):
        super().__init__(name)
        self.busy = busy

    async def run(self):
        while True:
            msg = await self.recv("model")
            if self.busy:  # not waiting when the next round's model arrives: it queues
                await self.sleep(3.0)
            await self.compute(1.0)
            self.send(msg.src, "update", msg.payload, round=msg.round)


def run(mode, link, *, n=6, rounds=4, crash=None, reply_payloads=False, seed=3):
    g = star(n)
    links = {e: link() for e in g.edges}
    log, trace = io.BytesIO(), io.BytesIO()
    writer = TraceWriter(trace, {"scenario": "batch"})
    behaviours = {f"client-{k}": NodeBehaviour(speed=2.0, slowdown_sigma=0.3 if k % 2 else 0.0) for k in range(n)}
    world = World(g, seed=seed, links=links, behaviours=behaviours, log=MessageLog(log), fates=writer.fates("a", 0))
    world.add(Server("server", rounds, mode, reply_payloads))
    for k in range(n):
        world.add(Client(f"client-{k}", busy=k % 3 == 0))
    if crash is not None:
        world.crash(crash[0], at=crash[1], recover_at=crash[2])
    world.run()
    writer.close(True)
    return log.getvalue(), trace.getvalue()


LINKS = {
    "same instant": lambda: Link(Constant(0.5)),
    "same instant, lossy, zero delay": lambda: Link(Constant(0.0), loss=Bernoulli(0.3)),
    "random delay, lossy": lambda: Link(Exponential(0.2), loss=Bernoulli(0.2)),
    "bandwidth queue": lambda: Link(Constant(0.25), bandwidth=1e5),
}


@pytest.mark.parametrize("link", LINKS.values(), ids=LINKS.keys())
def test_a_broadcast_batch_logs_and_traces_what_one_send_per_client_does(link):
    assert run("batch", link) == run("one by one", link)


@pytest.mark.parametrize("link", LINKS.values(), ids=LINKS.keys())
def test_send_many_with_a_payload_per_destination_matches_one_send_each(link):
    assert run("batch", link, reply_payloads=True) == run("one by one", link, reply_payloads=True)


def test_a_node_crashed_when_its_batch_arrives_drops_its_message_in_place():
    link = LINKS["same instant"]
    batched = run("batch", link, crash=("client-2", 0.3, 35.0))
    assert batched == run("one by one", link, crash=("client-2", 0.3, 35.0))
    assert any(r["event"] == "drop" and r["reason"] == "crash" for r in records(io.BytesIO(batched[0])))


class Late(Actor):
    """Not waiting when the model arrives: receives it later, from its inbox."""

    daemon = True

    async def run(self):
        await self.sleep(5.0)
        await self.recv("model")


def count_arrival_events(world):
    sizes = []
    arrive = world.network._arrive
    world.network._arrive = lambda ev: (sizes.append(len(ev.value)), arrive(ev))
    return sizes


def test_messages_of_one_broadcast_due_at_one_instant_share_one_event():
    world = World(star(5), seed=0, links={e: Link(Constant(1.0)) for e in star(5).edges})
    sizes = count_arrival_events(world)
    world.add(Server("server", 1, "batch"))
    for k in range(5):
        world.add(Late(f"client-{k}"))
    world.run()
    assert sizes == [5]


def test_a_delivery_that_wakes_a_receiver_lets_it_run_before_the_next_one():
    world = World(star(3), seed=0, links={e: Link(Constant(1.0)) for e in star(3).edges})
    sizes = count_arrival_events(world)
    world.add(Server("server", 1, "batch"))
    for k in range(3):
        world.add(Client(f"client-{k}", busy=False))
    world.run()
    assert sizes[:3] == [3, 2, 1]  # the rest of the batch is put back after each wake-up


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 7), delay=st.sampled_from([0.0, 0.5, 2.0]),
       loss=st.sampled_from([0.0, 0.5]))
def test_batched_and_one_by_one_runs_are_identical_for_any_seed(seed, n, delay, loss):
    link = lambda: Link(Constant(delay), loss=Bernoulli(loss) if loss else None)
    assert run("batch", link, n=n, rounds=3, seed=seed) == run("one by one", link, n=n, rounds=3, seed=seed)


class Keeper(Actor):
    """Keeps the payload of every message it receives, and changes it in place."""

    daemon = True

    def __init__(self, name, kept):
        super().__init__(name)
        self.kept = kept

    async def run(self):
        while True:
            msg = await self.recv()
            self.kept.append(msg.payload)
            msg.payload["w"][0] += 1.0
            msg.payload["tags"].append(self.name)


@pytest.mark.parametrize("delay", [Constant(1.0), Exponential(0.5)], ids=["one instant", "apart"])
def test_each_receiver_of_a_broadcast_gets_a_payload_of_its_own(delay):
    """The shared payload is decoded once; no receiver can see another's changes."""
    g = star(4)
    world = World(g, seed=2, links={e: Link(delay) for e in g.edges})
    kept = []
    for k in range(4):
        world.add(Keeper(f"client-{k}", kept))

    class Once(Actor):
        async def run(self):
            self.broadcast("model", {"w": np.zeros(3), "tags": []})
            await self.sleep(10.0)  # the run ends when this actor does

    world.add(Once("server"))
    world.run()
    assert len(kept) == 4
    for p in kept:
        assert p["w"].tolist() == [1.0, 0.0, 0.0] and len(p["tags"]) == 1


def test_send_many_needs_one_payload_per_destination():
    world = World(star(2), seed=0)
    server = world.add(Server("server", 0, "batch"))
    with pytest.raises(ValueError, match="one payload per destination"):
        server.send_many(["client-0", "client-1"], "model", [1])


@pytest.mark.parametrize("traced", [False, True], ids=["drawn", "traced"])
def test_participations_of_a_round_are_the_per_node_draws(traced):
    g = star(40)
    behaviours = {f"client-{k}": NodeBehaviour(participation=(k % 5) / 4) for k in range(40)}  # 0, .25, .5, .75, 1
    trace_a, trace_b = io.BytesIO(), io.BytesIO()
    worlds = []
    for buf in (trace_a, trace_b):
        fates = TraceWriter(buf, {}).fates("a", 0) if traced else None
        worlds.append(World(g, seed=9, behaviours=behaviours, **({"fates": fates} if fates else {})))
    names = [f"client-{k}" for k in range(40)]
    for r in range(3):
        together = worlds[0].network.participations(names, r)
        one_by_one = [worlds[1].network.participates(n, r) for n in names]
        assert together.tolist() == one_by_one
    assert 0 < sum(one_by_one) < 40
    assert trace_a.getvalue() == trace_b.getvalue()
