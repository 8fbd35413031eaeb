"""What a network counts: messages sent, delivered and dropped per link class, and the
reliable transport's retransmissions.  A mixin of `netemu.engine.net.network.Network`."""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["Tallies"]


class Tallies:
    """Counts of a network's messages (see the module docstring)."""

    # per link class: messages sent, bytes, payload bytes, delivered (list items: the per-message
    # updates are cheaper than a Counter's tuple keys); drops by reason apart
    _tallies: dict[str, list[int]]
    _drops: Counter
    _pending: dict[int, tuple]
    _transfers: Any  # netemu.engine.net.transfers.Transfers, or None

    @property
    def counts(self) -> Counter:
        """(link class, what) -> n, for what in sent, bytes, payload_bytes, delivered,
        dropped and dropped_<reason>; a count that never grew is absent."""
        out: Counter = Counter()
        for cls, (sent, nbytes, payload_bytes, delivered) in self._tallies.items():
            out[cls, "sent"], out[cls, "bytes"], out[cls, "payload_bytes"] = sent, nbytes, payload_bytes
            if delivered:
                out[cls, "delivered"] = delivered
        out.update(self._drops)
        return out

    @property
    def transport_counts(self) -> Counter:
        """(link class of a message's first hop, what) -> n under the reliable transport:
        ``retransmissions`` (attempts sent again after a timeout) and ``loss_limited`` (messages
        that lost packets and were delivered at TCP's loss-limited rate); empty otherwise."""
        return Counter(self._transfers.counts) if self._transfers is not None else Counter()

    def in_flight(self) -> list[dict]:
        """Messages sent but neither delivered nor dropped yet, in id order."""
        keys = ("src", "dst", "kind", "round", "bytes", "link", "sent_at")
        return [{"id": i, **dict(zip(keys, rec))} for i, rec in sorted(self._pending.items())]

    def message_counts(self) -> dict:
        """Per link class: sent, delivered, dropped (and per reason), bytes and payload_bytes sent; plus totals."""
        out: dict[str, dict[str, int]] = {}
        for (cls, what), n in sorted(self.counts.items()):
            out.setdefault(cls, {})[what] = n
        in_flight = Counter(rec[5] for rec in self._pending.values())
        total: Counter = Counter()
        for cls, c in out.items():
            c.setdefault("delivered", 0)
            c.setdefault("dropped", 0)
            c["in_flight"] = in_flight.get(cls, 0)
            total.update(c)
        return {"total": dict(sorted(total.items())), "by_link_class": out}
