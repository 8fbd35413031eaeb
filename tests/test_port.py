"""The node port and what a World hosts: anything implementing `netemu.engine.port.Hosted`."""

import asyncio

import pytest

from netemu import Actor, ActorFailed, NodeBehaviour, World, star
from netemu.coordination import participants


class Pinger(Actor):
    async def run(self):
        self.broadcast("ping", 0)
        self.got = sorted([(await self.recv("pong")).src for _ in self.neighbours])
        await self.sleep(15.0)  # past the crash


class Echoes:
    """A host that is neither an Actor nor a Cohort: it answers every ping of its nodes
    from the delivery itself, through the engine."""

    daemon = True

    def __init__(self, name, nodes):
        self.name, self._nodes = name, nodes
        self.crashed = []

    def host_nodes(self):
        return self._nodes

    def host_attach(self, engine):
        self.engine = engine
        for node in self._nodes:
            engine.connect(node, self.receive)

    def receive(self, msg):
        self.engine.send(msg.dst, msg.src, "pong", None, msg.round)
        return False

    async def run(self):
        await asyncio.get_running_loop().create_future()

    def host_crash(self, node):
        self.crashed.append(node)
        return False  # the host goes on for its other nodes

    def host_recover(self, node):
        return False

    def host_waits(self):
        return {node: "a ping" for node in self._nodes}


def test_a_world_hosts_anything_that_implements_the_hosted_protocol():
    world = World(star(3), seed=1)
    server = world.add(Pinger("server"))
    echoes = world.add(Echoes("echoes", [f"client-{k}" for k in range(3)]))
    world.crash("client-1", at=10.0)
    result = world.run()
    assert server.got == ["client-0", "client-1", "client-2"]
    assert echoes.crashed == ["client-1"] and world.hosts["client-2"] is echoes
    assert result.messages["total"]["delivered"] == 6


def test_a_host_cannot_answer_for_a_node_another_answers_for():
    world = World(star(2), seed=1)
    world.add(Echoes("echoes", ["client-0"]))
    with pytest.raises(ValueError, match="'client-0' already has an actor"):
        world.add(Echoes("more", ["client-0", "client-1"]))


class Watcher(Actor):
    async def run(self):
        clients = self.neighbours
        await self.sleep(5.0)
        self.up = self.port.available(clients)
        self.checked_in = {r: participants(self, clients, r) for r in range(20)}


def test_the_control_plane_reports_liveness_and_each_nodes_own_check_in():
    behaviours = {f"client-{k}": NodeBehaviour(participation=0.5) for k in range(4)}
    world = World(star(4), seed=3, behaviours=behaviours)
    watcher = world.add(Watcher("server"))
    world.crash("client-2", at=1.0)
    world.run()
    assert watcher.up == ["client-0", "client-1", "client-3"]
    own = {r: [c for c in watcher.neighbours if world.network.participates(c, r)] for r in range(20)}
    assert watcher.checked_in == own
    assert 0 < sum(map(len, own.values())) < 80  # the draws are not all alike


class Busy(__import__("netemu").Cohort):
    """Clients with work only in even rounds (client-0) or in rounds below 10 (the others)."""

    receives = "model"
    asked: list = []

    def on_message(self, m, msg):
        pass

    def has_work(self, ms, round):
        type(self).asked.append((len(ms), round))
        return [round % 2 == 0 if m.name == "client-0" else round < 10 for m in ms]


@pytest.mark.parametrize("cohort", [True, False])
def test_a_check_in_needs_the_clients_own_readiness_and_its_participation_draw(cohort):
    from netemu.engine.solo import add_clients

    behaviours = {f"client-{k}": NodeBehaviour(participation=0.5) for k in range(4)}
    world = World(star(4), seed=3, behaviours=behaviours)
    watcher = world.add(Watcher("server"))
    Busy.asked = []
    add_clients(world, Busy, "clients", [f"client-{k}" for k in range(4)], cohort=cohort)
    world.run()
    drawn = {r: [c for c in watcher.neighbours if world.network.participates(c, r)] for r in range(20)}
    ready = {r: [c for c in drawn[r] if (r % 2 == 0 if c == "client-0" else r < 10)] for r in range(20)}
    assert watcher.checked_in == ready and ready != drawn
    assert Busy.asked == ([(4, r) for r in range(20)] if cohort else [(1, r) for r in range(20) for _ in range(4)])


@pytest.mark.parametrize("fails_in", ["done", "ends"])
def test_an_error_in_a_gathers_callback_stops_the_run_naming_the_actor(fails_in):
    """A collection's `done` or `ends` that raises fails the waiting actor (ActorFailed
    with its name and virtual time), not the network's delivery or the loop's handler."""
    got: list = []

    def done():
        if fails_in == "done" and len(got) == 1:
            raise RuntimeError("boom in done")
        return len(got) >= 3

    def ends(msg):
        if fails_in == "ends":
            raise RuntimeError("boom in ends")
        return len(got) + 1 >= 3

    class Server(Actor):
        async def run(self):
            await self.collect("u", got.append, done, ends, until=10.0)

    class Client(Actor):
        async def run(self):
            await self.sleep(1.0 + int(self.name.split("-")[1]))
            self.send("server", "u", 1)

    world = World(star(3), seed=1)
    world.add(Server("server"))
    for i in range(3):
        world.add(Client(f"client-{i}"))
    with pytest.raises(ActorFailed, match=f"actor 'server' failed at virtual time .*boom in {fails_in}"):
        world.run(max_time=100)
