"""A Cohort stands for many clients without changing the emulation: the same log, trace,
metrics and reports as one actor per client."""

import io

import numpy as np
import orjson
import pytest

from netemu import Actor, ActorFailed, Bernoulli, Cohort, Constant, Exponential, Link, MessageLog, NodeBehaviour, World, star
from helpers import linear_task
from netemu.algorithms.fedavg import SPEC, FedAvgParams

N = 12


def lossy_links(g):
    return {e: Link(Exponential(0.3, base=0.05), loss=Bernoulli(0.1), bandwidth=1e5, link_class=g.edges[e]["link_class"])
            for e in g.edges}


def varied_nodes():
    """Random participation and compute slow-downs; clients 0-2 are stragglers that miss
    deadlines (models queue while they compute); client-4 crashes and recovers twice."""
    out = {f"client-{k}": NodeBehaviour(participation=0.7, speed=40.0, slowdown_sigma=0.5) for k in range(N)}
    for k in range(3):
        out[f"client-{k}"] = NodeBehaviour(participation=0.9, speed=3.0, slowdown_sigma=0.3)
    out["client-4"] = NodeBehaviour(participation=0.8, speed=40.0, crashes=((7.0, 21.5), (33.0, 40.0)))
    out["client-5"] = NodeBehaviour(speed=40.0, crashes=((12.0, None),))  # never comes back
    return out


def fedavg_run(cohort, links=None, behaviours=None, rounds=10, samples=(20, 80), until=None):
    g = star(N)
    keys = []

    def fates(key, draw):
        value = draw()
        keys.append((key, value))
        return value

    buf = io.BytesIO()
    world = World(g, seed=5, links=links(g) if links else None, behaviours=behaviours, log=MessageLog(buf), fates=fates)
    task = linear_task(world, [f"client-{k}" for k in range(N)], dim=4, lr=0.1, steps=3, samples_min=samples[0], samples_max=samples[1])
    SPEC.build(world, FedAvgParams(round_time=4.0), task, rounds, cohort=cohort)
    result = world.run(until=until)
    return buf.getvalue(), keys, result, world


def clients_log(g, server, clients, as_cohort, **world):
    """The message log of `server` and the graph's clients, as one cohort of class `clients` or
    as one actor of class `clients` each."""
    buf = io.BytesIO()
    w = World(g, log=MessageLog(buf), **world)
    w.add(server)
    names = [n for n in g.nodes if n != server.name]
    if as_cohort:
        w.add(clients("clients", names))
    else:
        for n in names:
            w.add(clients(n))
    w.run()
    return buf.getvalue()


def test_a_fedavg_cohort_writes_the_same_log_trace_and_metrics_as_one_actor_per_client():
    one_each = fedavg_run(False, lossy_links, varied_nodes())
    cohort = fedavg_run(True, lossy_links, varied_nodes())
    assert b'"event":"crash"' in one_each[0] and b'"reason":"crash"' in one_each[0]  # the case covers crashes
    assert cohort[0] == one_each[0]
    assert cohort[1] == one_each[1]
    assert cohort[2].metrics == one_each[2].metrics
    assert np.array_equal(cohort[3].actors["server"].w, one_each[3].actors["server"].w)


@pytest.mark.parametrize(("group_min", "group_max"), [(2, 4096), (4, 4096), (2, 3)])
def test_a_fedavg_cohort_training_its_waiting_members_at_once_sends_what_each_would_alone(monkeypatch, group_min, group_max):
    # groups as small as 2 and 4 (or capped at 3) form among these 12 clients (stragglers, crashes and recoveries
    # included), stacked by sample count (three counts here): the models sent, hence the server's
    # metrics and model, are those trained one by one
    import netemu.algorithms.fedavg as fedavg
    from netemu.tasks.supervised import LeastSquaresTask

    def nodes():  # client-4 also crashes while computing (with groups of 2: after its group was trained)
        return {**varied_nodes(), "client-4": NodeBehaviour(participation=0.8, speed=40.0, crashes=((5.5, 11.5), (33.0, 40.0)))}

    one_each = fedavg_run(False, lossy_links, nodes(), samples=(20, 22))
    sizes = []
    train_many = LeastSquaresTask.train_many
    monkeypatch.setattr(LeastSquaresTask, "train_many", lambda self, w, clients, *a, **k: sizes.append(len(clients)) or train_many(self, w, clients, *a, **k))
    monkeypatch.setattr(fedavg, "GROUP_MIN", group_min)
    monkeypatch.setattr(fedavg, "GROUP_MAX", group_max)
    cohort = fedavg_run(True, lossy_links, nodes(), samples=(20, 22))
    assert sizes and group_min <= min(sizes) and max(sizes) <= group_max and sum(sizes) > N  # grouped, in several rounds
    assert cohort[0] == one_each[0] and cohort[1] == one_each[1]
    assert cohort[2].metrics == one_each[2].metrics
    assert np.array_equal(cohort[3].actors["server"].w, one_each[3].actors["server"].w)


