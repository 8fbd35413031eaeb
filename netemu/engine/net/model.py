"""The network model of a run: how transfers share links and what the transport does.

`NetModel()` is the historical model: every link a FIFO pipe of its own, a message lost
whole (`sharing = "none"`, `transport = "datagram"`).  The other settings are

- ``sharing = "max-min"``: transfers crossing a link at the same time share it max-min
  fairly (netemu.engine.net.sharing), SimGrid's flow-level model (Velho et al., ACM TOMACS 2013):
  capacity x `bandwidth_factor`, rate <= `window` / RTT, and a latency phase of
  `latency_factor` x the path's one-way delay before the bandwidth phase (their LV08
  calibration is bandwidth_factor 0.97, latency_factor 13.01, window 4 MiB; we keep
  0.97 and the window and model TCP's start explicitly instead of the factor 13.01, see
  `tcp_start`, docs/network.md);
- ``transport = "reliable"``: TCP-like.  A connection costs a handshake (one RTT) and slow
  start from `initial_window` segments (`tcp_start`); with ``connection = "persistent"`` (the
  default) one connection per ordered pair carries its messages in order, pays the handshake
  once and keeps its window (netemu.engine.net.connections), with ``"per-message"`` every
  message opens its own; a lost or corrupted attempt costs a
  retransmission timeout (max(`rto_min`, 2 RTT), doubling) and a resend, not the message;
  the message is lost (``timeout``) only when its path stays unusable past
  `connect_timeout` seconds after it was sent.
- ``qdisc``: how a shared link serves the flows crossing it, the same on both engines:
  ``"fair"`` (the default: per-flow fair queueing, FqCoDel; in the flow model max-min shares and
  no overflow unless a link sets `queue_bytes`, in ns-3 its FqCoDelQueueDisc in front of each
  device) or ``"fifo"`` (one drop-tail queue per link; in the flow model `queue_bytes` or by
  default `default_queue` bytes, shared in proportion to the flows' windows: rates weighted by
  1 / RTT, and slow starts that overflow it pay a retransmission timeout, netemu.engine.net.queues;
  in ns-3 the device's DropTail queue alone).  "fair" is the default of both because it is what
  Linux and ns-3 install on a device unless told otherwise, and the flow model's default under
  ``sharing = "max-min"``.  Under the flow model's ``sharing = "none"`` every link is a FIFO of
  whole messages already: only ``"fifo"`` (or nothing) is accepted there;
- ``congestion_control``: TCP's, ``"cubic"`` (the default) or ``"newreno"`` in the flow model, where it
  decides whether HyStart ends a slow start and how deep a loss cuts the window of the flows that
  keep a FIFO queue standing (netemu.engine.net.queues); ns-3 also takes ``"bbr"`` and ``"vegas"``;
- ``engine = "ns3"``: no flow model at all — every message is a TCP transfer in ns-3, run in
  lockstep with the virtual clock (netemu.ns3); `qdisc` and `queue_packets` are its links'
  queues, `congestion_control` and `sack` its TCP's; `sharing`, `window` as a rate bound and the
  factors are the flow model's and unused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from netemu.config import require

__all__ = ["ENGINES", "ENGINE_KEYS", "QDISCS", "SHARING", "TRANSPORTS", "TRANSPORT_KEYS", "NetModel"]

SHARING = ("none", "max-min")
TRANSPORTS = ("datagram", "reliable")
CONNECTIONS = ("persistent", "per-message")
QDISCS = ("fair", "fifo")
#: header bytes of a full segment on the wire beside its `mss` payload bytes (IPv4 20, TCP 20, timestamps 12)
HEADER_BYTES = 52
#: the fewest packets a FIFO queue holds by default (ns-3's DropTailQueue<Packet> default, 100 packets)
DEFAULT_QUEUE_PACKETS = 100
#: network engines: netemu's flow model, or ns-3 run in lockstep (module that implements it: netemu.ns3.engine)
ENGINES = {"flow": None, "ns3": "netemu.ns3.engine:Ns3Engine"}
#: ns-3's TCP congestion controls the ns3 engine offers (ns-3 3.37's default: cubic)
CONGESTION_CONTROLS = ("cubic", "newreno", "bbr", "vegas")
#: the settings of the ns-3 engine: refused in a scenario without it
ENGINE_KEYS = ("queue_packets", "sack")
#: the congestion controls the flow model follows: Cubic (HyStart, beta 0.7) and NewReno (no HyStart, beta 0.5)
FLOW_CONTROLS = ("cubic", "newreno")
#: the settings of the reliable transport: meaningless (and refused in a scenario) without it
TRANSPORT_KEYS = ("connection", "mss", "initial_window", "handshake", "rto_min", "connect_timeout")


@dataclass(frozen=True)
class NetModel:
    sharing: str = "none"
    transport: str = "datagram"
    window: float = 4194304.0  # bytes; SimGrid's TCP_gamma (0 = no window bound)
    bandwidth_factor: float = 0.97  # SimGrid LV08 (Velho et al. 2013, table 2)
    latency_factor: float = 1.0  # SimGrid LV08 uses 13.01 to stand for slow start; see tcp_start
    mss: int = 1448  # bytes of payload per TCP segment (1500-byte MTU, timestamps option)
    initial_window: int = 10  # segments (RFC 6928)
    handshake: bool = True  # one RTT before a connection's first byte
    connection: str = "persistent"  # reliable: one connection per ordered pair, or "per-message"
    rto_min: float = 0.2  # seconds (Linux's TCP_RTO_MIN)
    connect_timeout: float = 30.0  # seconds a reliable message keeps trying
    qdisc: str = ""  # how a shared link serves its flows: "fair" or "fifo" ("": the default, "fair"; under sharing = "none", "fifo")
    engine: str = "flow"  # "flow" (netemu's models) or "ns3" (netemu.ns3)
    queue_packets: int = 100  # ns3: the device queue of a link without queue_bytes, packets (ns-3's default)
    congestion_control: str = "cubic"  # TCP's congestion control (flow: cubic, newreno; ns3: TcpCubic, TcpNewReno, TcpBbr, TcpVegas)
    sack: bool = True  # ns3: TCP selective acknowledgements (ns-3's default; off: the TCP of Padhye et al.)

    def __post_init__(self) -> None:
        checks = (
            (self.sharing in SHARING, "sharing", self.sharing, f"one of {', '.join(SHARING)}"),
            (self.transport in TRANSPORTS, "transport", self.transport, f"one of {', '.join(TRANSPORTS)}"),
            (self.connection in CONNECTIONS, "connection", self.connection, f"one of {', '.join(CONNECTIONS)}"),
            (self.engine in ENGINES, "engine", self.engine, f"one of {', '.join(ENGINES)}"),
            (self.queue_packets >= 1, "queue_packets", self.queue_packets, ">= 1 packet"),
            (self.congestion_control in CONGESTION_CONTROLS, "congestion_control", self.congestion_control,
             f"one of {', '.join(CONGESTION_CONTROLS)}"),
            (self.congestion_control in FLOW_CONTROLS or self.engine != "flow", "congestion_control", self.congestion_control,
             f'one of {", ".join(FLOW_CONTROLS)} under the flow model ({", ".join(c for c in CONGESTION_CONTROLS if c not in FLOW_CONTROLS)}: '
             'engine = "ns3")'),
            (self.window >= 0 and math.isfinite(self.window), "window", self.window, ">= 0 bytes (0 = no window bound)"),
            (0 < self.bandwidth_factor <= 1, "bandwidth_factor", self.bandwidth_factor, "in (0, 1]"),
            (self.latency_factor >= 1 and math.isfinite(self.latency_factor), "latency_factor", self.latency_factor, ">= 1"),
            (self.mss >= 1, "mss", self.mss, ">= 1 byte"),
            (self.initial_window >= 1, "initial_window", self.initial_window, ">= 1 segment"),
            (self.rto_min > 0 and math.isfinite(self.rto_min), "rto_min", self.rto_min, "> 0 seconds"),
            (self.connect_timeout > 0, "connect_timeout", self.connect_timeout, "> 0 seconds"),
            (self.qdisc in ("", *QDISCS), "qdisc", self.qdisc, f"one of {', '.join(QDISCS)}"),
            (self.qdisc != "fair" or self.sharing == "max-min" or self.engine != "flow", "qdisc", self.qdisc,
             '"fifo" under sharing = "none" (every link a FIFO of whole messages); "fair" needs sharing = "max-min"'),
            (self.qdisc != "fifo" or self.sharing == "none" or self.reliable or self.engine != "flow", "qdisc", self.qdisc,
             '"fair" under sharing = "max-min" with transport = "datagram"; "fifo" shares a queue by TCP windows: '
             'it needs transport = "reliable"'),
        )
        for ok, key, _, accepts in checks:
            require(ok, key, accepts)

    @property
    def default(self) -> bool:
        """Whether this is the historical model (independent FIFO pipes, datagrams)."""
        return self.sharing == "none" and self.transport == "datagram" and self.engine == "flow"

    @property
    def reliable(self) -> bool:
        return self.transport == "reliable"

    @property
    def fair(self) -> bool:
        """Links serve their flows by fair queueing (``qdisc = "fair"``, the default; ns-3: FqCoDel), else drop-tail FIFO."""
        return self.qdisc == "fair" or (self.qdisc == "" and (self.sharing == "max-min" or self.engine != "flow"))

    @property
    def fifo(self) -> bool:
        """Shared links are drop-tail FIFO queues of TCP flows (``sharing = "max-min"``, ``qdisc = "fifo"``)."""
        return self.sharing == "max-min" and self.qdisc == "fifo"

    def default_queue(self, capacity: float, rtt: float) -> float:
        """Bytes a FIFO link of `capacity` bytes/s holds when its `queue_bytes` is unset: one bandwidth-delay
        product at the flows' RTT (the rule of thumb, Villamizar and Song, "High performance TCP in ANSNET",
        CCR 24(5), 1994), so that slow start, which overshoots the pipe at most twofold, fills it without loss;
        at least `DEFAULT_QUEUE_PACKETS` full packets (a LAN's BDP is smaller than one initial window)."""
        return max(capacity * rtt, DEFAULT_QUEUE_PACKETS * (self.mss + HEADER_BYTES))

    def bound(self, rtt: float) -> float:
        """The window bound on a transfer's rate, bytes/s (SimGrid: gamma / (2 x latency) = W / RTT)."""
        return self.window / rtt if self.window > 0 and rtt > 0 else math.inf

    def rto(self, rtt: float, attempt: int) -> float:
        """Retransmission timeout before attempt `attempt` (>= 1): max(rto_min, 2 RTT), doubled per
        failed attempt (RFC 6298 sec. 5.5's back-off; 2 RTT stands for SRTT + 4 RTTVAR at start)."""
        return max(self.rto_min, 2.0 * rtt) * 2.0 ** (attempt - 1)

    def tcp_start(self, size: float, rtt: float, rate: float) -> float:
        """Seconds a reliable transfer of `size` bytes spends before it sends at `rate` bytes/s.

        The handshake (one RTT, if `handshake`), then slow start: the window starts at
        `initial_window` x `mss` bytes and doubles every RTT until it carries `rate` x RTT.
        Sending k rounds takes k RTTs and moves IW x MSS x (2^k - 1) bytes; what the transfer
        loses against sending at `rate` from the start is added as time here, during which it
        does not use the links (a flow-level model has no ramp; see docs/network.md)."""
        return (rtt if self.handshake else 0.0) + self.slow_start(size, rtt, rate, self.initial_window * self.mss)[0]

    def slow_start(self, size: float, rtt: float, rate: float, first: float) -> tuple[float, float]:
        """(seconds lost against sending at `rate` from the start, the window after) for `size` bytes
        sent from a congestion window of `first` bytes that grows by the bytes acknowledged, so
        doubles every RTT (RFC 5681's slow start), until it carries `rate` x RTT; see `tcp_start`."""
        if rtt <= 0 or not math.isfinite(rate) or rate <= 0:
            return 0.0, first
        needed = rate * rtt  # the window that sustains `rate`
        rounds = max(0, math.ceil(math.log2(needed / first))) if needed > first else 0  # rounds before the window suffices
        sent = first * (2.0**rounds - 1)
        if size <= sent:  # done within slow start: k - 1 whole rounds and the last window at `rate`
            k = math.ceil(math.log2(size / first + 1))
            before = first * (2.0 ** (k - 1) - 1)
            return max(0.0, (k - 1) * rtt + (size - before) / rate - size / rate), first + size  # each byte acked adds one
        return max(0.0, rounds * rtt - sent / rate), first * 2.0**rounds
