"""The Network router: nodes, links, and the fate of every message.

`Network.send` puts an encoded envelope on the directed link src->dst.  Its fate is
decided at once from keyed draws — dropped (outage, loss, expired) or delivered
after FIFO transmission (size × 8 / bandwidth) plus propagation delay — and takes
effect at the right virtual time through a SimPy event.  A message that arrives at a
crashed node is dropped with reason ``crash``.  Every message therefore ends in
exactly one of delivered / dropped / still in flight (`in_flight()`).

Random fates pass through `fates(key, draw)`: the default draws; the trace layer
records or replays them (keys and values are documented in docs/formats.md).  A hook
may also take the yes/no fates of many keys of one round at once (`ManyFates`): the
participation draws of a round go through it as one call of arrays.  Fate sources are
in `netemu.engine.net.fates`, a message's events in SimPy's queue in `netemu.engine.net.inflight`,
the nodes' behaviour and state in `netemu.engine.net.nodes`, the delivered `Message` in
`netemu.engine.net.message`; all are re-exported here.  A message's delivery or drop at its instant
is `netemu.engine.net.delivery`.  The nodes' keyed draws (participation,
compute time, completeness) are `netemu.engine.net.node_draws`, the counts of messages
`netemu.engine.net.tallies`; messages on paths of routers or under another model take the
general path of `netemu.engine.net.transfers`.
"""

from __future__ import annotations

import importlib
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from itertools import repeat
from typing import Any, cast

import networkx as nx
from simpy.core import NORMAL

from netemu.engine.clock import VirtualEnvironment
from netemu.errors import InputError
from netemu.log import MessageLog
from netemu.engine.net.delivery import Delivery
from netemu.engine.net.fates import Fates, ManyFates, draw_now, fates_many
from netemu.engine.net.inflight import Due as _Due
from netemu.engine.net.inflight import Arrivals as _Arrivals
from netemu.engine.net.inflight import Shared as _Shared
from netemu.engine.net.links import Link
from netemu.engine.net.message import Message
from netemu.engine.net.model import ENGINES, NetModel
from netemu.engine.net.node_draws import NodeDraws
from netemu.engine.net.nodes import Node, NodeBehaviour
from netemu.engine.net.routing import ROUTER_ROLES, Routes, talks_to
from netemu.engine.net.tallies import Tallies
from netemu.engine.net.transfers import Transfers
from netemu.engine.rng import KeyedDraws, Streams
from netemu.wire.codec import Unencoded, header_size

__all__ = ["ManyFates", "Message", "Network", "NetworkError", "Node", "NodeBehaviour", "draw_now", "fates_many"]

_DRAWS_KEPT = 1 << 16  # links whose keyed draws are kept (~32 MiB at most)
_NO_DRAWS = cast(KeyedDraws, None)  # the draws of a link that is not `random`: its models draw nothing


class NetworkError(InputError):
    """A message cannot be routed (unknown node, no link between the two ends)."""


_MISSING = object()
_ONE = (bytes, bytearray, memoryview, Unencoded)  # one payload shared by a call's messages (a broadcast)


def _same_length(node: str, ends: Sequence[str], each: Sequence[object]) -> None:
    if len(ends) != len(each):
        raise ValueError(f"{node}: one payload and round per message are needed, got {len(ends)} ends and {len(each)}")


def _general_path(network: Network) -> Any:
    """The general message path of `network`: the flow model's `Transfers`, or the engine's that the model
    names (`ENGINES`: a module path, imported only when asked for — ns-3 is not needed otherwise); either
    has `send(msg_id, hops, round, nbytes, payload, box)` and `counts`."""
    where = ENGINES[network.model.engine]
    if where is None:
        return Transfers(network, network.model)
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)(network, network.model)


