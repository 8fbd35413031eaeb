"""Messages on paths of hops, shared links and a reliable transport (netemu.engine.net.model).

The network hands a message here when it crosses routers or when the run's model is not
the historical one (`NetModel.default`); a direct message under the historical model
keeps the network's own path, so those logs stay byte-identical.

Per message and attempt, every hop draws its fate — (drop reason or None, propagation
delay) — keyed by (link, round, index) as a direct message's is; a retransmission's keys
name the hop's head as ``dst#attempt`` (its draws come from stream ``link/src->dst#k``), so
common random numbers and exact replay hold for every attempt.  Then:

- ``sharing = "none"``: store and forward.  At each hop the message waits for the hop's
  FIFO queue (dropped with reason ``queue`` when `queue_bytes` are already waiting), takes
  size x 8 / bandwidth to transmit, and its propagation delay to reach the next node; an
  outage, loss or expiry drops it at that hop.
- ``sharing = "max-min"``: a flow over all its hops at once (netemu.engine.net.sharing): a latency
  phase, then the bandwidth phase at its max-min fair rate; delivered one path delay after
  its last byte left.  A hop that is down when the flow starts or goes down while it runs,
  and a hop whose fate is a loss, fail the attempt when the flow ends.

A datagram that fails is dropped (the record names the hop, ``src->dst``); a reliable
message is sent again after a retransmission timeout, until `connect_timeout` has passed
since it was first sent (then dropped, reason ``timeout``).

Under the reliable transport a link whose losses are per packet (Bernoulli) loses segments,
not messages: a hop's draw says whether it lost any of the message's segments, and TCP's
loss response decides what that costs (netemu.engine.net.tcp): a timeout and a resend for a
message of at most three segments, otherwise delivery at most at the PFTK throughput.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol


from netemu.engine.net.connections import Connection
from netemu.engine.net.fates import draw_now
from netemu.engine.net.inflight import Due
from netemu.engine.net.links import Link
from netemu.engine.net.model import NetModel
from netemu.engine.net.sharing import MaxMin
from netemu.engine.net.tcp import FAST_RETRANSMIT_SEGMENTS, loss_given_hit, path_loss, pftk_rate, segments

if TYPE_CHECKING:
    from netemu.engine.clock import VirtualEnvironment
    from netemu.engine.net.fates import Fates
    from netemu.engine.rng import KeyedDraws
    from netemu.log import MessageLog


class Carrier(Protocol):
    """What the general path needs of the network it carries messages for (a `Network`):
    its clock, fates hook and log, each hop's keyed draws, and the outcomes it schedules."""

    env: VirtualEnvironment
    fates: Fates
    emit: MessageLog

    def hop_draws(self, src: str, head: str) -> KeyedDraws: ...

    def arrive_at(self, t: float, msg_id: int, payload: bytes, box: Any, extra: dict) -> None: ...

    def drop_at(self, t: float, msg_id: int, reason: str, box: Any, extra: dict) -> None: ...

    def copy_at(self, t: float, msg_id: int, payload: bytes) -> None: ...

__all__ = ["Carrier", "Transfers"]


class _Capacity:
    """Bytes/s of each link under sharing (its bandwidth x the model's factor), read when asked:
    a script may change a link's bandwidth.  A link without bandwidth is no constraint."""

    def __init__(self, factor: float) -> None:
        self.factor = factor

    def __contains__(self, link: Hashable) -> bool:
        return link.bandwidth is not None  # type: ignore[attr-defined]

    def __getitem__(self, link: Link) -> float:
        assert link.bandwidth is not None
        return link.bandwidth / 8.0 * self.factor


class _Transit:
    """A message between its send and its delivery or drop."""

    __slots__ = ("attempt", "box", "cap", "conn", "delay", "fates", "first", "holds", "hops", "id", "indices", "joined", "nbytes", "payload",
                 "round", "segments", "seq")

    def __init__(self, id: int, hops: tuple, indices: list[int], round: int, nbytes: int, payload: bytes, box: Any, now: float,
                 segments: int = 1) -> None:
        self.id, self.hops, self.indices, self.round, self.nbytes = id, hops, indices, round, nbytes
        self.payload, self.box, self.first = payload, box, now
        self.segments = segments  # TCP segments (reliable transport), 1 for a datagram: what a hop's loss draw is about
        self.cap = math.inf  # bytes/s this attempt can sustain after the segments it lost (netemu.engine.net.tcp)
        self.conn: Connection | None = None  # its persistent connection (netemu.engine.net.connections) ...
        self.seq = 0  # ... and its place in it
        self.holds = False  # its bytes occupy the connection (max-min: until its flow ends)
        self.attempt = 0
        self.fates: list[tuple[str | None, float]] = []
        self.delay = 0.0  # the path's one-way propagation delay, this attempt
        self.joined = now  # when its flow joined the sharing (max-min)


