"""Runs: determinism, common random numbers, failures, deadlocks, daemons and time limits."""

import io

import numpy as np
import pytest

from helpers import records
from netemu import (
    Actor, ActorFailed, Bernoulli, DeadlockError, Exponential, Link, MessageLog, NodeBehaviour, World, star,
)


class Server(Actor):
    def __init__(self, name, rounds=5, dim=3, round_time=5.0):
        super().__init__(name)
        self.rounds, self.dim, self.round_time = rounds, dim, round_time

    async def run(self):
        w = np.zeros(self.dim)
        for r in range(self.rounds):
            self.round = r
            self.broadcast("model", w)
            deadline = self.now + self.round_time
            got = []
            while (msg := await self.recv("update", until=deadline)) is not None:
                if msg.round == r:
                    got.append(msg.payload)
            if got:
                w = np.mean(got, axis=0)
            self.metric("updates", len(got))


class Client(Actor):
    daemon = True

    async def run(self):
        while True:
            msg = await self.recv("model")
            if self.participates(msg.round):
                await self.compute(1.0)
                self.send(msg.src, "update", msg.payload + 1, round=msg.round)


def run_fl(seed, n_clients=6, dim=3, sink=None, server_cls=Server):
    g = star(n_clients)
    links = {e: Link(Exponential(0.8), loss=Bernoulli(0.2), link_class=g.edges[e]["link_class"]) for e in g.edges}
    behaviours = {f"client-{k}": NodeBehaviour(participation=0.6, speed=1 + k) for k in range(n_clients)}
    world = World(g, seed=seed, links=links, behaviours=behaviours, log=MessageLog(sink))
    world.add(server_cls("server", dim=dim))
    for k in range(n_clients):
        world.add(Client(f"client-{k}"))
    return world.run()


def log_bytes(seed, **kw):
    buf = io.BytesIO()
    run_fl(seed, sink=buf, **kw)
    return buf.getvalue()


def test_the_same_seed_gives_a_byte_identical_log():
    assert log_bytes(5) == log_bytes(5)


def test_different_seeds_give_different_logs():
    assert log_bytes(5) != log_bytes(6)


def fates(log):
    """(src, dst, round, index on the link) -> drop reason or delivery delay."""
    recs = records(io.BytesIO(log))
    sends = {r["id"]: r for r in recs if r["event"] == "send"}
    index, out = {}, {}
    for i, r in sends.items():
        key = (r["src"], r["dst"], r["round"])
        index[key] = index.get(key, -1) + 1
        out[i] = (*key, index[key])
    return {out[r["id"]]: r.get("reason", r.get("delay")) for r in recs if r["event"] in ("deliver", "drop")}


def test_another_algorithm_meets_the_same_network_in_the_same_link_round_and_index():
    small, large = fates(log_bytes(9, dim=3)), fates(log_bytes(9, dim=50))
    # no bandwidth limit: message size changes nothing, so every shared coordinate has one fate
    shared = small.keys() & large.keys()
    assert len(shared) > 30
    assert all(small[k] == large[k] for k in shared)


def participants(log):
    return {(r["src"], r["round"]) for r in records(io.BytesIO(log)) if r["event"] == "send" and r["kind"] == "update"}


def test_adding_a_client_does_not_change_the_other_clients_draws():
    six, seven = log_bytes(4, n_clients=6), log_bytes(4, n_clients=7)
    assert participants(six) == {p for p in participants(seven) if p[0] != "client-6"}
    f6, f7 = fates(six), fates(seven)
    assert all(f7[k] == v for k, v in f6.items() if k in f7 and "client-6" not in k[:2])


class Faulty(Server):
    async def run(self):
        await self.sleep(2.0)
        self.send("client-0", "model", np.zeros(2))
        await self.sleep(1.5)
        raise ZeroDivisionError("bad aggregation")


def test_a_failing_actor_stops_the_run_with_its_name_time_and_traceback_and_the_log_is_kept(tmp_path):
    path = tmp_path / "messages.jsonl"
    with open(path, "wb") as f, pytest.raises(ActorFailed) as info:
        run_fl(1, sink=f, server_cls=Faulty)
    err = info.value
    assert err.actor == "server" and err.time == 3.5
    assert "ZeroDivisionError: bad aggregation" in str(err) and "in run" in err.details
    recs = list(records(io.BytesIO(path.read_bytes())))
    assert recs[0]["event"] == "send" and recs[0]["t"] == 2.0


class Stuck(Actor):
    async def run(self):
        await self.recv("never")


def test_a_deadlock_names_every_actor_and_what_it_waits_for():
    world = World(star(2), seed=0)
    world.add(Stuck("server"))
    world.add(Client("client-0"))
    world.add(Stuck("client-1"))
    with pytest.raises(DeadlockError) as info:
        world.run()
    assert info.value.waits == {
        "server": "recv(kind='never')",
        "client-0": "recv(kind='model')",
        "client-1": "recv(kind='never')",
    }
    assert "deadlock at virtual time 0" in str(info.value)


def test_daemons_are_cancelled_when_the_last_non_daemon_actor_returns():
    result = run_fl(2)
    assert result.complete and len([m for m in result.metrics if m[3] == "updates"]) == 5


def test_a_time_limit_ends_the_run_and_reports_messages_in_flight():
    g = star(1)
    world = World(g, seed=0, links={("server", "client-0"): Link(Exponential(100.0))})
    world.add(Server("server", rounds=1, round_time=1000.0))
    world.add(Client("client-0"))
    result = world.run(until=1e-3)
    assert not result.complete and result.virtual_time == 1e-3
    assert result.messages["total"]["in_flight"] == 1


class Waiter(Actor):
    """Records round 0, then waits for a message that never comes, with a deadline far away."""

    async def run(self):
        self.metric("m", 1.0)
        await self.recv("never", timeout=1e15)


def test_the_horizon_stops_a_run_that_only_waits_and_says_who_waits():
    world = World(star(1), seed=0)
    world.add(Waiter("server"))
    result = world.run(max_time=1000.0)
    assert (result.complete, result.stopped_by, result.virtual_time, result.rounds_done) == (False, "horizon", 1000.0, 1)
    assert result.waits == {"server": "recv(kind='never')"}


def test_until_comes_before_the_horizon_and_a_natural_end_has_no_stop_reason():
    world = World(star(1), seed=0)
    world.add(Waiter("server"))
    assert world.run(until=10.0, max_time=1000.0).stopped_by == "until"
    done = World(star(1), seed=0)
    done.add(Waiter("server"))
    result = done.run(max_time=2e15)  # the wait times out at 1e15, the actor returns
    assert (result.complete, result.stopped_by, result.virtual_time) == (True, None, 1e15)


def test_the_garbage_collector_runs_less_often_during_a_run_and_as_before_after_it():
    import gc

    from netemu import Actor

    seen = []

    class Probe(Actor):
        async def run(self):
            seen.append(gc.get_threshold())
            raise RuntimeError("stop here")

    before = gc.get_threshold()
    world = World(star(1), seed=0)
    world.add(Probe("server"))
    with pytest.raises(ActorFailed):
        world.run()
    assert seen[0][0] >= 100_000 and seen[0][0] > before[0]
    assert gc.get_threshold() == before  # restored, also when the run fails