class Network(Delivery, NodeDraws, Tallies):
    def __init__(
        self,
        env: VirtualEnvironment,
        graph: nx.DiGraph,
        streams: Streams,
        *,
        links: Mapping[tuple[str, str], Link] | None = None,
        behaviours: Mapping[str, NodeBehaviour] | None = None,
        emit: MessageLog | None = None,
        fates: Fates = draw_now,
        model: NetModel | None = None,
        work_seconds: float = 1.0,
    ) -> None:
        if not (math.isfinite(work_seconds) and work_seconds > 0):
            raise ValueError(f"work_seconds must be a finite number > 0, got {work_seconds}")
        self.env, self.streams, self.fates = env, streams, fates
        #: seconds one work unit takes at speed 1: 1 (compute = "work"), or the calibration of
        #: compute = "measured" (netemu.run.calibration)
        self.work_seconds = work_seconds
        self.model = model if model is not None else NetModel()
        self.emit = emit if emit is not None else MessageLog(None)
        given = links or {}
        self.links: dict[tuple[str, str], Link] = {}
        # The network keeps the topology itself, not the graph (~1 kB per node in networkx):
        # each node's successors (equal tuples shared: every client of a star has ("server",))
        # and the edge attributes that its link's class does not already say (`graph` rebuilds it).
        self._edge_attrs: dict[tuple[str, str], dict] = {}
        links, edge_attrs, get = self.links, self._edge_attrs, given.get
        matched = 0
        queued = False  # a link bounds its queue: the historical direct path has none (netemu.engine.net.transfers has)
        alike: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._succ: dict[str, tuple[str, ...]] = {}
        for u, nbrs in graph.adjacency():  # every node in order, with its successors in order: graph.edges's order
            t = tuple(nbrs)
            self._succ[u] = alike.setdefault(t, t)
            for v, attrs in nbrs.items():
                key = (u, v)
                link = get(key)
                if link is None:
                    link = Link(link_class=attrs.get("link_class", "link"))
                else:
                    matched += 1
                    if link.queue_bytes is not None:
                        queued = True
                links[key] = link
                if len(attrs) != 1 or attrs.get("link_class", _MISSING) != link.link_class:
                    edge_attrs[key] = attrs
        del alike
        if matched != len(given):
            u, v = next(e for e in given if e not in self.links)
            raise NetworkError(f"a link model is given for {u}->{v}, but the graph has no such edge")
        # the keyed draws of a link (a keyed BLAKE2b state, ~0.5 kB) are made when it first
        # draws a fate and kept for the last _DRAWS_KEPT links: bounded memory at any scale
        self._draws: dict[tuple[str, str], KeyedDraws] = {}
        behaviours = behaviours or {}
        default = NodeBehaviour()
        self.nodes: dict[str, Node] = {}
        # routers and switches forward and run no actor: they are not nodes (netemu.engine.net.routing)
        self._router_attrs = {name: attrs for name, attrs in graph.nodes(data=True) if attrs.get("role") in ROUTER_ROLES}
        self.routes = Routes(self._succ, {name: attrs.get("role") for name, attrs in graph.nodes(data=True)}) if self._router_attrs else None
        routers, nodes, behaviour = self._router_attrs, self.nodes, behaviours.get
        for name, attrs in graph.nodes(data=True):
            if routers and name in routers:
                continue
            b = behaviour(name, default)
            nodes[name] = Node(name, attrs, b.participation, b.speed, b.slowdown_sigma, True, b.crashes, b.completeness)
        self._participation_draws = streams.keyed("participation")
        self._compute_draws = streams.keyed("compute")
        self._completeness_draws = streams.keyed("completeness")
        self._next_id = 0
        self._pending: dict[int, tuple] = {}
        # per link class: messages sent, bytes, payload bytes, delivered (list items: the
        # per-message updates are cheaper than a Counter's tuple keys); drops by reason apart
        self._tallies: dict[str, list[int]] = {}
        self._drops: Counter = Counter()
        # messages on paths of routers, under a model other than the historical one, or where a queue is bounded
        self._general = not self.model.default or queued
        if queued and self.model.sharing == "max-min" and not self.model.reliable and self.model.engine == "flow":
            raise NetworkError('queue_bytes under sharing = "max-min" is the queue that TCP\'s slow start overflows: it needs '
                               'transport = "reliable" (a datagram flow has no window to overflow it)')
        self._transfers = _general_path(self) if self._general or self.routes else None
        self._extras: dict[int, dict] = {}  # extra fields of a general message's deliver record
        self._hops: dict[tuple[str, str], tuple] = {}  # routed (src, dst) -> its hops (bounded: cleared when full)

    def _link_draws(self, src: str, dst: str) -> KeyedDraws:
        """The keyed draws of link src->dst (the same values whenever they are made)."""
        draws = self._draws
        if len(draws) >= _DRAWS_KEPT:
            draws.clear()
        d = draws[(src, dst)] = self.streams.keyed(f"link/{src}->{dst}")
        return d

    def hop_draws(self, src: str, head: str) -> KeyedDraws:
        """The keyed draws of hop src->head (`head` is ``dst#k`` for a retransmission's k-th attempt)."""
        return self._draws.get((src, head)) or self._link_draws(src, head)

    def hops(self, src: str, dst: str) -> tuple[tuple[str, str, Link], ...]:
        """The hops (from, to, link) a message from `src` to `dst` crosses: the direct link, or the
        shortest path through routers; a NetworkError if there is none."""
        cached = self._hops.get((src, dst))
        if cached is not None:
            return cached
        link = self.links.get((src, dst))
        if link is not None:
            return ((src, dst, link),)
        path = self.routes.path(src, dst) if self.routes is not None and src in self.nodes and dst in self.nodes else None
        if path is None or not talks_to(self.nodes[src].role, self.nodes[dst].role):
            return ((src, dst, self.link(src, dst)),)  # raises the error that names what is wrong
        links = self.links
        hops = tuple((a, b, links[(a, b)]) for a, b in zip(path, path[1:]))
        if len(self._hops) >= _DRAWS_KEPT * 4:
            self._hops.clear()
        self._hops[(src, dst)] = hops
        return hops

    # ------------------------------------------------------------------ nodes

    def connect(self, name: str, receiver: Callable[[Message], bool | None],
                batch: Callable[[list[Message]], bool | None] | None = None) -> None:
        """Deliver `name`'s messages to `receiver`; it returns False when nothing the
        delivery woke waits to run — none was woken, or the woken code already ran
        (`VirtualTimeLoop.run_now`) — so the next message due at the same instant is
        delivered at once; anything else when woken code may be waiting.  With `batch`
        (one callable shared by many nodes, e.g. a cohort's), a group of one arrival batch's
        messages for those nodes is delivered to it in one call, as a list (`_arrive`)."""
        node = self._node(name)
        node.receiver, node.batch = receiver, batch

    def _node(self, name: str) -> Node:
        try:
            return self.nodes[name]
        except KeyError:
            raise NetworkError(f"unknown node {name!r}") from None

    def neighbours(self, name: str) -> list[str]:
        """The actors `name` can send to: linked directly, or through routers (netemu.engine.net.routing)."""
        if self.routes is not None and name in self.nodes:
            return self.routes.neighbours(name)
        try:
            return list(self._succ[name])
        except KeyError:
            raise NetworkError(f"unknown node {name!r}") from None

    @property
    def graph(self) -> nx.DiGraph:
        """The topology as a networkx DiGraph (nodes with their attributes, links with
        `link_class` and any other edge attribute), rebuilt at each access: a copy, so
        change the network through `nodes` and `link()`."""
        g = nx.DiGraph()
        g.add_nodes_from((name, node.attrs) for name, node in self.nodes.items())
        g.add_nodes_from(self._router_attrs.items())
        attrs = self._edge_attrs
        g.add_edges_from(
            (u, v, attrs[(u, v)] if (u, v) in attrs else {"link_class": link.link_class}) for (u, v), link in self.links.items()
        )
        return g

    def set_up(self, name: str, up: bool) -> None:
        self._node(name).up = up
        if self._transfers is not None:
            self._transfers.node_up(name, up)  # ns-3: the node's links go down or up (netemu.ns3.engine)

    # ------------------------------------------------------------------ messages

    def link(self, src: str, dst: str) -> Link:
        try:
            return self.links[(src, dst)]
        except KeyError:
            for end in (src, dst):
                self._node(end)
            raise NetworkError(f"{src!r} cannot send to {dst!r}: they are not neighbours (no link {src}->{dst})") from None

    def send(self, src: str, dst: str, kind: str, round: int, payload: bytes | Unencoded) -> int:
        """Send a payload, encoded or `Unencoded` (its size is what the log counts either way);
        returns the message id.  Never blocks."""
        return self._send(((src, dst, round, payload),), kind, None)[0]

    def send_many(
        self, src: str, dsts: Sequence[str], kind: str, round: int, payloads: Sequence[bytes | Unencoded] | bytes | Unencoded
    ) -> list[int]:
        """Send one message per destination in one call; returns their ids, in order.

        `payloads` is one payload (encoded, or `Unencoded`) per destination, or one shared
        by all (a broadcast).  Each message gets exactly what `send` would give
        it, in the same order: its own id, envelope, fate (keyed by its link, round and
        index), log records and counts — so a batch and the same sends one by one
        produce identical logs and traces.  The per-call work (clock, lookups, hooks)
        is done once.  A destination that is not a neighbour raises `NetworkError`
        after the messages before it were sent, as a loop of `send` would.
        """
        if isinstance(payloads, _ONE):  # one payload shared by all (a bytearray or memoryview: bytes-like)
            one: bytes | Unencoded = payloads  # type: ignore[assignment]
            return self._send(zip(repeat(src), dsts, repeat(round), repeat(one)), kind, one)
        _same_length(src, dsts, payloads)
        return self._send(zip(repeat(src), dsts, repeat(round), payloads), kind, None)

    def send_from(self, srcs: Sequence[str], dst: str, kind: str, rounds: Sequence[int],
                  payloads: Sequence[bytes | Unencoded]) -> list[int]:
        """One message from each of `srcs` (in round `rounds[i]`) to `dst`, in one call: what
        `send` from each source in turn gives — ids, envelopes, fates, records, counts — with
        the per-call work done once (a cohort's members answering at one instant)."""
        _same_length(dst, srcs, payloads)
        _same_length(dst, srcs, rounds)
        return self._send(zip(srcs, repeat(dst), rounds, payloads), kind, None)

    def _send(self, msgs: Iterable[tuple[str, str, int, bytes | Unencoded]], kind: str, shared: bytes | Unencoded | None) -> list[int]:
        """The messages (src, dst, round, payload) of `kind`, sent in order (see `send_many`); `shared`:
        the one payload of a broadcast that every message carries (None: a payload each).  Most calls
        carry one message (a member's answer, a tuple of one), so what only some messages need is
        fetched where they need it."""
        env = self.env
        fates, record, tallies, pending, links, draws_of = self.fates, self.emit.message, self._tallies, self._pending, self.links, self._draws
        schedule, reserve = env.schedule, env.reserve  # what env.timeout does, without its object
        now = env.now
        box = None if shared is None else _Shared()  # decoded once, at its first delivery
        ids = []
        batches: dict[float, list] = {}  # arrival instant -> the messages of this call due then, in order
        # this call's arrival events after its first (instant, order, batch), keyed as they are made and
        # queued at the end as one column (`Arrivals`): not one entry of the event queue per message
        due: list[tuple[float, int, list]] | None = None
        lose = None  # the callbacks of this call's loss events, made at its first loss (the live method: see _arrive)
        general = self._general
        try:
            for src, dst, round, payload in msgs:
                key = (src, dst)
                link = links.get(key)
                if link is None or general:
                    ids.append(self._send_general(src, dst, kind, round, payload, box, now))
                    continue
                msg_id = self._next_id
                self._next_id = msg_id + 1
                ids.append(msg_id)
                # the envelope is its header and the payload (its encoded length is what the log counts,
                # made or not); in flight a message keeps only the payload, which the messages of a broadcast share
                size = payload.size if type(payload) is Unencoded else len(payload)  # (Unencoded's len() is a Python call)
                nbytes = header_size(msg_id, src, dst, kind, round, now) + size
                cls = link.link_class
                index = link.next_index(round)
                pending[msg_id] = (src, dst, kind, round, nbytes, cls, now)
                tally = tallies.get(cls)
                if tally is None:
                    tally = tallies[cls] = [0, 0, 0, 0]
                tally[0] += 1
                tally[1] += nbytes
                tally[2] += size
                record(now, "send", msg_id, src, dst, kind, round, nbytes, cls, "payload_bytes", size)
                if link._outages and link.is_down(now):
                    self._drop(msg_id, "outage")
                    continue
                if link.random:
                    draws = draws_of.get(key) or self._link_draws(src, dst)
                    if fates is draw_now:  # no trace: what draw_now would return, without the key and the closure
                        reason, delay = link.draw_fate(draws, round, index)
                    else:
                        reason, delay = fates(("msg", src, dst, round, index), partial(link.draw_fate, draws, round, index))
                else:
                    reason, delay = link.draw_fate(_NO_DRAWS, round, index)
                busy = link.busy_until
                tx_end = (now if now > busy else busy) + (0.0 if link.bandwidth is None else nbytes * 8.0 / link.bandwidth)
                link.busy_until = tx_end
                if reason is None or reason == "duplicate":
                    wait = tx_end + delay - now
                    at = now + wait  # the instant SimPy computes for the event
                    batch = batches.get(at)
                    if box is not None:
                        box.left += 1
                    if batch is not None:
                        batch.append((msg_id, payload, box))
                    else:
                        batches[at] = batch = [(msg_id, payload, box)]
                        if due is None:  # the first: = env.timeout(wait, batch), due at `at`
                            schedule(_Due((self._arrive,), batch), NORMAL, wait)
                            due = []
                        else:  # the same event, queued with the others at the end
                            due.append((at, reserve(), batch))
                    if reason == "duplicate":
                        self.copy_at(at, msg_id, payload)
                        batches.pop(at, None)  # later arrivals at that instant come after the copy
                else:
                    wait = tx_end + (link.max_delay if reason == "expired" else delay if reason == "corrupt" else 0.0) - now
                    batches.pop(now + wait, None)  # later arrivals at that instant come after this drop
                    if lose is None:
                        lose = (self._lose,)
                    schedule(_Due(lose, (msg_id, reason)), NORMAL, wait)
        finally:  # also when a destination raised: the messages before it were sent
            if due:
                _Arrivals(env, self._arrive, due)
        return ids

    def _send_general(self, src: str, dst: str, kind: str, round: int, payload: bytes | Unencoded, box: _Shared | None,
                      now: float) -> int:
        """One message on the general path (netemu.engine.net.transfers): the same id, envelope, record
        (with the number of hops) and counts as `send_many` gives a direct one."""
        hops = self.hops(src, dst)
        msg_id = self._next_id
        self._next_id = msg_id + 1
        size = len(payload)
        nbytes = header_size(msg_id, src, dst, kind, round, now) + size
        cls = hops[0][2].link_class
        self._pending[msg_id] = (src, dst, kind, round, nbytes, cls, now)
        tally = self._tallies.get(cls)
        if tally is None:
            tally = self._tallies[cls] = [0, 0, 0, 0]
        tally[0] += 1
        tally[1] += nbytes
        tally[2] += size
        self.emit.message_with(now, "send", msg_id, src, dst, kind, round, nbytes, cls, {"payload_bytes": size, "hops": len(hops)})
        assert self._transfers is not None
        self._transfers.send(msg_id, hops, round, nbytes, payload, box)
        return msg_id
