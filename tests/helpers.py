"""Small actors shared by the tests."""

import io

import orjson

from netemu import Actor, MessageLog, World


class Sender(Actor):
    """Sends `plan` = [(time, dst, kind, payload, round), ...] in time order, then
    waits `linger` seconds (the run ends when the last non-daemon actor returns)."""

    def __init__(self, name, plan, linger=100.0):
        super().__init__(name)
        self.plan, self.linger = plan, linger

    async def run(self):
        for t, dst, kind, payload, rnd in self.plan:
            await self.sleep(max(0.0, t - self.now))
            self.send(dst, kind, payload, round=rnd)
        await self.sleep(self.linger)


class Sink(Actor):
    """Receives forever and remembers (time, message)."""

    daemon = True

    def __init__(self, name):
        super().__init__(name)
        self.got = []

    async def run(self):
        while True:
            msg = await self.recv()
            self.got.append((self.now, msg))


def logged_world(graph, **kw):
    buf = io.BytesIO()
    world = World(graph, log=MessageLog(buf), **kw)
    return world, buf


def records(buf):
    return [orjson.loads(line) for line in buf.getvalue().splitlines()]