def test_equal_instants_are_ordered_as_with_one_actor_per_client():
    """Constant delays and equal data sizes: every client computes for the same time and
    replies at the same instant, so the order of the replies is the loop's order of
    timers that tie — the cohort schedules exactly the same timers."""
    def constant(g):
        return {e: Link(Constant(0.5), link_class=g.edges[e]["link_class"]) for e in g.edges}

    same = {f"client-{k}": NodeBehaviour(speed=100.0) for k in range(N)}
    one_each = fedavg_run(False, constant, same, samples=(30, 30))
    cohort = fedavg_run(True, constant, same, samples=(30, 30))
    assert cohort[0] == one_each[0]


def test_a_crashed_member_sends_nothing_until_it_recovers():
    log = fedavg_run(True, lossy_links, varied_nodes())[0].decode()
    import orjson
    recs = [orjson.loads(line) for line in log.splitlines()]
    sends = [r["t"] for r in recs if r["event"] == "send" and r["src"] == "client-5"]
    assert sends and max(sends) < 12.0
    down = [r["t"] for r in recs if r["event"] == "send" and r["src"] == "client-4" and (7.0 <= r["t"] < 21.5 or 33 <= r["t"] < 40)]
    assert down == []


def test_a_stopped_run_names_what_each_member_waits_for_as_actors_would():
    one_each = fedavg_run(False, lossy_links, varied_nodes(), rounds=50, until=13.3)[2]
    cohort = fedavg_run(True, lossy_links, varied_nodes(), rounds=50, until=13.3)[2]
    assert cohort.waits == one_each.waits
    assert cohort.waits["client-5"] == "nothing (crashed)"
    assert cohort.waits["client-7"] in ("recv(kind='model')",) or cohort.waits["client-7"].startswith("sleep(")


class Faulty(Cohort):
    receives = "model"

    def on_message(self, m, msg):
        self.compute(m, 1.0, self.reply, msg)

    def reply(self, m, msg):
        if m.name == "client-2":
            raise ZeroDivisionError("boom")
        self.send(m, msg.src, "update", 1)


class Broadcaster(__import__("netemu").Actor):
    async def run(self):
        self.broadcast("model", 0)
        await self.sleep(10.0)


def test_an_error_in_cohort_code_stops_the_run_naming_the_member_and_the_time():
    world = World(star(3), seed=1, links={e: Link(Constant(1.0)) for e in star(3).edges})
    world.add(Broadcaster("server"))
    world.add(Faulty("clients", ["client-0", "client-1", "client-2"]))
    with pytest.raises(ActorFailed) as info:
        world.run()
    assert info.value.actor == "client-2"
    assert info.value.time == 2.0  # delivered at 1, computed for 1 virtual second
    assert "ZeroDivisionError: boom" in str(info.value)


def test_a_member_needs_a_node_and_no_other_actor():
    world = World(star(2), seed=1)
    with pytest.raises(ValueError, match="member 'client-9' has no node"):
        world.add(Faulty("clients", ["client-0", "client-9"]))
    world.add(Broadcaster("client-1"))
    with pytest.raises(ValueError, match="member 'client-1' already has an actor"):
        world.add(Faulty("clients", ["client-0", "client-1"]))


def wake_per_message(wait):
    """`NodePort.wait` told nothing of how a gather ends: one wake-up per message."""
    async def waiting(self, kind=None, *, until=None, timeout=None, take=None, done=None, ends=None):
        return await wait(self, kind, until=until, timeout=timeout, take=take, done=done, ends=None)
    return waiting


