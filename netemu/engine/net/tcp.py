"""TCP's response to random packet loss, for the reliable transport's flows.

A link's loss model may say that its losses are per packet (`Loss.packet_loss`: Bernoulli's
`p`).  Under the reliable transport a message of `segments(nbytes, mss)` segments then meets
one keyed draw per hop and attempt, as before, whose outcome is whether the hop lost *any*
of its segments: probability 1 - (1 - p)^n (`Loss.lost_any`).  What a hit costs is TCP's:

- a message of at most three segments cannot collect three duplicate ACKs, so its loss is
  recovered by a retransmission timeout (PFTK's Q(w) = min(1, 3/w) = 1 for w <= 3): the
  attempt fails and is sent again after the RTO, as a whole-message loss always was;
- a longer message is delivered by this attempt at most at the steady-state throughput of
  Padhye, Firoiu, Towsley and Kurose (`pftk_rate`), with the loss rate it met: given that
  at least one of its n segments was lost, it lost n p / (1 - (1 - p)^n) of them on average,
  i.e. a rate p / (1 - (1 - p)^n) per segment (`loss_given_hit`).  Over many messages the
  mean number of lost segments is then n p, the unconditional one.

A message no hop hit is lossless: it pays slow start and its share of the links only.
"""

from __future__ import annotations

import math

__all__ = ["DELAYED_ACK", "FAST_RETRANSMIT_SEGMENTS", "loss_given_hit", "path_loss", "pftk_rate", "segments"]

#: segments acknowledged by one ACK (b in PFTK): delayed ACKs, as Linux and ns-3 do by default
DELAYED_ACK = 2
#: the fewest segments whose loss fast retransmit can recover (three duplicate ACKs need three more)
FAST_RETRANSMIT_SEGMENTS = 4


def segments(nbytes: int, mss: int) -> int:
    """The TCP segments of `mss` payload bytes that carry `nbytes` (at least one)."""
    return max(1, -(-nbytes // mss))


def loss_given_hit(p: float, n: int) -> float:
    """The per-segment loss rate of a message of `n` segments known to have lost at least one,
    each lost with probability `p`: E[lost | lost >= 1] / n = p / (1 - (1 - p)^n)."""
    if p <= 0:
        return 0.0
    hit = -math.expm1(n * math.log1p(-p)) if p < 1 else 1.0
    return min(1.0, p / hit)


def path_loss(rates: list[float]) -> float:
    """The loss rate of a path whose hops lose packets independently at `rates`."""
    kept = 1.0
    for p in rates:
        kept *= 1.0 - p
    return 1.0 - kept


def pftk_rate(p: float, rtt: float, rto: float, mss: int, b: int = DELAYED_ACK) -> float:
    """Bytes/s a TCP Reno flow sustains at segment loss rate `p`, round-trip time `rtt` and
    retransmission timeout `rto` (T0); `math.inf` when `p` is 0.

    Padhye, Firoiu, Towsley, Kurose, "Modeling TCP Throughput: A Simple Model and its Empirical
    Validation", SIGCOMM 1998, the approximate full model, eq. (30) (the form RFC 5348 sec. 3.1
    uses), in packets per second:

        B(p) = 1 / (RTT sqrt(2bp/3) + T0 min(1, 3 sqrt(3bp/8)) p (1 + 32 p^2))

    The window bound min(Wmax / RTT, .) of eq. (30) is the flow model's own (`NetModel.bound`)."""
    if p <= 0:
        return math.inf
    seconds = rtt * math.sqrt(2.0 * b * p / 3.0) + rto * min(1.0, 3.0 * math.sqrt(3.0 * b * p / 8.0)) * p * (1.0 + 32.0 * p * p)
    return mss / seconds if seconds > 0 else math.inf
