"""Link models: latency, jitter, loss, bandwidth and outages of one directed link.

Every random draw is a keyed uniform addressed by (round, index, component), so a
message's fate depends only on where it stands in the traffic of its link, never on
what other links or actors did.  Each component is a small class; a `Link` composes
them.  Stateful components (Gilbert–Elliott, correlated jitter) evolve in the order
messages are sent on their link.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from netemu.rng import KeyedDraws

__all__ = [
    "Bernoulli",
    "Constant",
    "Empirical",
    "Exponential",
    "GilbertElliott",
    "Jitter",
    "Latency",
    "Link",
    "LogNormal",
    "Loss",
    "RoundCounter",
    "RoundDelay",
    "Uniform",
]


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise ValueError(what)


# ---------------------------------------------------------------- latency


class Latency:
    """Propagation delay in seconds.  `max_delay`: a longer delay expires the message."""

    max_delay: float = math.inf

    def sample(self, draws: KeyedDraws, round: int, index: int) -> float:
        raise NotImplementedError


class Constant(Latency):
    def __init__(self, delay: float = 0.0) -> None:
        _check(delay >= 0, f"constant delay must be >= 0, got {delay}")
        self.delay = float(delay)

    def sample(self, draws, round, index):
        return self.delay


class Uniform(Latency):
    def __init__(self, low: float, high: float) -> None:
        _check(0 <= low <= high, f"uniform delay needs 0 <= low <= high, got low={low}, high={high}")
        self.low, self.high = float(low), float(high)

    def sample(self, draws, round, index):
        return self.low + (self.high - self.low) * draws.uniform(round, index, "latency")


class Exponential(Latency):
    """`base` + Exp(mean)."""

    def __init__(self, mean: float, base: float = 0.0) -> None:
        _check(mean > 0 and base >= 0, f"exponential delay needs mean > 0 and base >= 0, got mean={mean}, base={base}")
        self.mean, self.base = float(mean), float(base)

    def sample(self, draws, round, index):
        return self.base + draws.exponential(self.mean, round, index, "latency")


class LogNormal(Latency):
    """exp(mu + sigma·Z): `mu`, `sigma` are the mean and deviation of the log-delay."""

    def __init__(self, mu: float, sigma: float) -> None:
        _check(sigma >= 0, f"log-normal sigma must be >= 0, got {sigma}")
        # a standard normal from a 53-bit uniform stays within |Z| < 9: the delay must stay a finite float
        _check(mu + 9 * sigma < 709, f"log-normal delay exp(mu + sigma·Z) overflows: needs mu + 9·sigma < 709, got mu={mu}, sigma={sigma}")
        self.mu, self.sigma = float(mu), float(sigma)

    def sample(self, draws, round, index):
        return math.exp(self.mu + self.sigma * draws.normal(round, index, "latency"))


class Empirical(Latency):
    """A delay drawn uniformly from measured samples."""

    def __init__(self, samples: Sequence[float]) -> None:
        arr = np.asarray(samples, dtype=float)
        _check(arr.ndim == 1 and arr.size > 0, "empirical delay needs a non-empty list of samples")
        _check(bool(np.all(arr >= 0)), "empirical delay samples must be >= 0")
        self.samples = arr

    @classmethod
    def from_file(cls, path: str | Path) -> Empirical:
        """One delay in seconds per line (blank lines and `#` comments ignored)."""
        values = []
        for n, line in enumerate(Path(path).read_text().splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if line:
                try:
                    values.append(float(line))
                except ValueError:
                    raise ValueError(f"{path}:{n}: expected a delay in seconds, got {line!r}") from None
        return cls(values)

    def sample(self, draws, round, index):
        u = draws.uniform(round, index, "latency")
        return float(self.samples[min(int(u * self.samples.size), self.samples.size - 1)])


class RoundDelay(Latency):
    """Delay of L whole rounds with P(L >= l) = delta**l (PAO-Fed, thesis §4.4.1).

    L = floor(ln U / ln delta).  Messages delayed more than `l_max` rounds expire.
    """

    def __init__(self, delta: float, l_max: int, round_time: float = 1.0, base: float = 0.0) -> None:
        _check(0 <= delta < 1, f"round delay probability delta must be in [0, 1), got {delta}")
        _check(l_max >= 0 and round_time > 0 and base >= 0, "round delay needs l_max >= 0, round_time > 0, base >= 0")
        self.delta, self.l_max, self.round_time, self.base = float(delta), int(l_max), float(round_time), float(base)
        self.max_delay = self.base + self.l_max * self.round_time

    def rounds(self, u: float) -> int:
        return 0 if self.delta == 0 else int(math.floor(math.log(u) / math.log(self.delta)))

    def sample(self, draws, round, index):
        return self.base + self.rounds(draws.open_uniform(round, index, "latency")) * self.round_time


# ---------------------------------------------------------------- jitter


class Jitter:
    """Zero-mean Gaussian jitter with AR(1) correlation between successive messages.

    j_n = c·j_{n-1} + sqrt(1 - c²)·sigma·Z_n, so every j_n has deviation sigma and
    lag-one correlation c.  The total delay is clipped at 0.
    """

    def __init__(self, sigma: float, correlation: float = 0.0) -> None:
        _check(sigma >= 0, f"jitter sigma must be >= 0, got {sigma}")
        _check(0 <= correlation < 1, f"jitter correlation must be in [0, 1), got {correlation}")
        self.sigma, self.correlation = float(sigma), float(correlation)
        self._last = 0.0

    def sample(self, draws: KeyedDraws, round: int, index: int) -> float:
        z = draws.normal(round, index, "jitter")
        c = self.correlation
        self._last = c * self._last + math.sqrt(1 - c * c) * self.sigma * z
        return self._last


# ---------------------------------------------------------------- loss


class Loss:
    def lost(self, draws: KeyedDraws, round: int, index: int) -> bool:
        raise NotImplementedError


class Bernoulli(Loss):
    """Independent loss with probability `p`."""

    def __init__(self, p: float) -> None:
        _check(0 <= p <= 1, f"loss probability must be in [0, 1], got {p}")
        self.p = float(p)

    def lost(self, draws, round, index):
        return draws.uniform(round, index, "loss") < self.p


class GilbertElliott(Loss):
    """Bursty loss: a two-state Markov chain (good/bad) advanced once per message.

    `p_gb`: P(good -> bad), `p_bg`: P(bad -> good); the mean stay in the bad state
    (the mean burst length when `loss_bad` = 1) is 1/p_bg messages, in the good state 1/p_gb.
    """

    def __init__(self, p_gb: float, p_bg: float, loss_good: float = 0.0, loss_bad: float = 1.0) -> None:
        for name, v in (("p_gb", p_gb), ("p_bg", p_bg), ("loss_good", loss_good), ("loss_bad", loss_bad)):
            _check(0 <= v <= 1, f"Gilbert-Elliott {name} must be in [0, 1], got {v}")
        _check(p_bg > 0, "Gilbert-Elliott p_bg must be > 0 (else the bad state never ends)")
        self.p_gb, self.p_bg, self.loss_good, self.loss_bad = map(float, (p_gb, p_bg, loss_good, loss_bad))
        self.bad = False

    def lost(self, draws, round, index):
        flip = draws.uniform(round, index, "state") < (self.p_bg if self.bad else self.p_gb)
        self.bad = self.bad != flip
        return draws.uniform(round, index, "loss") < (self.loss_bad if self.bad else self.loss_good)


# ---------------------------------------------------------------- keys


class RoundCounter:
    """Per-round sequence numbers that never repeat: the `index` of a (round, index) key.

    `next(round)` returns 0, 1, 2, ... for each round separately, whatever the order of
    rounds (sends in rounds 1, 2, 1, 1, 2 get 0, 0, 1, 2, 1), so two messages (or two
    computes) never share a key and so never share a fate or a trace entry.

    Memory is bounded: counters are kept for the `window` highest rounds seen.  When a
    round falls out of the window its counter is forgotten, and every later use of a
    round below those kept gets a negative index -1, -2, ... from one counter of its own:
    still unique, but no longer aligned with what another algorithm drew for that
    (round, index).  Only code that revisits a round after `window` newer rounds meets
    such keys; the shipped algorithms send their rounds in order.
    """

    __slots__ = ("_counts", "_late", "window")

    def __init__(self, window: int = 64) -> None:
        _check(window >= 1, f"the round window must be >= 1, got {window}")
        self.window = window
        self._counts: dict[int, int] = {}
        self._late = 0  # negative indices handed out for rounds below the window

    def next(self, round: int) -> int:
        counts = self._counts
        index = counts.get(round)
        if index is None:
            index = 0
            if len(counts) >= self.window:  # once full, always full: forgotten rounds < kept rounds
                oldest = min(counts)
                if round < oldest:
                    self._late += 1
                    return -self._late
                del counts[oldest]
        counts[round] = index + 1
        return index


# ---------------------------------------------------------------- link


class Link:
    """One directed link: composed impairments plus a FIFO transmission queue.

    `bandwidth` is in bits/s (None = infinite).  A message occupies the link for
    its encoded size × 8 / bandwidth seconds; messages queue in FIFO order behind
    the previous one (`busy_until`), which is what a capacity-1 SimPy resource
    computes, at O(1) cost per message.  `outages` are [start, end) windows in which
    whatever is sent is dropped with reason ``outage``.
    """

    def __init__(
        self,
        latency: Latency | None = None,
        *,
        jitter: Jitter | None = None,
        loss: Loss | None = None,
        bandwidth: float | None = None,
        outages: Sequence[tuple[float, float]] = (),
        link_class: str = "link",
    ) -> None:
        _check(bandwidth is None or bandwidth > 0, f"bandwidth must be > 0 bits/s, got {bandwidth}")
        self.latency = latency if latency is not None else Constant(0.0)
        self.jitter, self.loss, self.bandwidth, self.link_class = jitter, loss, bandwidth, link_class
        self._outages: list[tuple[float, float]] = []
        for start, end in outages:
            self.add_outage(start, end)
        self.busy_until = 0.0
        self._indices = RoundCounter()

    @property
    def random(self) -> bool:
        """Whether this link draws any random numbers."""
        return self.loss is not None or self.jitter is not None or not isinstance(self.latency, Constant)

    @property
    def outages(self) -> tuple[tuple[float, float], ...]:
        return tuple(self._outages)

    def add_outage(self, start: float, end: float) -> None:
        _check(0 <= start < end, f"an outage needs 0 <= start < end, got [{start}, {end})")
        bisect.insort(self._outages, (float(start), float(end)))

    def is_down(self, t: float) -> bool:
        return bool(self._outages) and any(start <= t < end for start, end in self._outages)

    def next_index(self, round: int) -> int:
        """Index of the next message of `round` on this link (0, 1, ... within each round,
        whatever order rounds are sent in; see `RoundCounter`)."""
        return self._indices.next(round)

    def draw_fate(self, draws: KeyedDraws, round: int, index: int) -> tuple[str | None, float]:
        """(drop reason or None, propagation delay) of message `index` in `round`."""
        lost = self.loss is not None and self.loss.lost(draws, round, index)
        delay = self.latency.sample(draws, round, index)
        if self.jitter is not None:
            delay = max(0.0, delay + self.jitter.sample(draws, round, index))
        if lost:
            return "loss", delay
        if delay > self.latency.max_delay:
            return "expired", delay
        return None, delay

    def transmission_time(self, nbytes: int) -> float:
        return 0.0 if self.bandwidth is None else nbytes * 8.0 / self.bandwidth