@pytest.mark.parametrize("links, nodes, samples", [
    (lossy_links, varied_nodes(), (20, 80)),
    (lambda g: {e: Link(Constant(0.5), link_class=g.edges[e]["link_class"]) for e in g.edges},
     {f"client-{k}": NodeBehaviour(speed=100.0) for k in range(N)}, (30, 30)),
])
def test_a_gather_woken_once_writes_what_a_loop_of_recv_writes(monkeypatch, links, nodes, samples):
    from netemu.engine import gather
    from netemu.engine.port import NodePort

    woken = []
    plain = gather.collect

    async def collecting(*args):
        woken.append(1)
        return await plain(*args)

    monkeypatch.setattr(gather, "collect", collecting)
    woken_once = fedavg_run(True, links, nodes, samples=samples)
    assert woken  # the gathers were woken once each
    monkeypatch.setattr(NodePort, "wait", wake_per_message(NodePort.wait))
    woken.clear()
    per_message = fedavg_run(True, links, nodes, samples=samples)
    assert not woken
    assert woken_once[0] == per_message[0] and woken_once[1] == per_message[1]
    assert woken_once[2].metrics == per_message[2].metrics


def shipped_run(scenario, sets, out):
    from pathlib import Path

    from netemu.run.runner import execute
    from netemu.scenario import load_scenario

    root = Path(__file__).parent.parent
    execute(load_scenario(root / "scenarios" / scenario, [*sets, "run.runs=1", "output.plots=false"]), out, quiet=True)
    return {f.relative_to(out): f.read_bytes() for f in sorted(out.rglob("*"))
            if f.suffix in (".jsonl", ".msgpack", ".csv")}


@pytest.mark.parametrize("module, scenario, sets", [
    ("fedavg", "quickstart_scripted.toml", ["run.rounds=12"]),  # a crash and a recovery
    ("pgfl", "pgfl_faults.toml", ["run.rounds=4"]),  # crashes, DP noise
    ("online_fl", "paofed_fig4_2a.toml", ["run.rounds=15"]),
    ("online_fl", "paofed_fig4_5.toml", ["run.rounds=15"]),  # PSO-Fed, Online-Fed, signSGD
])
def test_shipped_scenarios_write_the_same_files_with_cohorts_as_with_one_actor_per_client(
        monkeypatch, tmp_path, module, scenario, sets):
    import importlib
    build = importlib.import_module(f"netemu.algorithms.{module}").build
    cohorts = shipped_run(scenario, sets, tmp_path / "cohorts")
    monkeypatch.setitem(build.__kwdefaults__, "cohort", False)
    one_each = shipped_run(scenario, sets, tmp_path / "actors")
    assert cohorts.keys() == one_each.keys() and len(cohorts) >= 3
    for name in cohorts:
        if name.name == "messages.jsonl" and module == "online_fl":  # its clients handle messages in arrays:
            # the order within an instant is the cohort's (docs/formats.md), the records the same
            assert cohorts[name] != one_each[name] and by_instant(cohorts[name]) == by_instant(one_each[name]), name
        else:
            assert cohorts[name] == one_each[name], name


def by_instant(log: bytes) -> list[list[bytes]]:
    """The records of a message log, instant by instant (in file order), each instant's sorted."""
    groups: list[list[bytes]] = []
    last = None
    for line in log.splitlines():
        t = line[: line.index(b",")]  # the leading {"t":…
        if t != last:
            groups.append([])
            last = t
        groups[-1].append(line)
    return [sorted(g) for g in groups]


def test_a_gather_waits_on_one_future_however_many_replies_come(monkeypatch):
    from netemu.engine.actors import Inbox
    from netemu.coordination import gather

    made = []
    plain = Inbox.waiter

    def counting(self, kind, collect=None):
        made.append(kind)
        return plain(self, kind, collect)

    class Server(__import__("netemu").Actor):
        async def run(self):
            self.broadcast("model", 0)
            self.got = await gather(self, "update", 50.0, quorum=8)

    class Echo(Cohort):
        receives = "model"

        def on_message(self, m, msg):
            self.sleep(m, 1.0 + m.index, self.reply, msg)

        def reply(self, m, msg):
            self.send(m, msg.src, "update", m.index)

    monkeypatch.setattr(Inbox, "waiter", counting)
    world = World(star(8), seed=1)
    server = world.add(Server("server"))
    world.add(Echo("clients", [f"client-{k}" for k in range(8)]))
    world.run()
    assert sorted(m.payload for m in server.got.messages) == list(range(8)) and server.got.complete
    assert made == ["update"]


