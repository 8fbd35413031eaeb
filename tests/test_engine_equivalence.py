"""Differential fuzzing of the engine: random small worlds — a server actor and clients, as
one actor each or as one Cohort — must write byte-identical message logs and fate keys
(what a trace records) whichever way the clients run (issue 15's central claim).

Each world is drawn from one seed: links with constant delays (ties), exponential delays,
loss, bandwidth queues and outages; compute slow-downs, participation, crashes with and
without recovery; a server that broadcasts a shared payload or sends one per client and
gathers with `recv(until=...)`, `recv(timeout=...)` or `collect`, with quorums and
deadlines; clients that compute, sleep, answer pings at once, speak first (at the start and
after each recovery), start SimPy processes when woken, raise, and mutate what they receive
(a broadcast's receivers must not share a payload).  The worlds are also compared, digest
for digest, with a reference (tests/data): what main wrote before issue 15's engine changes,
made again once when timers due at the same instant came to run in the order they were set
(issue 40).

Run as a script, it prints one digest per seed and style (one actor per client, cohort), so
the same worlds can be run under another checkout of netemu and compared line by line:
    python tests/test_engine_equivalence.py 0 200 > digests.txt
"""

from __future__ import annotations

import contextvars
import hashlib
import io
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest

from netemu import Actor, ActorFailed, Bernoulli, Cohort, Constant, Exponential, Link, MessageLog, NodeBehaviour, World, star

KINDS = ("model", "ping")


def draw_world(seed: int) -> dict:
    """The random world of `seed`: every choice the two client styles share."""
    r = np.random.default_rng(seed)
    n = int(r.integers(1, 7))
    t0 = float(r.choice([0.0, 0.0, 0.0, 2.0**23 - 3.0, 1e7]))  # late starts: the clock's resolution > 1 ns
    links = {}
    for k in range(n):
        for e in ((f"client-{k}", "server"), ("server", f"client-{k}")):
            kind = int(r.integers(0, 4))
            if kind == 0:
                lat = ("c", float(r.choice([0.0, 0.25, 0.5, 1.0, 1e-10, 6e-10])))
            elif kind == 1:
                lat = ("e", float(r.choice([0.1, 0.5])), float(r.choice([0.0, 0.25])))
            elif kind == 2:
                lat = ("c", 0.5)
            else:
                lat = None
            loss = float(r.choice([0.0, 0.0, 0.2]))
            bw = float(r.choice([0.0, 2e4, 1e6]))
            outages = ((t0 + float(r.uniform(0, 6)), t0 + float(r.uniform(6, 9))),) if r.random() < 0.15 else ()
            links[e] = (lat, loss, bw, outages)
    nodes = {}
    for k in range(n):
        crashes = []
        if r.random() < 0.3:
            at = t0 + float(r.choice([1.0, 2.0, 2.5, float(r.uniform(0, 8))]))
            rec = None if r.random() < 0.3 else at + float(r.choice([0.5, 1.0, float(r.uniform(0.1, 5))]))
            crashes.append((at, rec))
            if rec is not None and r.random() < 0.4:
                at2 = rec + float(r.uniform(0.5, 4))
                crashes.append((at2, at2 + 1.0))
        nodes[f"client-{k}"] = {
            "participation": float(r.choice([1.0, 0.7])), "speed": float(r.choice([1.0, 4.0, 10.0])),
            "slowdown_sigma": float(r.choice([0.0, 0.0, 0.5])), "crashes": tuple(crashes)}
    server = {
        "rounds": int(r.integers(1, 6)),
        "shared": bool(r.random() < 0.6),
        "gather": str(r.choice(["until", "timeout", "collect", "collect", "none"])),
        "quorum": int(r.integers(1, n + 1)),
        "deadline": float(r.choice([0.0, 0.5, 1.0, 2.0, 3.5])),
        "pause": float(r.choice([0.0, 0.0, 0.5, 1.0])),
        "pings": bool(r.random() < 0.4),
        "until": t0 + float(r.choice([1e9, 1e9, 1.0, 2.0, 2.5, 3.5, float(r.uniform(0, 6))])),
        "fail": int(r.integers(0, 25)),  # the round in which the server raises (none if >= rounds)
        "t0": t0,
    }
    client = {
        "work": [float(r.choice([0.0, 1.0, 2.0])) for _ in range(n)],
        "nap": [float(r.choice([0.0, 0.0, 0.5])) for _ in range(n)],
        "mutate": bool(r.random() < 0.5),
        "check_participation": bool(r.random() < 0.5),
        "process": bool(r.random() < 0.2),  # woken code starts a SimPy process (an URGENT event now)
        "hello": bool(r.random() < 0.25),  # clients speak first: at the start and after each recovery
        "fail": (int(r.integers(0, n)), int(r.integers(0, 15))),  # (client, round) that raises
    }
    return {"n": n, "links": links, "nodes": nodes, "server": server, "client": client}


