"""ns-3 as the network engine of a world (``[network] engine = "ns3"``): every message a TCP transfer
(``transport = "reliable"``) or a burst of UDP datagrams (``"datagram"``) in ns-3, run in lockstep
with netemu's virtual clock.

`Ns3Engine` takes the place of the flow model's general path (netemu.engine.net.transfers) in a
`Network`: the network still writes the send record, counts the message and delivers or drops it,
but *when* it arrives is ns-3's answer.  The co-simulation is conservative (Fujimoto, "Parallel
and Distributed Simulation Systems", 2000, ch. 3): ns-3 never simulates past the next instant at
which netemu could start a message — the next SimPy event or asyncio timer, or now when a callback
is ready to run — so no message is ever injected into ns-3's past and no lookahead is needed.  A
sync event, scheduled after everything else due at its instant, runs ns-3 until that next instant
or until the first instant at which messages completed (`Ns3Process.run_until`); netemu's actors
react to a completion at its exact time (ns-3's 1 ns resolution).

A message's connection is its ordered pair's (``connection = "persistent"``: one TCP connection per
pair, messages back to back in its byte stream, delivered in order) or its own (``"per-message"``).
A per-message connection is closed (FIN) once its message is written, as an application that is done
sending closes its socket.  A message is dropped with reason ``timeout`` when its connection delivers
no byte for `connect_timeout` seconds while it waits — the path stayed unusable that long, as the flow
model's reliable transport says — or when ns-3's TCP gives up the connection (``last: "reset"``); the
pair's next message opens a new connection.

Under the datagram transport a message is its bytes as UDP packets of at most `mss` bytes, written
at once and sent as fast as the source's own link takes them (a writer blocked on a full interface
queue; no retransmission); it is delivered when every packet arrived and dropped at the first
packet a link loses (``loss``, ``outage``) or a full queue on its way drops (``queue``).

What a script changes in links and nodes during the run (netemu.ns3.changes) is sent to ns-3 at the
instant it happens, before ns-3 moves past it: at the first send of an instant, at every sync, and at
once when a node crashes or recovers (`node_up`, called by the network).  A message one of whose ends
crashed while it was on its way is dropped with reason ``crash``.

The outcome of every message goes through the fates hook as key ``("ns3", src, dst, round, index)``
-> (None or the drop reason, arrival time): a trace records it, and a replay of the trace delivers
every recorded message at its recorded time without starting ns-3 (netemu.trace).
"""

from __future__ import annotations

import asyncio
import math
import os
import weakref
from collections import Counter
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from netemu.engine.clock import VirtualTimeLoop
from netemu.engine.net.fates import draw_now
from netemu.engine.net.inflight import Due
from netemu.ns3.build import binary
from netemu.ns3.changes import Changes
from netemu.ns3.process import NS, Ns3Process, Outcome
from netemu.ns3.topology import setup_lines

if TYPE_CHECKING:
    from netemu.engine.net.links import Link
    from netemu.engine.net.model import NetModel
    from netemu.engine.net.network import Network
    from netemu.wire.codec import Unencoded

__all__ = ["LATE", "Ns3Engine"]

#: the sync event's priority: after every URGENT and NORMAL event of its instant
LATE = 2


class _NotRecorded(Exception):
    """A probe of the fates hook: the outcome of this message is not in a trace being replayed."""


def _probe() -> Any:
    raise _NotRecorded


def _known(value: tuple[str | None, float]) -> tuple[str | None, float]:
    return value


@dataclass(slots=True)
class _Live:
    """A message ns-3 is carrying."""

    key: tuple
    payload: bytes | Unencoded
    box: Any
    extra: dict


