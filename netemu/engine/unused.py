"""Delivered messages an algorithm did not use, and why: the `unused` record and its tallies.

A message's fate (delivered, dropped, expired, in flight) is the network's; whether the
receiving algorithm *used* a delivered message is the algorithm's.  A node says so with one
call on its port, `NodePort.unused(msg, reason, late=...)`, which writes one `unused` record
in the message log (docs/formats.md) and counts it here; the run folds the counts into
metrics.csv (`unused_<reason>` per round) and summary.json (per reason and per client).
An `unused` record annotates a `deliver` record of the same id; it is not a fate.

Reasons (`REASONS`):

* ``late`` — an answer to a round that had already closed (its deadline or quorum passed);
  ``late`` in the record: virtual seconds after that round closed, when known;
* ``stale`` — too many model versions (or rounds) behind to be used (bounded staleness);
* ``duplicate`` — a second copy of a message already received (same id);
* ``discarded`` — received and not used for another reason of the algorithm's
  (superseded by a newer message of the same sender, say);
* ``unread`` — still waiting in the node's inbox when the run ended: never received.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["REASONS", "UnusedTally"]

REASONS = ("late", "stale", "duplicate", "discarded", "unread")


class UnusedTally:
    """The unused messages of one world: counts per (message round, sender, reason), and per
    message round the time of its last unused record (metrics.csv's `time` of the round's counts)."""

    __slots__ = ("counts", "last")

    def __init__(self) -> None:
        self.counts: Counter[tuple[int, str, str]] = Counter()
        self.last: dict[int, float] = {}

    def add(self, round: int, src: str, reason: str, t: float) -> None:
        self.counts[round, src, reason] += 1
        if t > self.last.get(round, -1.0):
            self.last[round] = t

    def by_round(self) -> dict[int, Counter[str]]:
        """Message round -> reason -> count."""
        return self._by(0)

    def by_client(self) -> dict[str, Counter[str]]:
        """Sender -> reason -> count."""
        return self._by(1)

    def reasons(self) -> Counter[str]:
        """Reason -> count."""
        out: Counter[str] = Counter()
        for (_rnd, _src, reason), n in self.counts.items():
            out[reason] += n
        return out

    def _by(self, part: int) -> dict:
        """Key part `part` of (round, sender, reason) -> reason -> count."""
        out: dict = {}
        for key, n in self.counts.items():
            out.setdefault(key[part], Counter())[key[2]] += n
        return out