def _links(spec: dict) -> dict:
    out = {}
    for e, (lat, loss, bw, outages) in spec["links"].items():
        latency = None if lat is None else Constant(lat[1]) if lat[0] == "c" else Exponential(lat[1], base=lat[2])
        out[e] = Link(latency, loss=Bernoulli(loss) if loss else None, bandwidth=bw or None, outages=outages,
                      link_class="uplink" if e[1] == "server" else "downlink")
    return out


class Server(Actor):
    def __init__(self, name: str, spec: dict) -> None:
        super().__init__(name)
        self.spec = spec["server"]
        self.n = spec["n"]

    async def run(self) -> None:
        s = self.spec
        clients = [f"client-{k}" for k in range(self.n)]
        w = np.arange(4, dtype=np.float64)
        if s["t0"]:
            await self.sleep(s["t0"])
        for rnd in range(s["rounds"]):
            self.round = rnd
            if rnd == s["fail"]:
                raise ValueError(f"server fails in round {rnd}")
            if s["shared"]:
                self.broadcast("model", {"w": w, "r": rnd, "tag": [1, 2, {"x": w[:2]}]})
            else:
                self.send_many(clients, "model", [{"w": w + k, "r": rnd} for k in range(self.n)])
            if s["pings"]:
                self.broadcast("ping", rnd)
            got: list = []
            deadline = self.now + s["deadline"]

            def handle(msg, got=got):
                got.append(msg.payload["s"] if isinstance(msg.payload, dict) else msg.payload)

            if s["gather"] == "until":
                while len(got) < s["quorum"]:
                    msg = await self.recv("update", until=deadline)
                    if msg is None:
                        break
                    handle(msg)
            elif s["gather"] == "timeout":
                while len(got) < s["quorum"]:
                    msg = await self.recv(("update", "pong"), timeout=s["deadline"] or 0.3)
                    if msg is None:
                        break
                    handle(msg)
            elif s["gather"] == "collect":
                q = s["quorum"]
                await self.collect("update", handle, lambda got=got, q=q: len(got) >= q,
                                   lambda m, got=got, q=q: len(got) + 1 >= q, until=deadline)
            if s["pause"]:
                await self.sleep(s["pause"])
            self.metric("got", float(len(got)) + float(np.sum(got)) if got else 0.0, rnd)
            w = w + 1.0


def _start_process(world: World, name: str) -> None:
    """What a client may do when woken: start a SimPy process that writes a record."""
    env = world.env

    def proc():
        world.log(t=env.now, event="proc", actor=name)
        yield env.timeout(0)
    env.process(proc())


