"""What the general message path (netemu.engine.net.transfers) keeps: the network it carries messages
for (`Carrier`), the links' capacities under sharing (`Capacity`) and each message in transit (`Transit`)."""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Protocol

from netemu.engine.net.connections import Connection
from netemu.engine.net.links import Link

if TYPE_CHECKING:
    from netemu.engine.clock import VirtualEnvironment
    from netemu.engine.net.fates import Fates
    from netemu.engine.rng import KeyedDraws
    from netemu.wire.codec import Unencoded
    from netemu.log import MessageLog

__all__ = ["Capacity", "Carrier", "Transit"]


class Carrier(Protocol):
    """What the general path needs of the network it carries messages for (a `Network`):
    its clock, fates hook and log, each hop's keyed draws, and the outcomes it schedules."""

    env: VirtualEnvironment
    fates: Fates
    emit: MessageLog

    def hop_draws(self, src: str, head: str) -> KeyedDraws: ...

    def arrive_at(self, t: float, msg_id: int, payload: bytes | Unencoded, box: Any, extra: dict) -> None: ...

    def drop_at(self, t: float, msg_id: int, reason: str, box: Any, extra: dict) -> None: ...

    def copy_at(self, t: float, msg_id: int, payload: bytes | Unencoded) -> None: ...



class Capacity:
    """Bytes/s of each link under sharing (its bandwidth x the model's factor), read when asked:
    a script may change a link's bandwidth.  A link without bandwidth is no constraint."""

    def __init__(self, factor: float) -> None:
        self.factor = factor

    def __contains__(self, link: Hashable) -> bool:
        return link.bandwidth is not None  # type: ignore[attr-defined]

    def __getitem__(self, link: Link) -> float:
        assert link.bandwidth is not None
        return link.bandwidth / 8.0 * self.factor


class Transit:
    """A message between its send and its delivery or drop."""

    __slots__ = ("attempt", "box", "cap", "conn", "delay", "fates", "first", "holds", "hops", "id", "indices", "joined", "left", "nbytes",
                 "owed", "payload", "round", "segments", "seq")

    def __init__(self, id: int, hops: tuple, indices: list[int], round: int, nbytes: int, payload: bytes | Unencoded, box: Any, now: float,
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
        self.left = -1.0  # bytes its flow has left while it pauses for a timeout (-1: not joined yet, -2: joined; netemu.engine.net.queues)
        self.owed = 0.0  # seconds of timeout its flow owes before it joins the sharing (a queue it overflowed)
