"""Streaming tallies of message traffic: a quantile sketch of delays (`Quantiles`), count,
mean and max (`Mean`), and the counts of one traffic class (`Traffic`).  Shared by
`netemu log summary` (netemu/report/logtools.py) and `netemu report` (netemu/report/html.py); memory
holds the aggregates, never a list of every delay."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["Mean", "Quantiles", "Traffic", "percentiles"]


class Quantiles:
    """Streaming quantiles of non-negative values with relative accuracy `alpha`.

    Values fall into logarithmic buckets ``(γ^(k-1), γ^k]`` with ``γ = (1+α)/(1-α)``
    (the DDSketch construction, Masson et al., VLDB 2019); `quantile(q)` returns a
    value within a factor ``1 ± α`` of the order statistic of rank ``⌊q (n - 1)⌋``.
    Zero is counted exactly; min, max and the mean are exact.  Memory: one counter per
    occupied bucket (about 1,400 buckets for values between 1 µs and 10⁶ s at α = 1 %).
    Sketches with the same `alpha` merge exactly (bucket counts add), which is how
    `netemu report` sums link classes; it and `netemu log summary` share this sketch.
    """

    def __init__(self, alpha: float = 0.01):
        self.alpha = alpha
        self.gamma = (1 + alpha) / (1 - alpha)
        self._inv_log_gamma = 1.0 / math.log(self.gamma)
        self.buckets: Counter = Counter()
        self.zeros = 0
        self.count = 0
        self.total = 0.0
        self.max = -math.inf
        self.min = math.inf

    def add(self, x: float) -> None:
        self.count += 1
        self.total += x
        if x > self.max:
            self.max = x
        if x < self.min:
            self.min = x
        if x > 0:
            self.buckets[math.ceil(math.log(x) * self._inv_log_gamma)] += 1
        else:
            self.zeros += 1

    def merge(self, other: Quantiles) -> None:
        """Add every value `other` has seen (exact: the same buckets, counts summed)."""
        if other.alpha != self.alpha:
            raise ValueError(f"cannot merge sketches of relative accuracy {self.alpha} and {other.alpha}")
        self.buckets.update(other.buckets)
        self.zeros += other.zeros
        self.count += other.count
        self.total += other.total
        self.max = max(self.max, other.max)
        self.min = min(self.min, other.min)

    def quantile(self, q: float) -> float:
        if not self.count:
            return math.nan
        rank = math.floor(q * (self.count - 1))
        if rank < self.zeros:
            return 0.0
        seen = self.zeros
        for k in sorted(self.buckets):
            seen += self.buckets[k]
            if seen > rank:
                return max(self.min, min(2 * self.gamma**k / (self.gamma + 1), self.max))
        return self.max

    def cdf(self) -> list[list[float]]:
        """[x, fraction of values <= x] at each occupied bucket's upper edge (clipped to max);
        a leading [0, fraction] when some values are <= 0."""
        if not self.count:
            return []
        out, seen = [], self.zeros
        if self.zeros:
            out.append([0.0, self.zeros / self.count])
        for k in sorted(self.buckets):
            seen += self.buckets[k]
            out.append([min(self.gamma**k, self.max), seen / self.count])
        return out

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan


class Mean:
    """Count, mean and max of a stream (what the slowest-links tables need)."""

    __slots__ = ("count", "total", "max")

    def __init__(self) -> None:
        self.count, self.total, self.max = 0, 0.0, -math.inf

    def add(self, x: float) -> None:
        self.count += 1
        self.total += x
        if x > self.max:
            self.max = x

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan


@dataclass
class Traffic:
    """Message counts of one traffic class (kind / link class): what `netemu log summary` and
    `netemu report` both tally, with the delays of the delivered messages in a `Quantiles`.

    A message's outcome record (deliver or drop) carries `attempts` under the reliable
    transport (1 when absent: one attempt); a record with `duplicate: true` is a second copy
    of a message already delivered, counted in `duplicates` and not as a message."""

    sent: int = 0
    delivered: int = 0
    dropped: Counter = field(default_factory=Counter)
    in_flight: int = 0
    bytes: int = 0
    delays: Quantiles = field(default_factory=Quantiles)
    duplicates: int = 0
    attempts: int = 0  # over the messages with an outcome (delivered or dropped)
    max_attempts: int = 0

    def outcome(self, event: str, r: dict) -> None:
        """Count one deliver, drop or in_flight record `r` of this class."""
        if r.get("duplicate") is True:
            self.duplicates += 1
            return
        if event == "in_flight":
            self.in_flight += 1
            return
        if event == "deliver":
            self.delivered += 1
            self.delays.add(float(r["delay"]))
        else:
            self.dropped[str(r["reason"])] += 1
        k = r.get("attempts", 1)
        k = k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else 1
        self.attempts += k
        if k > self.max_attempts:
            self.max_attempts = k

    def merge(self, o: Traffic) -> None:
        self.sent += o.sent
        self.delivered += o.delivered
        self.dropped.update(o.dropped)
        self.in_flight += o.in_flight
        self.bytes += o.bytes
        self.delays.merge(o.delays)
        self.duplicates += o.duplicates
        self.attempts += o.attempts
        self.max_attempts = max(self.max_attempts, o.max_attempts)

    def network(self) -> dict:
        """What the network did to these messages: retransmissions (attempts beyond the first),
        attempts per message (mean over the messages delivered or dropped, and max), timeouts
        (reliable transport gave up), queue drops (a full link queue) and duplicates."""
        ended = self.delivered + sum(self.dropped.values())
        return {"retransmissions": self.attempts - ended, "attempts_per_message": self.attempts / ended if ended else None,
                "max_attempts": self.max_attempts, "timeouts": self.dropped.get("timeout", 0),
                "queue_drops": self.dropped.get("queue", 0), "duplicates": self.duplicates}

    def counts(self) -> dict:
        """The counts as JSON-ready numbers (drops in total and by reason), and `network`."""
        return {"sent": self.sent, "delivered": self.delivered, "dropped": sum(self.dropped.values()),
                "dropped_by_reason": dict(sorted(self.dropped.items())), "in_flight": self.in_flight, "bytes": self.bytes,
                "network": self.network()}


def percentiles(q: Quantiles) -> dict:
    if not q.count:
        return {}
    return {"p50": q.quantile(0.50), "p90": q.quantile(0.90), "p99": q.quantile(0.99), "max": float(q.max)}