@pytest.mark.parametrize("pause", [0.0, 1e-10, 0.5], ids=["sleep 0", "a timer due within the clock's resolution", "a timer"])
def test_members_woken_by_one_broadcast_batch_interleave_as_actors_would(pause):
    """A broadcast due at one instant is delivered as one batch; a member woken by it runs
    at once, and what it schedules for the same instant (a zero sleep, a timer due within
    the clock's resolution) still runs before the batch's next delivery, as the woken
    actor's would."""
    from netemu import Actor

    class Server(Actor):
        async def run(self):
            for r in range(3):
                self.round = r
                self.broadcast("model", r)
                for _ in range(6):
                    await self.recv("update", timeout=5.0)

    class Clients(Cohort):
        receives = "model"

        def on_message(self, m, msg):
            self.world.log(t=self.now, event="note", actor=m.name, step="woken")
            self.sleep(m, pause, self.reply, msg)

        def reply(self, m, msg):
            self.world.log(t=self.now, event="note", actor=m.name, step="after the pause")
            self.send(m, msg.src, "update", msg.payload, round=msg.round)

    class Client(Actor):
        daemon = True

        async def run(self):
            while True:
                msg = await self.recv("model")
                self.world.log(t=self.now, event="note", actor=self.name, step="woken")
                await self.sleep(pause)
                self.world.log(t=self.now, event="note", actor=self.name, step="after the pause")
                self.send(msg.src, "update", msg.payload, round=msg.round)

    def run(as_cohort):
        g = star(6)
        return clients_log(g, Server("server"), Clients if as_cohort else Client, as_cohort, seed=1,
                           links={e: Link(Constant(1.0)) for e in g.edges})

    actors = run(False)
    assert actors.count(b'"step":"after the pause"') == 18
    assert run(True) == actors


class Speaker(__import__("netemu").Actor):
    """A client that sends before its loop (at its start and after each recovery)."""

    daemon = True

    async def run(self):
        self.round = 0
        self.send("server", "hello", self.incarnation)
        while True:
            msg = await self.recv("model")
            self.round = msg.round
            await self.compute(2.0)
            self.send(msg.src, "update", msg.payload + 1)


class Speakers(Cohort):
    receives = "model"

    def on_member_start(self, m):
        m.round = 0
        self.send(m, "server", "hello", m.incarnation)

    def on_message(self, m, msg):
        m.round = msg.round
        self.compute(m, 2.0, self.reply, msg)

    def reply(self, m, msg):
        self.send(m, msg.src, "update", msg.payload + 1)


class Rounds(__import__("netemu").Actor):
    async def run(self):
        for r in range(6):
            self.round = r
            self.broadcast("model", r)
            await self.sleep(3.0)


def test_a_member_that_speaks_first_does_so_at_the_start_and_after_each_recovery():
    def run(as_cohort):
        g = star(4)
        behaviours = {"client-1": NodeBehaviour(crashes=((2.5, 7.2),)), "client-2": NodeBehaviour(crashes=((4.0, None),))}
        return clients_log(g, Rounds("server"), Speakers if as_cohort else Speaker, as_cohort, seed=2,
                           links={e: Link(Exponential(0.3)) for e in g.edges}, behaviours=behaviours)

    log = run(True)
    assert log.count(b'"kind":"hello","round":0,"bytes"') == 2 * 5  # sent and delivered: 4 at the start, client-1 again
    assert log == run(False)


# ------------------------------------------------------------ members' messages handled as arrays


class Echo(Cohort):
    """Answers each model at once, a batch of members in one call (`on_messages`, `send_from`)."""

    receives = "model"
    batches: list[list[str]] = []

    def on_messages(self, ms, msgs):
        type(self).batches.append([m.name for m in ms])
        for m, msg in zip(ms, msgs):
            m.round = msg.round
        self.send_from(ms, "server", "update", [msg.payload + 1 for msg in msgs])


class EchoOne(Cohort):
    """The same logic, a message at a time."""

    receives = "model"

    def on_message(self, m, msg):
        m.round = msg.round
        self.send(m, "server", "update", msg.payload + 1)


class Broadcasts(Actor):
    """Broadcasts a model every second and gathers the updates until the next."""

    def __init__(self, rounds=4):
        super().__init__("server")
        self.rounds, self.got = rounds, []

    async def run(self):
        from netemu.coordination import gather
        for r in range(self.rounds):
            self.round = r
            self.broadcast("model", np.full(2, float(r)))
            replies = await gather(self, "update", self.now + 1.0)
            self.got.append(sorted((m.src, float(m.payload[0])) for m in replies.messages))


def echo_run(logic, *, cohort=True, behaviours=None):
    g = star(5)
    links = {e: Link(Constant(0.25), link_class=g.edges[e]["link_class"]) for e in g.edges}
    buf = io.BytesIO()
    world = World(g, seed=3, links=links, behaviours=behaviours, log=MessageLog(buf))
    server = Broadcasts()
    world.add(server)
    from netemu.engine.solo import add_clients
    add_clients(world, lambda n, ms: logic(n, ms), "clients", [f"client-{k}" for k in range(5)], cohort=cohort)
    world.run()
    return buf.getvalue(), server.got