def _reply_payload(spec: dict, k: int, msg) -> dict:
    if spec["client"]["fail"] == (k, msg.round):
        raise ZeroDivisionError(f"client-{k} fails in round {msg.round}")
    w = msg.payload["w"]
    if spec["client"]["mutate"]:
        w += 1.0  # in place: another receiver of the same broadcast must not see it
        if "tag" in msg.payload:
            msg.payload["tag"][2]["x"] *= 3.0
    extra = float(np.sum(msg.payload["tag"][2]["x"])) if "tag" in msg.payload else 0.0
    return {"s": float(np.sum(w)) + extra + k}


class Client(Actor):
    daemon = True

    def __init__(self, name: str, spec: dict) -> None:
        super().__init__(name)
        self.spec, self.k = spec, int(name.split("-")[1])

    async def run(self) -> None:
        c, k = self.spec["client"], self.k
        if c["hello"]:
            self.send("server", "hello", [k, self.incarnation])
        while True:
            msg = await self.recv(KINDS)
            self.round = msg.round
            if c["process"]:
                _start_process(self.world, self.name)
            if msg.kind == "ping":
                self.send("server", "pong", k)
                continue
            if c["check_participation"] and not self.participates():
                continue
            if c["work"][k]:
                await self.compute(c["work"][k])
            if c["nap"][k]:
                await self.sleep(c["nap"][k])
            self.send("server", "update", _reply_payload(self.spec, k, msg))


class Clients(Cohort):
    receives = KINDS

    def __init__(self, name: str, members, spec: dict) -> None:
        super().__init__(name, members)
        self.spec = spec

    def on_member_start(self, m) -> None:
        if self.spec["client"]["hello"]:
            self.send(m, "server", "hello", [m.index, m.incarnation])

    def on_message(self, m, msg) -> None:
        c, k = self.spec["client"], m.index
        m.round = msg.round
        if c["process"]:
            _start_process(self.world, m.name)
        if msg.kind == "ping":
            self.send(m, "server", "pong", k)
            return
        if c["check_participation"] and not self.participates(m):
            return
        if c["work"][k]:
            self.compute(m, c["work"][k], self._after_compute, msg)
        else:
            self._after_compute(m, msg)

    def _after_compute(self, m, msg) -> None:
        nap = self.spec["client"]["nap"][m.index]
        if nap:
            self.sleep(m, nap, self._reply, msg)
        else:
            self._reply(m, msg)

    def _reply(self, m, msg) -> None:
        self.send(m, "server", "update", _reply_payload(self.spec, m.index, msg))


def run_world(seed: int, cohort: bool) -> tuple[bytes, list, list, str]:
    """The message log, the fate keys and values, the metrics and how the run ended."""
    spec = draw_world(seed)
    g = star(spec["n"])
    keys: list = []

    def fates(key, draw):
        value = draw()
        keys.append((key, value))
        return value

    buf = io.BytesIO()
    behaviours = {name: NodeBehaviour(**b) for name, b in spec["nodes"].items()}
    world = World(g, seed=seed, links=_links(spec), behaviours=behaviours, log=MessageLog(buf), fates=fates)
    world.add(Server("server", spec))
    names = [f"client-{k}" for k in range(spec["n"])]
    if cohort:
        world.add(Clients("clients", names, spec))
    else:
        for name in names:
            world.add(Client(name, spec))
    try:
        result = world.run(until=spec["server"]["until"])
        end = f"{result.virtual_time!r} {result.complete} {result.stopped_by} {sorted(result.waits.items())}"
        metrics = result.metrics
    except ActorFailed as exc:  # who failed and when (the traceback differs between the styles)
        end, metrics = f"ActorFailed {exc.actor} {exc.time!r} {str(exc).split(': ', 1)[1].split(' (')[0]}", []
    return buf.getvalue(), keys, metrics, end


def digest(seed: int, cohort: bool) -> str:
    """The hash of a world's log, fates, metrics and end.  The log's `unused` records (messages
    delivered and never received, docs/formats.md) are left out: they annotate deliveries the
    reference engine logged alike, which wrote none; every other byte counts."""
    log, keys, metrics, end = run_world(seed, cohort)
    log = b"".join(line for line in log.splitlines(keepends=True) if b'"event":"unused"' not in line)
    h = hashlib.sha256(log)
    h.update(repr(keys).encode())
    h.update(repr(metrics).encode())
    h.update(end.encode())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------ the tests