def _world_folder(root: str) -> str:
    """A new folder under `root` for one world's pcap files, `world-1`, `world-2`, ... in the order the
    worlds start (a run's algorithms x Monte Carlo runs), so that no world overwrites another's files."""
    os.makedirs(root, exist_ok=True)
    k = 1
    while True:
        path = os.path.join(root, f"world-{k}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            k += 1


class Ns3Engine:
    """The general message path of a `Network` under ``engine = "ns3"`` (see the module docstring)."""

    def __init__(self, network: Network, model: NetModel) -> None:
        self.net, self.model = network, model
        graph = network.graph
        self._names = list(graph.nodes)
        self._index = {name: i for i, name in enumerate(self._names)}
        # the translation is checked now, so that what ns-3 cannot express is refused before the run starts
        pcap = os.environ.get("NETEMU_NS3_PCAP") or None  # a directory: every link's packets, as pcap files
        if pcap is not None:
            pcap = _world_folder(pcap)
        self._pcap, self._seed = pcap, int(network.streams.generator("ns3").integers(1, 2**31))
        setup_lines(self._names, network.links, model, self._seed, pcap=pcap)
        #: what a script changes during the run, for ns-3 (netemu.ns3.changes)
        self._changes = Changes(self._names, network.links, network.nodes)
        self._checked = -1.0  # the instant of the last check for changes at a send
        self._proc: Ns3Process | None = None
        self._live: dict[int, _Live] = {}
        self._conns: dict[tuple[str, str], int] = {}
        self._next_conn = 0
        self._sync_pending = False
        self._extras: dict[int, dict[str, Any]] = {}
        #: (link class of the first hop, what) -> n: ``replayed`` (outcomes taken from a trace)
        self.counts: Counter = Counter()

    # ------------------------------------------------------------ sending

    def send(self, msg_id: int, hops: tuple[tuple[str, str, Link], ...], round: int, nbytes: int, payload: bytes | Unencoded, box: Any) -> None:
        """Start message `msg_id` (its send record written) from the first hop's tail to the last hop's head, now."""
        net, now = self.net, self.net.env.now
        src, dst = hops[0][0], hops[-1][1]
        key = ("ns3", src, dst, round, hops[0][2].next_index(round))
        extra = self._extra(len(hops))
        if box is not None:
            box.left += 1
        if net.fates is not draw_now:
            try:
                reason, at = net.fates(key, _probe)
            except _NotRecorded:
                pass
            else:  # replayed: ns-3 is not needed for it
                self.counts[hops[0][2].link_class, "replayed"] += 1
                self._outcome(msg_id, payload, box, extra, max(at, now), reason)
                return
        proc = self._process()
        t = round_ns(now)
        if proc.now < t:
            self._handle(proc.run_until(t))
        elif proc.now > t:  # the lockstep's one invariant: never raised unless the sync is wrong
            raise RuntimeError(f"ns-3 ran ahead of netemu: at {proc.now} ns when message {msg_id} is sent at {t} ns")
        if now != self._checked:  # what changed at this instant before it (once per instant; the sync sees the rest)
            self._checked = now
            self._apply()
        if not self.model.reliable:
            proc.datagram(msg_id, self._index[src], self._index[dst], nbytes)
            self._live[msg_id] = _Live(key, payload, box, extra)
            self._want_sync()
            return
        persistent = self.model.connection == "persistent"
        if persistent:
            conn = self._conns.get((src, dst))
            if conn is None:
                conn = self._conns[(src, dst)] = self._new_conn()
        else:
            conn = self._new_conn()
        proc.send(msg_id, self._index[src], self._index[dst], nbytes, conn, last=not persistent)
        self._live[msg_id] = _Live(key, payload, box, extra)
        self._want_sync()

    def node_up(self, name: str, up: bool) -> None:
        """Node `name` crashed (`up` False) or recovered, now: its links go down or up in ns-3 at once."""
        self._apply()

    def _apply(self) -> None:
        """Send ns-3 what changed in the links and nodes (netemu.ns3.changes), at the current instant."""
        proc = self._proc
        if proc is None:  # not started (or a replay): its setup will take the network as it is then
            return
        lines = self._changes.now(self.net.env.now)
        if not lines:
            return
        t = round_ns(self.net.env.now)
        if proc.now < t:
            self._handle(proc.run_until(t))
        proc.command(lines)
        if self._live:  # a crash may have ended messages: they are answered at the next run
            self._want_sync()

    def close(self) -> None:
        """Stop the ns-3 process (if one was started) and wait for it."""
        if self._proc is not None:
            self._proc.close()

    def _new_conn(self) -> int:
        conn = self._next_conn
        self._next_conn = conn + 1
        return conn

    def _process(self) -> Ns3Process:
        proc = self._proc
        if proc is None:
            setup = setup_lines(self._names, self.net.links, self.model, self._seed, pcap=self._pcap)  # the links as they are now
            down = self._changes.start()
            proc = self._proc = Ns3Process(binary(), setup)
            weakref.finalize(self, proc.close)
            proc.command(down)
        return proc

    def _extra(self, hops: int) -> dict[str, Any]:
        extra = self._extras.get(hops)
        if extra is None:
            extra = self._extras[hops] = {"hops": hops}
        return extra

    # ------------------------------------------------------------ lockstep

    def _want_sync(self) -> None:
        if not self._sync_pending:
            self._sync_pending = True
            self.net.env.schedule(Due((self._sync,), None), LATE)

    def _sync_later(self) -> None:
        """Sync once what asyncio has ready now has run (called by the loop)."""
        self.net.env.schedule(Due((self._sync,), None), LATE)

    def _sync(self, event: Due) -> None:
        env = self.net.env
        now, horizon = env.now, env.peek()
        loop = _loop()
        if loop is not None:
            due = loop.next_due()
            if due <= now:  # asyncio runs something now, which may send: after it
                loop.call_soon(self._sync_later)
                return
            horizon = min(horizon, due)
        if horizon <= now:  # more events at this instant
            self._sync_later()
            return
        self._sync_pending = False
        self._apply()
        if not self._live:
            return
        proc = self._process()
        outcomes = proc.run_until(math.floor(horizon * NS) if math.isfinite(horizon) else -1)  # never past the horizon
        self._handle(outcomes)
        if not self._live:
            return
        if outcomes:
            at = max(now, proc.now / NS)
        elif math.isfinite(horizon):
            at = horizon
        else:  # ns-3 has nothing left to do, yet messages wait: they can never complete (no deadline)
            return
        self._sync_pending = True
        env.schedule_at(Due((self._sync,), None), at, LATE)

    def _handle(self, outcomes: list[Outcome]) -> None:
        net, now = self.net, self.net.env.now
        for msg_id, t, reason in outcomes:
            live = self._live.pop(msg_id)
            at = max(now, t / NS)
            if net.fates is not draw_now:  # recorded (or counted) by the trace
                net.fates(live.key, partial(_known, (reason, at)))
            self._outcome(msg_id, live.payload, live.box, live.extra, at, reason)

    def _outcome(self, msg_id: int, payload: bytes | Unencoded, box: Any, extra: dict, at: float, reason: str | None) -> None:
        """Deliver or drop the message at `at`; `reason` is ns-3's: None; under TCP ``timeout`` (its connection
        delivered nothing for `connect_timeout`) or ``reset`` (TCP gave the connection up: a ``timeout`` whose record
        says ``last: "reset"``); under UDP ``loss``, ``outage`` or ``queue`` (a packet of it was lost there); ``crash``
        (an end of it crashed while it was on its way)."""
        if reason is None:
            self.net.arrive_at(at, msg_id, payload, box, extra)
        elif reason == "reset":
            self.net.drop_at(at, msg_id, "timeout", box, {**extra, "last": reason})
        else:
            self.net.drop_at(at, msg_id, reason, box, extra)


def round_ns(t: float) -> int:
    """Virtual time `t` (s) in ns-3's integer nanoseconds, the nearest."""
    return round(t * NS)


def _loop() -> VirtualTimeLoop | None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop if isinstance(loop, VirtualTimeLoop) else None
