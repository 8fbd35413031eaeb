"""netemu's topology as ns-3 setup lines (`engine.cc`): nodes, point-to-point links, TCP settings.

Every node of the graph — actor, router, access point — is an ns-3 node (numbered in the graph's
order); every pair of directed links u->v, v->u is one point-to-point link: each end's DataRate is
its direction's bandwidth (a link without bandwidth: `UNLIMITED` bit/s), the channel's delay the
links' constant latency, each device's DropTail queue the direction's `queue_bytes` (else
`queue_packets` packets, ns-3's default 100), behind ns-3's FqCoDel queue disc under ``qdisc =
"fair"`` or alone under ``"fifo"`` (the link's own `qdisc`, else the network's), a Bernoulli loss a per-packet error model on the
receiving device (data and ACKs alike), and an outage a window in which that model loses every
packet.  What ns-3's point-to-point links cannot be is refused with the link, the key, its value
and what is accepted: a random latency or jitter (a channel has one delay), a delay that differs
between the two directions, a loss model other than Bernoulli, netem's duplicate and corrupt, and a
link without its reverse (TCP's ACKs need a way back).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from netemu.engine.net.impairments import Bernoulli, Constant
from netemu.errors import InputError

if TYPE_CHECKING:
    from netemu.engine.net.links import Link
    from netemu.engine.net.model import NetModel

__all__ = ["NS", "UNLIMITED", "Ns3Unsupported", "loss_rate", "pair_delay", "rate", "setup_lines"]

NS = 1_000_000_000
UNLIMITED = 100_000_000_000  # bit/s of a link without bandwidth (100 Gbit/s: a 1500-byte packet takes 120 ps)
_BUFFER_UNBOUNDED = 1 << 26  # bytes of TCP buffers when the model has no window bound (window = 0): 64 MiB
_DELACK = 0.2  # s: ns-3's TcpSocket::DelAckTimeout


class Ns3Unsupported(InputError):
    """A scenario asks for something `engine = "ns3"` cannot express."""


def _delay(u: str, v: str, link: Link) -> float:
    latency = link.latency
    if not isinstance(latency, Constant):
        raise Ns3Unsupported(f'link {u}->{v}: latency {type(latency).__name__} is random; engine = "ns3" accepts a constant '
                             "delay only (a point-to-point channel has one delay)")
    if link.jitter is not None:
        raise Ns3Unsupported(f'link {u}->{v}: jitter is not supported by engine = "ns3" (accepted: no jitter)')
    if link.duplicate or link.corrupt:
        raise Ns3Unsupported(f'link {u}->{v}: duplicate = {link.duplicate}, corrupt = {link.corrupt}; engine = "ns3" accepts 0 '
                             "(netem's message-level duplicate and corrupt have no packet-level meaning here)")
    return latency.delay


def pair_delay(u: str, v: str, ab: Link, ba: Link) -> float:
    """The one delay (s) of the point-to-point link between `u` and `v`, or `Ns3Unsupported`."""
    d_ab, d_ba = _delay(u, v, ab), _delay(v, u, ba)
    if d_ab != d_ba:
        raise Ns3Unsupported(f"links {u}->{v} and {v}->{u} have delays {d_ab} and {d_ba} s; engine = \"ns3\" needs the same "
                             "delay both ways (a point-to-point channel has one delay)")
    return d_ab


def loss_rate(u: str, v: str, link: Link) -> float:
    loss = link.loss
    if loss is None:
        return 0.0
    if not isinstance(loss, Bernoulli):
        raise Ns3Unsupported(f'link {u}->{v}: loss model {type(loss).__name__} is not supported by engine = "ns3" '
                             "(accepted: bernoulli, applied to every packet)")
    return loss.p


def _queue(link: Link, model: NetModel) -> str:
    return f"{max(1, math.ceil(link.queue_bytes))}B" if link.queue_bytes is not None else f"{model.queue_packets}p"


def _disc(link: Link, model: NetModel) -> str:
    """The sending device's queue discipline: the link's `qdisc`, else the network's."""
    fair = link.qdisc == "fair" if link.qdisc is not None else model.fair
    return "fq_codel" if fair else "fifo"


def rate(link: Link) -> int:
    return UNLIMITED if link.bandwidth is None else max(1, round(link.bandwidth))


def _safe(name: str) -> str:
    """`name` as a piece of a file name (pcap files)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def setup_lines(nodes: Sequence[str], links: Mapping[tuple[str, str], Link], model: NetModel, seed: int,
                pcap: str | None = None) -> list[str]:
    """The setup commands of `engine.cc` for these nodes and directed links (see the module docstring); with
    `pcap` (a directory), a pcap file of each end of every link in it, named after the link's two nodes."""
    if not model.handshake:
        raise Ns3Unsupported('[network] handshake = false: ns-3\'s TCP always opens a connection with a handshake; engine = "ns3" '
                             "accepts handshake = true")
    index = {name: i for i, name in enumerate(nodes)}
    buffer = int(model.window) if model.window > 0 else _BUFFER_UNBOUNDED
    timeout = round(model.connect_timeout * NS) if math.isfinite(model.connect_timeout) else -1
    # the delayed-ACK timer: ns-3's 200 ms, but at most a fifth of the minimum RTO, as ns-3's (1 s) and Linux's (200 ms
    # against TCP_ATO_MIN, 40 ms) keep it.  A timer as long as the RTO makes a lone segment's ACK arrive just as its
    # retransmission timer fires: with rto_min = 0.2 a connection that restarts from one segment stays at one segment
    # per 200 ms (a spurious timeout each time, the window reset to one)
    delack = min(_DELACK, model.rto_min / 5)
    lines = [f"tcp {model.mss} {model.initial_window} {buffer} {round(model.rto_min * NS)} 2 {round(delack * NS)} {timeout} "
             f"{model.congestion_control} {int(model.sack)}",
             f"nodes {len(nodes)}", f"seed {seed}"]
    outages: list[str] = []
    for (u, v), ab in links.items():
        ba = links.get((v, u))
        if ba is None:
            raise Ns3Unsupported(f'link {u}->{v} has no reverse link {v}->{u}; engine = "ns3" needs both directions (TCP\'s '
                                 "acknowledgements travel back)")
        if index[u] > index[v]:
            continue  # the pair is written once, from its lower-numbered end
        d_ab = pair_delay(u, v, ab, ba)
        lines.append(f"link {index[u]} {index[v]} {rate(ab)} {rate(ba)} {round(d_ab * NS)} {_queue(ab, model)} {_queue(ba, model)} "
                     f"{loss_rate(u, v, ab)!r} {loss_rate(v, u, ba)!r} {_disc(ab, model)} {_disc(ba, model)}")
        for a, b, link in ((u, v, ab), (v, u, ba)):
            for start, end in link.outages:
                outages.append(f"outage {index[a]} {index[b]} {round(start * NS)} {round(end * NS) if math.isfinite(end) else -1}")
        if pcap is not None:  # ns-3 names the files PREFIX-<node id>-<device id>.pcap
            lines.append(f"pcap {pcap}/{_safe(u)}--{_safe(v)} {index[u]} {index[v]}")
    return lines + outages