REFERENCE = Path(__file__).parent / "data" / "engine_digests_acc356d.txt"


def reference_digests() -> dict[int, str]:
    """The digest of each seed's world, one actor per client, as acc356d wrote it: the first
    column of `python tests/test_engine_equivalence.py 0 2000` under its checkout.  It replaced
    the digests of 655ef0d (before issue 15's engine changes: its own loop iteration, `run_now`,
    shared decoding) when timers due at the same instant came to run in the order they were
    set and a gather came to keep one deadline (issue 40): 39 of the 2000 worlds changed — 30
    by the order of same-instant records only (ids of same-instant sends renumbered, the same
    fates drawn in another order), 7 by how the run ended only and 1 (seed 1800) by both (a run
    `until` T now stops before the timers due at T that were set after it), 1 (seed 1883) by
    an update counted in another round (a client's compute ends at the server's deadline).  A change of `draw_world` or of the worlds' actors needs it made again."""
    out = {}
    for line in REFERENCE.read_text().splitlines():
        seed, value = line.split()
        out[int(seed)] = value
    return out


def test_cohort_and_one_actor_per_client_write_the_same_bytes_in_random_worlds():
    """40 random worlds (seeds fixed): every log, fate and metric is the same both ways."""
    for seed in range(40):
        a, b = run_world(seed, False), run_world(seed, True)
        assert a[0] == b[0], f"seed {seed}: the message logs differ"
        assert a[1:] == b[1:], f"seed {seed}: fates, metrics or the end differ"


def check_against_reference(seeds: range) -> None:
    ref = reference_digests()
    differ = [s for s in seeds if digest(s, False) != ref[s] or digest(s, True) != ref[s]]
    assert not differ, f"{len(differ)} of {len(seeds)} worlds differ from the reference, e.g. seeds {differ[:10]}"


def test_random_worlds_write_what_the_engine_before_issue_15_wrote():
    """300 worlds, both client styles: the log, fates, metrics and end of every run are
    byte for byte the reference's (the faster engine changes only the cost)."""
    check_against_reference(range(300))


@pytest.mark.slow
def test_many_random_worlds_write_what_the_engine_before_issue_15_wrote():
    check_against_reference(range(2000))



class _Broadcaster(Actor):
    async def run(self) -> None:
        self.broadcast("model", 0)
        await self.sleep(5.0)


class _StartsProcess(Actor):
    """A client that, woken by a delivery, starts a SimPy process (its first step is an
    URGENT event at the same instant) that writes a record."""
    daemon = True

    async def run(self) -> None:
        env, name = self.world.env, self.name
        while True:
            await self.recv("model")

            def proc():
                self.world.log(t=env.now, event="proc", actor=name)
                yield env.timeout(0)
            env.process(proc())


def test_an_urgent_simpy_event_started_by_woken_code_keeps_its_place_among_a_batchs_deliveries():
    """Order main at 655ef0d wrote (python tests/... under its checkout): the continuation of
    the batch (URGENT, id taken when the delivery woke client-0) comes before client-0's
    process start; client-1's wake-up puts the next continuation behind that start."""
    buf = io.BytesIO()
    g = star(3)
    world = World(g, seed=1, links={e: Link(Constant(1.0)) for e in g.edges}, log=MessageLog(buf))
    world.add(_Broadcaster("server"))
    for k in range(3):
        world.add(_StartsProcess(f"client-{k}"))
    world.run()
    order = [(r["event"], r.get("dst", r.get("actor"))) for r in map(orjson.loads, buf.getvalue().splitlines())
             if r["event"] in ("deliver", "proc")]
    assert order == [("deliver", "client-0"), ("deliver", "client-1"), ("proc", "client-0"),
                     ("deliver", "client-2"), ("proc", "client-1"), ("proc", "client-2")]