def test_a_broadcast_due_at_one_instant_reaches_the_cohort_in_one_call_deliveries_first():
    Echo.batches = []
    log, got = echo_run(Echo)
    assert Echo.batches == [[f"client-{k}" for k in range(5)]] * 4  # one call per broadcast
    assert got == [[(f"client-{k}", r + 1.0) for k in range(5)] for r in range(4)]
    records = [orjson.loads(line) for line in log.splitlines()]
    at = [(r["event"], r["src"]) for r in records if r["t"] == 0.25]
    assert at == [("deliver", "server")] * 5 + [("send", f"client-{k}") for k in range(5)]  # docs/formats.md
    # the same records, ids and fates as the message-at-a-time logic: only the order within an instant differs
    one, got_one = echo_run(EchoOne)
    assert got_one == got and log != one and by_instant(log) == by_instant(one)
    # one actor per client (`Solo`) runs the array logic a member at a time: the other logic's very log
    solo, got_solo = echo_run(Echo, cohort=False)
    assert solo == one and got_solo == got


def test_a_crashed_member_is_left_out_of_the_batch_and_its_message_dropped():
    Echo.batches = []
    behaviours = {"client-2": NodeBehaviour(crashes=((0.5, 2.1),))}
    log, got = echo_run(Echo, behaviours=behaviours)
    everyone = [f"client-{k}" for k in range(5)]
    assert Echo.batches == [everyone, ["client-0", "client-1", "client-3", "client-4"], everyone, everyone]  # down in round 1
    assert [src for src, _ in got[1]] == ["client-0", "client-1", "client-3", "client-4"]
    drops = [orjson.loads(line) for line in log.splitlines() if b'"drop"' in line]
    assert [(d["dst"], d["reason"], d["t"]) for d in drops] == [("client-2", "crash", 1.25)]


class Ticking(Actor):
    """Broadcasts, then at the very instant the models arrive sends a tick and reports a metric:
    a timer due where the batch is delivered."""

    async def run(self):
        for r in range(2):
            self.round = r
            self.broadcast("model", np.full(2, float(r)))
            await self.sleep(0.25)
            self.send("client-0", "tick", 0)
            self.metric("m", r)
            await self.sleep(0.75)


class Twice(Actor):
    """Sends client-0 two models and client-1 one, in one call."""

    async def run(self):
        self.round = 0
        self.send_many(["client-0", "client-0", "client-1"], "model", [np.zeros(1), np.ones(1), np.zeros(1)])
        await self.sleep(2)


@pytest.mark.parametrize("server", [Ticking, Twice])
def test_a_batch_takes_no_step_ahead_of_what_one_message_at_a_time_would_run_first(server):
    """A timer due at the batch's instant runs after the first member, as it would one message at a
    time (not after the whole batch); a member's second message comes after its first is handled.
    The ids, metrics and records are then those of one actor per client, in the batch's order."""
    def run(cohort):
        g = star(2)
        links = {e: Link(Constant(0.25), link_class=g.edges[e]["link_class"]) for e in g.edges}
        buf = io.BytesIO()
        world = World(g, seed=3, links=links, log=MessageLog(buf))
        world.add(server("server"))
        from netemu.engine.solo import add_clients
        add_clients(world, lambda n, ms: Echo(n, ms), "clients", ["client-0", "client-1"], cohort=cohort)
        result = world.run()
        ids = sorted((r["id"], r["event"], r["src"]) for r in map(orjson.loads, buf.getvalue().splitlines()) if "id" in r)
        return buf.getvalue(), ids, result.metrics

    batched, solo = run(True), run(False)
    assert batched[1] == solo[1] and batched[2] == solo[2] and by_instant(batched[0]) == by_instant(solo[0])


def test_an_error_in_on_messages_stops_the_run_naming_the_members():
    class Broken(Echo):
        def on_messages(self, ms, msgs):
            raise RuntimeError("boom")

    with pytest.raises(ActorFailed, match=r"client-0 \(handling 5 members' messages at once\)"):
        echo_run(Broken)


def test_a_cohort_defining_neither_handler_is_told_so():
    class Empty(Cohort):
        receives = "model"

    with pytest.raises(ActorFailed, match="defines neither on_message nor on_messages"):
        echo_run(Empty)
