"""Link impairments: the latency, jitter and loss components a `Link` composes.

Every random draw is a keyed uniform addressed by (round, index, component), so a
message's fate depends only on where it stands in the traffic of its link, never on
what other links or actors did.  Stateful components (Gilbert–Elliott, correlated
jitter) evolve in the order messages are sent on their link; a link shares its class's
components until it needs its own (netemu.net.links), and copies them in a microsecond.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from netemu.rng import KeyedDraws

__all__ = [
    "Bernoulli", "Constant", "Empirical", "Exponential", "GilbertElliott", "Jitter", "Latency", "LogNormal", "Loss",
    "RoundDelay", "Uniform",
]


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise ValueError(what)


_SLOTS: dict[type, tuple[str, ...]] = {}


def _copy_component(obj: object) -> object:
    """`copy.copy` of a link component, in a microsecond rather than copy's seven: every
    link of a class copies the shared stateful ones (two million links at a million clients)."""
    cls = type(obj)
    names = _SLOTS.get(cls)
    if names is None:
        names = _SLOTS[cls] = tuple(n for c in cls.__mro__ for n in c.__dict__.get("__slots__", ()))
    new = cls.__new__(cls)
    for name in names:
        if hasattr(obj, name):
            setattr(new, name, getattr(obj, name))
    if hasattr(obj, "__dict__"):
        new.__dict__.update(obj.__dict__)
    return new


# ---------------------------------------------------------------- latency


class Latency:
    """Propagation delay in seconds.  `max_delay`: a longer delay expires the message."""

    __slots__ = ()
    max_delay: float = math.inf
    stateful = False  # True: the component changes as it draws (then each link needs its own)
    __copy__ = _copy_component

    def sample(self, draws: KeyedDraws, round: int, index: int) -> float:
        raise NotImplementedError


class Constant(Latency):
    __slots__ = ("delay",)

    def __init__(self, delay: float = 0.0) -> None:
        _check(delay >= 0, f"constant delay must be >= 0, got {delay}")
        self.delay = float(delay)

    def sample(self, draws, round, index):
        return self.delay


class Uniform(Latency):
    __slots__ = ("low", "high")

    def __init__(self, low: float, high: float) -> None:
        _check(0 <= low <= high, f"uniform delay needs 0 <= low <= high, got low={low}, high={high}")
        self.low, self.high = float(low), float(high)

    def sample(self, draws, round, index):
        return self.low + (self.high - self.low) * draws.uniform(round, index, "latency")


class Exponential(Latency):
    """`base` + Exp(mean)."""

    __slots__ = ("mean", "base")

    def __init__(self, mean: float, base: float = 0.0) -> None:
        _check(mean > 0 and base >= 0, f"exponential delay needs mean > 0 and base >= 0, got mean={mean}, base={base}")
        self.mean, self.base = float(mean), float(base)

    def sample(self, draws, round, index):
        return self.base + draws.exponential(self.mean, round, index, "latency")


class LogNormal(Latency):
    """exp(mu + sigma·Z): `mu`, `sigma` are the mean and deviation of the log-delay."""

    __slots__ = ("mu", "sigma")

    def __init__(self, mu: float, sigma: float) -> None:
        _check(sigma >= 0, f"log-normal sigma must be >= 0, got {sigma}")
        # a standard normal from a 53-bit uniform stays within |Z| < 9: the delay must stay a finite float
        _check(mu + 9 * sigma < 709, f"log-normal delay exp(mu + sigma·Z) overflows: needs mu + 9·sigma < 709, got mu={mu}, sigma={sigma}")
        self.mu, self.sigma = float(mu), float(sigma)

    def sample(self, draws, round, index):
        return math.exp(self.mu + self.sigma * draws.normal(round, index, "latency"))


class Empirical(Latency):
    """A delay drawn uniformly from measured samples."""

    __slots__ = ("samples",)

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

    __slots__ = ("delta", "l_max", "round_time", "base", "max_delay")

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

    __slots__ = ("sigma", "correlation", "_last")
    stateful = True
    __copy__ = _copy_component

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
    __slots__ = ()
    stateful = False  # True: the component changes as it draws (then each link needs its own)
    __copy__ = _copy_component

    def lost(self, draws: KeyedDraws, round: int, index: int) -> bool:
        raise NotImplementedError


class Bernoulli(Loss):
    """Independent loss with probability `p`."""

    __slots__ = ("p",)

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

    __slots__ = ("p_gb", "p_bg", "loss_good", "loss_bad", "bad")
    stateful = True

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
