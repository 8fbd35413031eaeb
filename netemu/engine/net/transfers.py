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
from functools import partial
from typing import TYPE_CHECKING, Any

from netemu.engine.net.connections import Connection
from netemu.engine.net.fates import draw_now
from netemu.engine.net.inflight import Due
from netemu.engine.net.links import Link
from netemu.engine.net.model import NetModel
from netemu.engine.net.queues import Burst, Bursts
from netemu.engine.net.sharing import MaxMin
from netemu.engine.net.tcp import FAST_RETRANSMIT_SEGMENTS, loss_given_hit, path_loss, pftk_rate, segments
from netemu.engine.net.transit import Capacity, Carrier, Transit

if TYPE_CHECKING:
    from netemu.wire.codec import Unencoded

__all__ = ["Carrier", "Transfers"]


class Transfers:
    """The general message path of a `Network` (see the module docstring)."""

    def __init__(self, network: Carrier, model: NetModel) -> None:
        self.net, self.model = network, model
        self.flows = MaxMin(Capacity(model.bandwidth_factor))  # type: ignore[arg-type]
        self._flowing: dict[int, Transit] = {}
        self._ends: dict[Any, tuple[str, str]] = {}  # a link's ends, for its load records
        self._load: dict[Any, float] = {}  # the load last written for each shared link
        self._flush_due = False  # a flush of the loads is scheduled at this instant
        self._extras: dict[tuple[int, int], dict[str, Any]] = {}  # see _extra
        self._wake: float = math.inf  # the instant of the live wake-up event
        self._wakes = 0  # version of the live wake-up (older ones are ignored)
        self._conns: dict[tuple[str, str], Connection] | None = (
            {} if model.reliable and model.connection == "persistent" else None)  # (src, dst) -> its connection
        #: (link class of the first hop, what) -> n: ``retransmissions`` (attempts sent again after a
        #: timeout), ``loss_limited`` (messages delivered at TCP's loss-limited rate) — reliable transport;
        #: ``queue_overflows`` (slow starts that overflowed a queue), ``queue_timeouts`` (... and waited a timeout)
        self.counts: Counter = Counter()
        # slow starts through bounded queues (netemu.engine.net.queues): max-min with the reliable transport
        self.bursts = Bursts(model.mss, model.congestion_control) if model.sharing == "max-min" and model.reliable else None
        self._bursting: dict[int, tuple[Transit, list]] = {}  # burst id -> its transit and bounded links
        self._dirty: dict[Any, None] = {}  # bounded links with a new burst this instant, to check once

    # ------------------------------------------------------------ scheduling

    def _at(self, t: float, callback: Any, value: Any) -> None:
        self.net.env.schedule_at(Due((callback,), value), t)

    # ------------------------------------------------------------ sending

    def send(self, msg_id: int, hops: tuple[tuple[str, str, Link], ...], round: int, nbytes: int, payload: bytes | Unencoded, box: Any) -> None:
        """Start message `msg_id` (its send record written) on `hops` at the current instant."""
        now = self.net.env.now
        indices = [link.next_index(round) for _, _, link in hops]
        if box is not None:
            box.left += 1
        n = segments(nbytes, self.model.mss) if self.model.reliable else 1
        tr = Transit(msg_id, hops, indices, round, nbytes, payload, box, now, n)
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

    def node_up(self, name: str, up: bool) -> None:
        """Node `name` crashed or recovered: nothing to do here (what arrives at a crashed node is dropped on arrival)."""

    def _draw(self, tr: Transit) -> None:
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

    def _lost_segments(self, tr: Transit) -> None:
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

    def _attempt(self, tr: Transit, first: bool = False) -> None:
        self._draw(tr)
        tr.left = -1.0
        model, now = self.model, self.net.env.now
        rtt = 2.0 * tr.delay
        setup = (model.latency_factor - 1.0) * tr.delay
        if model.reliable and first:
            conn, iw = tr.conn, model.initial_window * model.mss
            window: float = iw
            if conn is None:
                shake = rtt if model.handshake else 0.0
                setup += model.tcp_start(tr.nbytes, rtt, self._rate_estimate(tr, rtt))
            else:  # a persistent connection: the handshake once, slow start from the window it kept
                shake = 0.0
                if not conn.open:
                    conn.open = True
                    shake = rtt if model.handshake else 0.0
                    setup += shake
                setup += conn.slow_start(now, tr.nbytes, rtt, self._rate_estimate(tr, rtt), model.rto(rtt, 1),
                                         iw, model.slow_start, model.window or math.inf)
                window = conn.first + (conn.burst - tr.nbytes)  # its burst's window when it starts (each byte acked adds one)
                if model.sharing == "max-min":
                    conn.busy, tr.holds = True, True
            if self.bursts is not None:
                self._burst(tr, now + shake, rtt, window)
        if model.sharing == "max-min":
            if setup > 0:
                self._at(now + setup, self._join, tr)
            else:
                self._join_now(tr)
        elif setup > 0:
            self._at(now + setup, self._hop, (tr, 0))
        else:
            self._hop_now(tr, 0)

    def _rate_estimate(self, tr: Transit, rtt: float) -> float:
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

    # ------------------------------------------------------------ queues that overflow

    def _fifo(self, link: Link) -> bool:
        """Whether `link` serves its flows from one FIFO queue: its own `qdisc`, else the network's."""
        return self.model.fifo if link.qdisc is None else link.qdisc == "fifo"

    def _burst(self, tr: Transit, start: float, rtt: float, window: float) -> None:
        """`tr`'s slow start from `window` bytes at `start` enters the bounded queues on its path
        (netemu.engine.net.queues); they are checked once the events of this instant are done."""
        bursts, model = self.bursts, self.model
        assert bursts is not None
        bounded, upstream, slowest = [], {}, math.inf
        for _, _, link in tr.hops:
            if link.bandwidth is not None:
                if self._fifo(link) or link.queue_bytes is not None:
                    bounded.append(link)
                    upstream[link] = slowest
                slowest = min(slowest, link.bandwidth / 8.0)
        if not bounded:
            return
        cap = model.window or math.inf
        bursts.start(Burst(tr.id, start, rtt, min(window, cap), float(tr.nbytes), upstream), bounded)
        self._bursting[tr.id] = (tr, bounded)
        if not self._dirty:
            self._at(self.net.env.now, self._check_queues, None)
        self._dirty.update(dict.fromkeys(bounded))

    def _check_queues(self, event: Due) -> None:
        """The bursts that overflow a queue lose packets; those that cannot recover by fast retransmit
        stall for a retransmission timeout when their round starts (`_stall`)."""
        dirty, self._dirty = self._dirty, {}
        bursts, now, capacity, model = self.bursts, self.net.env.now, self.flows.capacity, self.model
        assert bursts is not None
        flows = self.flows
        # the load of the flows past their slow start: a transfer whose slow start is a burst here counts as one
        checked = [(link, capacity[link], link.queue_bytes, max(0.0, flows.load(link) - sum(flows.rate(i) for i in bursts.ids(link, now))),
                    self._fifo(link)) for link in dirty]
        for tid, at, stall in bursts.overflows(checked, now, model.default_queue):
            tr, links = self._bursting.pop(tid)
            bursts.end(tid, links)
            cls = tr.hops[0][2].link_class
            self.counts[cls, "queue_overflows"] += 1
            if stall:
                self.counts[cls, "queue_timeouts"] += 1
                self._at(max(at, now), self._stall, tr)

    def _end_burst(self, tr: Transit) -> None:
        entry = self._bursting.pop(tr.id, None)
        if entry is not None and self.bursts is not None:
            self.bursts.end(tr.id, entry[1])

    def _stall(self, event: Due) -> None:
        """`tr` lost packets it cannot recover but by a timeout: its flow pauses for one RTO (its share goes
        to the others) and then slow-starts again from one segment (RFC 5681 sec. 3.1: the loss window after
        a timeout), which costs it the time `NetModel.slow_start` gives; not flowing yet, it joins one RTO later."""
        tr: Transit = event._value
        model, rtt = self.model, 2.0 * tr.delay
        rto = model.rto(rtt, 1)
        if tr.id in self._flowing:
            now = self.net.env.now
            del self._flowing[tr.id]
            tr.left = self.flows.remove(now, tr.id)
            ramp = model.slow_start(tr.left, rtt, self._rate_estimate(tr, rtt), float(model.mss))[0]
            self._at(now + rto + ramp, self._join, tr)
            self._reschedule()
            self._log_loads()
        elif tr.left == -1.0:  # not joined yet (a paused or finished flow owes nothing more)
            tr.owed += rto

    # ------------------------------------------------------------ store and forward

    def _hop(self, event: Due) -> None:
        tr, h = event._value  # our own event
        self._hop_now(tr, h)

    def _hop_now(self, tr: Transit, h: int) -> None:
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

    def _join_now(self, tr: Transit) -> None:
        now = self.net.env.now
        if tr.owed > 0:  # a timeout it owes first (a queue it overflowed in slow start)
            self._at(now + tr.owed, self._join, tr)
            tr.owed = 0.0
            return
        for h, (_, _, link) in enumerate(tr.hops):
            if link._outages and link.is_down(now):
                self._release(tr, now)
                self._end_burst(tr)
                self._fail(tr, h, "outage", now)
                return
        size = float(tr.nbytes)
        if tr.left >= 0:  # it resumes after a timeout with the bytes it had left
            size = tr.left
        else:
            tr.joined = now
        tr.left = -2.0
        links = [link for _, _, link in tr.hops]
        rtt = 2.0 * tr.delay
        bound = min(self.model.bound(rtt), tr.cap)
        if bound == math.inf and not any(link.bandwidth is not None for link in links):
            self._done(tr, now)  # nothing limits its rate: it takes no time
            return
        self._flowing[tr.id] = tr
        shared = self.flows.ever_shared
        before = len(shared)
        # behind FIFO queues TCP flows share by their windows: rates weighted by 1 / RTT (netemu.engine.net.queues);
        # one weight per flow, so a flow that crosses a FIFO link with a bandwidth is weighted on all its links
        fifo = any(self._fifo(link) for link in links if link.bandwidth is not None)
        self.flows.add(now, tr.id, links, size, bound, 1.0 / max(rtt, 1e-6) if fifo else 1.0)
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

    def _release(self, tr: Transit, now: float) -> None:
        """`tr`'s bytes have left (or its attempt failed): its connection sends the next message now."""
        conn = tr.conn
        if conn is None or not tr.holds:
            return
        tr.holds, conn.busy, conn.idle_since = False, False, now
        if conn.waiting:
            self._attempt(conn.waiting.popleft(), first=True)

    def _done(self, tr: Transit, now: float) -> None:
        """The flow of `tr` sent its last byte at `now`: outages it met, then its fates."""
        self._release(tr, now)
        if self._bursting:
            self._end_burst(tr)
        for h, (_, _, link) in enumerate(tr.hops):
            if link._outages and any(s < now and e > tr.joined for s, e in link.outages):
                self._fail(tr, h, "outage", now)
                return
        for h, (reason, _) in enumerate(tr.fates):
            if reason in ("loss", "expired"):
                self._fail(tr, h, reason, now + (tr.hops[h][2].max_delay if reason == "expired" else 0.0))
                return
        self._arrive(tr, now + tr.delay)

    def _arrive(self, tr: Transit, at: float) -> None:
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

    def _deliver(self, tr: Transit, at: float | None) -> None:
        assert at is not None
        self.net.arrive_at(at, tr.id, tr.payload, tr.box, self._extra(tr))

    # ------------------------------------------------------------ failures

    def _fail(self, tr: Transit, h: int, reason: str, at: float) -> None:
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

    def _extra(self, tr: Transit) -> dict[str, Any]:
        """The extra fields of `tr`'s records (one dict per hop count and attempt, shared: never changed)."""
        key = (len(tr.hops), tr.attempt)
        extra = self._extras.get(key)
        if extra is None:
            extra = self._extras[key] = {"hops": key[0], **({"attempts": key[1] + 1} if self.model.reliable else {})}
        return extra