class Transfers:
    """The general message path of a `Network` (see the module docstring)."""

    def __init__(self, network: Carrier, model: NetModel) -> None:
        self.net, self.model = network, model
        self.flows = MaxMin(_Capacity(model.bandwidth_factor))  # type: ignore[arg-type]
        self._flowing: dict[int, _Transit] = {}
        self._ends: dict[Any, tuple[str, str]] = {}  # a link's ends, for its load records
        self._load: dict[Any, float] = {}  # the load last written for each shared link
        self._flush_due = False  # a flush of the loads is scheduled at this instant
        self._extras: dict[tuple[int, int], dict[str, Any]] = {}  # see _extra
        self._wake: float = math.inf  # the instant of the live wake-up event
        self._wakes = 0  # version of the live wake-up (older ones are ignored)
        self._conns: dict[tuple[str, str], Connection] | None = (
            {} if model.reliable and model.connection == "persistent" else None)  # (src, dst) -> its connection
        #: (link class of the first hop, what) -> n: ``retransmissions`` (attempts sent again after a
        #: timeout), ``loss_limited`` (messages delivered at TCP's loss-limited rate) — reliable transport
        self.counts: Counter = Counter()

    # ------------------------------------------------------------ scheduling

    def _at(self, t: float, callback: Any, value: Any) -> None:
        self.net.env.schedule_at(Due((callback,), value), t)

    # ------------------------------------------------------------ sending

    def send(self, msg_id: int, hops: tuple[tuple[str, str, Link], ...], round: int, nbytes: int, payload: bytes, box: Any) -> None:
        """Start message `msg_id` (its send record written) on `hops` at the current instant."""
        now = self.net.env.now
        indices = [link.next_index(round) for _, _, link in hops]
        if box is not None:
            box.left += 1
        n = segments(nbytes, self.model.mss) if self.model.reliable else 1
        tr = _Transit(msg_id, hops, indices, round, nbytes, payload, box, now, n)
        conns = self._conns
        if conns is not None:
            ends = (hops[0][0], hops[-1][1])
            conn = conns.get(ends)
            if conn is None:
                conn = conns[ends] = Connection(self.model.initial_window * self.model.mss)
            tr.conn, tr.seq = conn, conn.sequence()
            if conn.busy:  # its bytes follow the ones already on their way (max-min)
                conn.wait(tr)
                return
        self._attempt(tr, first=True)

    def _draw(self, tr: _Transit) -> None:
        net, fates, k, n = self.net, self.net.fates, tr.attempt, tr.segments
        out = []
        for h, (u, v, link) in enumerate(tr.hops):
            index = tr.indices[h]
            if not link.random:
                out.append(link.draw_fate(None, tr.round, index))
                continue
            head = v if k == 0 else f"{v}#{k}"
            draws = net.hop_draws(u, head)
            if fates is draw_now:
                out.append(link.draw_fate(draws, tr.round, index, n))
            else:
                out.append(fates(("msg", u, head, tr.round, index), partial(link.draw_fate, draws, tr.round, index, n)))
        tr.delay = sum(delay for _, delay in out)
        tr.fates, tr.cap = out, math.inf
        if n >= FAST_RETRANSMIT_SEGMENTS and any(reason == "loss" for reason, _ in out):
            self._lost_segments(tr)

    def _lost_segments(self, tr: _Transit) -> None:
        """The hops that lost some of `tr`'s segments, when all lose packets rather than messages:
        the attempt goes on, at most at TCP's loss-limited throughput (netemu.engine.net.tcp)."""
        rates = []
        for (reason, _), (_, _, link) in zip(tr.fates, tr.hops):
            if reason == "loss":
                p = link.packet_loss
                if p is None:  # this hop loses whole messages (a burst): a timeout, as for a datagram's loss
                    return
                rates.append(loss_given_hit(p, tr.segments))
        rtt = 2.0 * tr.delay
        tr.cap = pftk_rate(path_loss(rates), rtt, self.model.rto(rtt, 1), self.model.mss)
        tr.fates = [(None if reason == "loss" else reason, delay) for reason, delay in tr.fates]
        self.counts[tr.hops[0][2].link_class, "loss_limited"] += 1

    def _attempt(self, tr: _Transit, first: bool = False) -> None:
        self._draw(tr)
        model, now = self.model, self.net.env.now
        rtt = 2.0 * tr.delay
        setup = (model.latency_factor - 1.0) * tr.delay
        if model.reliable and first:
            conn = tr.conn
            if conn is None:
                setup += model.tcp_start(tr.nbytes, rtt, self._rate_estimate(tr, rtt))
            else:  # a persistent connection: the handshake once, slow start from the window it kept
                if not conn.open:
                    conn.open = True
                    setup += rtt if model.handshake else 0.0
                setup += conn.slow_start(now, tr.nbytes, rtt, self._rate_estimate(tr, rtt), model.rto(rtt, 1),
                                         model.initial_window * model.mss, model.slow_start, model.window or math.inf)
                if model.sharing == "max-min":
                    conn.busy, tr.holds = True, True
        if model.sharing == "max-min":
            if setup > 0:
                self._at(now + setup, self._join, tr)
            else:
                self._join_now(tr)
        elif setup > 0:
            self._at(now + setup, self._hop, (tr, 0))
        else:
            self._hop_now(tr, 0)

    def _rate_estimate(self, tr: _Transit, rtt: float) -> float:
        """Bytes/s the transfer will get (for slow start's length): its narrowest hop, shared
        with the transfers already on it (max-min), and its window bound."""
        model = self.model
        rate = min(model.bound(rtt), tr.cap)
        on = self.flows._on_link  # read only: how many transfers each link carries
        for _, _, link in tr.hops:
            if link.bandwidth is not None:
                share = link.bandwidth / 8.0
                if model.sharing == "max-min":
                    share = share * model.bandwidth_factor / (len(on.get(link, ())) + 1)
                rate = min(rate, share)
        return rate

    # ------------------------------------------------------------ store and forward

    def _hop(self, event: Due) -> None:
        tr, h = event._value  # our own event
        self._hop_now(tr, h)

    def _hop_now(self, tr: _Transit, h: int) -> None:
        now = self.net.env.now
        u, v, link = tr.hops[h]
        if link._outages and link.is_down(now):
            self._fail(tr, h, "outage", now)
            return
        busy = link.busy_until
        if link.queue_bytes is not None and busy > now and link.bandwidth is not None:
            if (busy - now) * link.bandwidth / 8.0 + tr.nbytes > link.queue_bytes:
                self._fail(tr, h, "queue", now)
                return
        tx = 0.0 if link.bandwidth is None else tr.nbytes * 8.0 / link.bandwidth
        if h == 0 and tr.cap < math.inf:  # the sender recovers its lost segments: no faster than TCP's loss-limited rate
            tx = max(tx, tr.nbytes / tr.cap)
        tx_end = (now if now > busy else busy) + tx
        link.busy_until = tx_end
        if h == 0 and tr.conn is not None:
            tr.conn.idle_since = max(tr.conn.idle_since, tx_end)
        reason, delay = tr.fates[h]
        if reason in ("loss", "expired"):
            self._fail(tr, h, reason, tx_end + (link.max_delay if reason == "expired" else 0.0))
        elif h + 1 < len(tr.hops):
            self._at(tx_end + delay, self._hop, (tr, h + 1))
        else:
            self._arrive(tr, tx_end + delay)

    # ------------------------------------------------------------ max-min flows

    def _join(self, event: Due) -> None:
        self._join_now(event._value)

    def _join_now(self, tr: _Transit) -> None:
        now = self.net.env.now
        for h, (_, _, link) in enumerate(tr.hops):
            if link._outages and link.is_down(now):
                self._release(tr, now)
                self._fail(tr, h, "outage", now)
                return
        tr.joined = now
        links = [link for _, _, link in tr.hops]
        bound = min(self.model.bound(2.0 * tr.delay), tr.cap)
        if bound == math.inf and not any(link.bandwidth is not None for link in links):
            self._done(tr, now)  # nothing limits its rate: it takes no time
            return
        self._flowing[tr.id] = tr
        shared = self.flows.ever_shared
        before = len(shared)
        self.flows.add(now, tr.id, links, tr.nbytes, bound)
        if len(shared) > before:  # a link of this path became shared: remember its ends for its load records
            for u, v, link in tr.hops:
                if link in shared:
                    self._ends.setdefault(link, (u, v))
        self._reschedule()
        self._log_loads()

    def _reschedule(self) -> None:
        at = self.flows.next_finish()
        if at < math.inf and at != self._wake:
            self._wake = at
            self._wakes += 1
            self._at(max(at, self.net.env.now), self._wakeup, self._wakes)

    def _wakeup(self, event: Due) -> None:
        if event._value != self._wakes:  # a wake-up the rates have moved since
            return
        self._wake = math.inf
        now = self.net.env.now
        for tid in self.flows.finished(now):
            self._done(self._flowing.pop(tid), now)
        self._reschedule()
        self._log_loads()

    def _log_loads(self) -> None:
        """Write the shared links' loads once the events of this instant are done (one flush per
        instant, however many transfers started or ended in it)."""
        if not self._flush_due:
            self._flush_due = True
            self._at(self.net.env.now, self._flush_loads, None)

    def _flush_loads(self, event: Due) -> None:
        """A `load` record for each shared link whose load changed: bits/s in use and its capacity
        (what the report draws as link utilization over time)."""
        self._flush_due = False
        last, now, emit = self._load, self.net.env.now, self.net.emit
        for link, rate in self.flows.loads().items():  # the sharing's links are our Link objects
            bps = rate * 8.0
            if abs(bps - last.get(link, 0.0)) > 1e-9 * (getattr(link, "bandwidth", None) or 1.0):
                last[link] = bps
                u, v = self._ends[link]
                emit(t=now, event="load", src=u, dst=v, link=link.link_class, bps=bps, capacity=link.bandwidth)  # type: ignore[attr-defined]

    def _release(self, tr: _Transit, now: float) -> None:
        """`tr`'s bytes have left (or its attempt failed): its connection sends the next message now."""
        conn = tr.conn
        if conn is None or not tr.holds:
            return
        tr.holds, conn.busy, conn.idle_since = False, False, now
        if conn.waiting:
            self._attempt(conn.waiting.popleft(), first=True)

    def _done(self, tr: _Transit, now: float) -> None:
        """The flow of `tr` sent its last byte at `now`: outages it met, then its fates."""
        self._release(tr, now)
        for h, (_, _, link) in enumerate(tr.hops):
            if link._outages and any(s < now and e > tr.joined for s, e in link.outages):
                self._fail(tr, h, "outage", now)
                return
        for h, (reason, _) in enumerate(tr.fates):
            if reason in ("loss", "expired"):
                self._fail(tr, h, reason, now + (tr.hops[h][2].max_delay if reason == "expired" else 0.0))
                return
        self._arrive(tr, now + tr.delay)

    def _arrive(self, tr: _Transit, at: float) -> None:
        """`tr` reaches its destination at `at`: corrupted on a hop, it is unusable there (a datagram
        is dropped, a reliable message sent again); duplicated on a hop, a datagram arrives twice (a
        reliable transport discards the copy)."""
        fates = [reason for reason, _ in tr.fates]
        if "corrupt" in fates:
            self._fail(tr, fates.index("corrupt"), "corrupt", at)
            return
        if tr.conn is not None:  # in order: after every earlier message of its connection
            tr.conn.deliver(tr.seq, at, self.net.env.now, partial(self._deliver, tr))
            return
        self._deliver(tr, at)
        if "duplicate" in fates and not self.model.reliable:
            self.net.copy_at(at, tr.id, tr.payload)

    def _deliver(self, tr: _Transit, at: float | None) -> None:
        assert at is not None
        self.net.arrive_at(at, tr.id, tr.payload, tr.box, self._extra(tr))

    # ------------------------------------------------------------ failures

    def _fail(self, tr: _Transit, h: int, reason: str, at: float) -> None:
        """Attempt `tr.attempt` failed at hop `h` (noticed at `at`): drop a datagram, resend a reliable one."""
        u, v, _ = tr.hops[h]
        if not self.model.reliable:
            self.net.drop_at(at, tr.id, reason, tr.box, {**self._extra(tr), "hop": f"{u}->{v}"})
            return
        tr.attempt += 1
        again = at + self.model.rto(2.0 * tr.delay, tr.attempt)
        give_up = tr.first + self.model.connect_timeout
        if again > give_up:
            drop = partial(self.net.drop_at, max(at, give_up), tr.id, "timeout", tr.box, {**self._extra(tr), "hop": f"{u}->{v}", "last": reason})
            if tr.conn is not None:  # later messages of its connection no longer wait for it
                tr.conn.deliver(tr.seq, None, self.net.env.now, lambda _: drop())
            else:
                drop()
            return
        self.counts[tr.hops[0][2].link_class, "retransmissions"] += 1
        self._at(again, self._retry, tr)

    def _retry(self, event: Due) -> None:
        self._attempt(event._value)

    def _extra(self, tr: _Transit) -> dict[str, Any]:
        """The extra fields of `tr`'s records (one dict per hop count and attempt, shared: never changed)."""
        key = (len(tr.hops), tr.attempt)
        extra = self._extras.get(key)
        if extra is None:
            extra = self._extras[key] = {"hops": key[0], **({"attempts": key[1] + 1} if self.model.reliable else {})}
        return extra