class _CohortStartsProcesses(Cohort):
    """`_StartsProcess` as a cohort: each member's step starts the SimPy process."""
    receives = "model"

    def on_message(self, m, msg) -> None:
        _start_process(self.world, m.name)


def test_an_urgent_simpy_event_started_by_a_cohort_step_keeps_its_place_among_a_batchs_deliveries():
    """The same order with the clients as a cohort, whose steps main runs at once (an
    actor's task is woken through its future, so the test above holds on main as well)."""
    buf = io.BytesIO()
    g = star(3)
    world = World(g, seed=1, links={e: Link(Constant(1.0)) for e in g.edges}, log=MessageLog(buf))
    world.add(_Broadcaster("server"))
    world.add(_CohortStartsProcesses("clients", [f"client-{k}" for k in range(3)]))
    world.run()
    order = [(r["event"], r.get("dst", r.get("actor"))) for r in map(orjson.loads, buf.getvalue().splitlines())
             if r["event"] in ("deliver", "proc")]
    assert order == [("deliver", "client-0"), ("deliver", "client-1"), ("proc", "client-0"),
                     ("deliver", "client-2"), ("proc", "client-1"), ("proc", "client-2")]

class _Collector(Actor):
    """Collects three updates with a `done` that raises on the second (a bug in user code)."""

    async def run(self) -> None:
        self.broadcast("model", 0)
        got: list = []

        def done() -> bool:
            if len(got) == 2:
                raise ValueError("done() bug")
            return len(got) >= 3
        await self.collect("update", got.append, done, lambda m: len(got) + 1 >= 3, until=10.0)
        self.metric("collected", len(got), 0)


class _Replier(Actor):
    daemon = True

    async def run(self) -> None:
        await self.recv("model")
        await self.sleep(1.5 + 0.7 * int(self.name[-1]))  # replies arrive alone, no timer due with them
        self.send("server", "update", 1)


def test_an_error_in_a_callback_run_at_once_fails_the_waiting_actor():
    """A `done` that raises where the woken step runs (at once, or as a scheduled
    callback) fails the collecting actor with its name and virtual time, as an error in
    its own task would; the run does not go on as if nothing happened."""
    g = star(3)
    world = World(g, seed=1, links={e: Link(Constant(1.0)) for e in g.edges}, log=MessageLog(io.BytesIO()))
    world.add(_Collector("server"))
    for k in range(3):
        world.add(_Replier(f"client-{k}"))
    with pytest.raises(ActorFailed, match=r"actor 'server' failed at virtual time 4.2: ValueError: done\(\) bug"):
        world.run()



_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


class _SetsAContextVariable(Cohort):
    receives = "model"

    def __init__(self, name: str, members) -> None:
        super().__init__(name, members)
        self.seen: list = []

    def on_message(self, m, msg) -> None:
        self.seen.append(_VAR.get())
        _VAR.set(m.name)


def test_a_callback_run_at_once_sets_context_variables_in_its_own_copy_of_the_context():
    """As a scheduled callback: each member's step sees the context as it was when it was
    woken, not what the member woken before it set (main at 655ef0d: 'unset' three times)."""
    g = star(3)
    world = World(g, seed=1, links={e: Link(Constant(1.0)) for e in g.edges}, log=MessageLog(io.BytesIO()))
    world.add(_Broadcaster("server"))
    cohort = world.add(_SetsAContextVariable("clients", [f"client-{k}" for k in range(3)]))
    world.run()
    assert cohort.seen == ["unset", "unset", "unset"]


if __name__ == "__main__":
    lo, hi = int(sys.argv[1]), int(sys.argv[2])
    for s in range(lo, hi):
        print(s, digest(s, False), digest(s, True))
