"""Link impairments: the latency, jitter and loss components a `Link` composes.

Every random draw is a keyed uniform addressed by (round, index, component), so a
message's fate depends only on where it stands in the traffic of its link, never on
what other links or actors did.  Stateful components (Gilbert–Elliott, correlated
jitter) evolve in the order messages are sent on their link; a link shares its class's
components until it needs its own (netemu.engine.net.links), and copies them in a microsecond.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from netemu.engine.rng import KeyedDraws

__all__ = [
    "NETEM_DIST_SCALE", "Bernoulli", "Constant", "Empirical", "Exponential", "GilbertElliott", "Jitter", "Latency", "LogNormal",
    "Loss", "NetemNormal", "NetemPareto", "NetemParetoNormal", "RoundDelay", "Uniform", "netem_table",
]


def _check(cond: bool, what: str, *values: object) -> None:
    """A ValueError saying `what`, its ``{}`` filled with `values`, unless `cond`: the message is
    formatted only when raised (a million-client world checks two million links' settings)."""
    if not cond:
        raise ValueError(what.format(*values) if values else what)


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


def read_numbers(path: str | Path, what: str) -> list[float]:
    """The numbers of a file, one per line (blank lines and `#` comments ignored); a line that
    is not a number is a ValueError naming the file, the line and `what` was expected."""
    values = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            try:
                values.append(float(line))
            except ValueError:
                raise ValueError(f"{path}:{n}: expected {what}, got {line[:40]!r}") from None
    return values


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
        _check(delay >= 0, "constant delay must be >= 0, got {}", delay)
        self.delay = float(delay)

    def sample(self, draws, round, index):
        return self.delay


class Uniform(Latency):
    __slots__ = ("low", "high")

    def __init__(self, low: float, high: float) -> None:
        _check(0 <= low <= high, "uniform delay needs 0 <= low <= high, got low={}, high={}", low, high)
        self.low, self.high = float(low), float(high)

    def sample(self, draws, round, index):
        return self.low + (self.high - self.low) * draws.uniform(round, index, "latency")


class Exponential(Latency):
    """`base` + Exp(mean)."""

    __slots__ = ("mean", "base")

    def __init__(self, mean: float, base: float = 0.0) -> None:
        _check(mean > 0 and base >= 0, "exponential delay needs mean > 0 and base >= 0, got mean={}, base={}", mean, base)
        self.mean, self.base = float(mean), float(base)

    def sample(self, draws, round, index):
        return self.base + draws.exponential(self.mean, round, index, "latency")


class LogNormal(Latency):
    """exp(mu + sigma·Z): `mu`, `sigma` are the mean and deviation of the log-delay."""

    __slots__ = ("mu", "sigma")

    def __init__(self, mu: float, sigma: float) -> None:
        _check(sigma >= 0, "log-normal sigma must be >= 0, got {}", sigma)
        # a standard normal from a 53-bit uniform stays within |Z| < 9: the delay must stay a finite float
        _check(mu + 9 * sigma < 709, "log-normal delay exp(mu + sigma·Z) overflows: needs mu + 9·sigma < 709, got mu={}, sigma={}", mu, sigma)
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
        return cls(read_numbers(path, "a delay in seconds"))

    def sample(self, draws, round, index):
        u = draws.uniform(round, index, "latency")
        return float(self.samples[min(int(u * self.samples.size), self.samples.size - 1)])


class RoundDelay(Latency):
    """Delay of L whole rounds with P(L >= l) = delta**l (PAO-Fed, thesis §4.4.1).

    L = floor(ln U / ln delta).  Messages delayed more than `l_max` rounds expire.
    """

    __slots__ = ("delta", "l_max", "round_time", "base", "max_delay")

    def __init__(self, delta: float, l_max: int, round_time: float = 1.0, base: float = 0.0) -> None:
        _check(0 <= delta < 1, "round delay probability delta must be in [0, 1), got {}", delta)
        _check(l_max >= 0 and round_time > 0 and base >= 0, "round delay needs l_max >= 0, round_time > 0, base >= 0")
        self.delta, self.l_max, self.round_time, self.base = float(delta), int(l_max), float(round_time), float(base)
        self.max_delay = self.base + self.l_max * self.round_time

    def rounds(self, u: float) -> int:
        return 0 if self.delta == 0 else int(math.floor(math.log(u) / math.log(self.delta)))

    def sample(self, draws, round, index):
        return self.base + self.rounds(draws.open_uniform(round, index, "latency")) * self.round_time


# ---------------------------------------------------------------- netem's latency tables
#
# Linux's tc-netem draws `delay mu sigma distribution NAME` as tabledist() does in the kernel's
# net/sched/sch_netem.c:  t = table[rnd % size];  delay = mu + sigma * t / NETEM_DIST_SCALE
# (rounded to the clock's unit; a negative delay makes a packet due in the past, sent at once).
# The tables are iproute2's netem/normal.c, netem/pareto.c and netem/paretonormal.c (from NIST
# Net): 4096 signed 16-bit entries, each an inverse-CDF value scaled by NETEM_DIST_SCALE.  They
# are generated here, once per process on first use, by the same arithmetic as those programs,
# rather than copied from the .dist files tc installs.

NETEM_DIST_SCALE = 8192  # include/uapi/linux/pkt_sched.h
_TABLESIZE = 16384  # TABLESIZE of normal.c and paretonormal.c (every 4th entry is printed)
_PARETO_A = 3.0  # pareto.c's shape `a`


def _short(values: np.ndarray) -> np.ndarray:
    """The entries as tc stores them: clamped to [SHRT_MIN, SHRT_MAX] (a __s16 each)."""
    return np.clip(values, -32768, 32767).astype(np.int16)


def _normal_quantiles() -> np.ndarray:
    """normal.c's `table[TABLESIZE + 1]`: for each i, the last x of the grid -10, -10 + .00005, ...
    (< 10.05, summed step by step as the C loop does) with rint(TABLESIZE * Phi(x)) == i, i.e.
    Phi^-1((i + 1/2) / TABLESIZE) to within the grid step.  Phi is .5 + .5 erf(x / sqrt 2)
    (SciPy's erf: equal to glibc's to an ulp, which moves no index of the table)."""
    from scipy.special import erf

    steps = np.full(401_010, 0.00005)
    steps[0] = -10.0
    x = np.add.accumulate(steps)  # sequential: the same doubles as `x += .00005`
    x = x[x < 10.05]
    i = np.rint(_TABLESIZE * (0.5 + 0.5 * erf(x / math.sqrt(2.0)))).astype(np.int64)
    last = np.searchsorted(i, np.arange(_TABLESIZE + 1), side="right") - 1  # i rises with x: the last x wins
    return x[last]


def _pareto_values(i: np.ndarray) -> np.ndarray:
    """pareto.c (and paretovalue() of paretonormal.c) for i/65536 = 1 - u: the inverse CDF of a
    Pareto(a = 3, x_m = 1), (1 - u)^(-1/a), less its mean 1.5, times 4/3 and the scale; capped at
    32767, rounded to the nearest integer."""
    d = 1.0 / np.power(i / 65536.0, 1.0 / _PARETO_A)
    d = (d - 1.5) * ((4.0 / 3.0) * NETEM_DIST_SCALE)
    return np.rint(np.minimum(d, 32767.0)).astype(np.int64)


@functools.cache
def netem_table(distribution: str) -> np.ndarray:
    """tc-netem's delay table `distribution` ("normal", "pareto" or "paretonormal"): 4096 int16
    entries in ascending order, as iproute2 generates them (see the comment above)."""
    if distribution == "pareto":  # for (i = 65536; i > 0; i -= 16)
        return _short(_pareto_values(np.arange(65536, 0, -16)))
    if distribution not in ("normal", "paretonormal"):
        raise ValueError(f"no netem table {distribution!r}: normal, pareto or paretonormal")
    i = np.arange(0, _TABLESIZE, 4)
    normal = np.rint(_normal_quantiles()[i] * NETEM_DIST_SCALE).astype(np.int64)
    if distribution == "normal":
        return _short(normal)
    # paretonormal.c: (normvalue + 3 * parvalue) / 4 in C integers (the quotient truncated toward 0):
    # a quarter normal and three quarters pareto, paired quantile by quantile
    total = normal + 3 * _pareto_values(65536 - 4 * i)
    return _short(np.sign(total) * (np.abs(total) // 4))


class _NetemTable(Latency):
    """`mean` + `jitter` * t / NETEM_DIST_SCALE, t drawn uniformly from netem's table (tabledist()
    of sch_netem.c, without its rounding to whole nanoseconds), clamped at 0 as netem sends a
    packet whose time has passed at once.  `mean` and `jitter` are seconds: tc's `delay MEAN
    JITTER distribution NAME`.  Delay correlation (tc's third number) is not modelled."""

    __slots__ = ("mean", "jitter", "_table")
    distribution = ""

    def __init__(self, mean: float, jitter: float) -> None:
        _check(mean >= 0 and jitter >= 0, "{} delay needs mean >= 0 and jitter >= 0 (seconds), got mean={}, jitter={}", self.distribution, mean, jitter)
        self.mean, self.jitter = float(mean), float(jitter)
        self._table = _scaled(self.distribution)

    def sample(self, draws, round, index):
        if self.jitter == 0:  # tabledist(): sigma == 0 returns mu
            return self.mean
        table = self._table
        u = draws.uniform(round, index, "latency")  # rnd % size, with rnd a uniform 32-bit word
        return max(0.0, self.mean + self.jitter * table[min(int(u * len(table)), len(table) - 1)])


@functools.cache
def _scaled(distribution: str) -> list[float]:
    """The table as floats t / NETEM_DIST_SCALE (a list: one item read per draw)."""
    return (netem_table(distribution).astype(float) / NETEM_DIST_SCALE).tolist()


class NetemNormal(_NetemTable):
    """tc-netem's `distribution normal` (iproute2 netem/normal.c): the normal inverse CDF
    tabulated at (j + 1/8) / 4096, j = 0 … 4095, cut at -4 and +3.52 (the table's mean is
    -0.0008 and its deviation 1.00005, in units of `jitter`)."""

    __slots__ = ()
    distribution = "normal"


class NetemPareto(_NetemTable):
    """tc-netem's `distribution pareto` (iproute2 netem/pareto.c): a Pareto of shape 3 shifted
    to mean 0 and scaled by 4/3, tabulated at u = 1 - j/4096 and capped at 4 (32767 /
    NETEM_DIST_SCALE).  The cap makes netem's table narrower than `jitter`: mean -0.033,
    deviation 0.82, floor -2/3 (in units of `jitter`)."""

    __slots__ = ()
    distribution = "pareto"


class NetemParetoNormal(_NetemTable):
    """tc-netem's `distribution paretonormal` (iproute2 netem/paretonormal.c): quantile by
    quantile, 1/4 of the normal table plus 3/4 of the pareto one (NIST Net's fit to measured
    delays): mean -0.025, deviation 0.83, skewed right; 1.6 % of its draws exceed 3·`jitter`
    above the mean, against 0.12 % of the normal's."""

    __slots__ = ()
    distribution = "paretonormal"


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
        _check(sigma >= 0, "jitter sigma must be >= 0, got {}", sigma)
        _check(0 <= correlation < 1, "jitter correlation must be in [0, 1), got {}", correlation)
        self.sigma, self.correlation = float(sigma), float(correlation)
        self._last = 0.0

    def sample(self, draws: KeyedDraws, round: int, index: int) -> float:
        z = draws.normal(round, index, "jitter")
        c = self.correlation
        self._last = c * self._last + math.sqrt(1 - c * c) * self.sigma * z
        return self._last


# ---------------------------------------------------------------- loss


class Loss:
    """Whether a message is lost: `lost` for a whole message (the datagram transport).

    `packet_loss` is the loss rate per packet when the model's losses are per packet (the
    reliable transport then draws `lost_any` for a message of several segments and answers
    with TCP's loss response, netemu.engine.net.tcp), or None when a loss takes the whole
    message (Gilbert-Elliott's bursts, and a plug-in's model unless it says otherwise)."""

    __slots__ = ()
    stateful = False  # True: the component changes as it draws (then each link needs its own)
    __copy__ = _copy_component
    packet_loss: float | None = None

    def lost(self, draws: KeyedDraws, round: int, index: int) -> bool:
        raise NotImplementedError

    def lost_any(self, draws: KeyedDraws, round: int, index: int, segments: int) -> bool:
        """Whether a message of `segments` packets loses at least one (the whole message, unless
        the losses are per packet)."""
        return self.lost(draws, round, index)


class Bernoulli(Loss):
    """Independent loss with probability `p`: of a message (datagram), of each packet (reliable)."""

    __slots__ = ("p",)

    def __init__(self, p: float) -> None:
        _check(0 <= p <= 1, "loss probability must be in [0, 1], got {}", p)
        self.p = float(p)

    @property
    def packet_loss(self) -> float:  # type: ignore[override]
        return self.p

    def lost(self, draws, round, index):
        return draws.uniform(round, index, "loss") < self.p

    def lost_any(self, draws, round, index, segments):
        """1 - (1 - p)^segments, from the uniform `lost` draws: one segment is `lost` exactly."""
        if segments == 1 or self.p >= 1:
            return self.lost(draws, round, index)
        return draws.uniform(round, index, "loss") < -math.expm1(segments * math.log1p(-self.p))


class GilbertElliott(Loss):
    """Bursty loss: a two-state Markov chain (good/bad) advanced once per message.

    `p_gb`: P(good -> bad), `p_bg`: P(bad -> good); the mean stay in the bad state
    (the mean burst length when `loss_bad` = 1) is 1/p_bg messages, in the good state 1/p_gb.
    """

    __slots__ = ("p_gb", "p_bg", "loss_good", "loss_bad", "bad")
    stateful = True

    def __init__(self, p_gb: float, p_bg: float, loss_good: float = 0.0, loss_bad: float = 1.0) -> None:
        for name, v in (("p_gb", p_gb), ("p_bg", p_bg), ("loss_good", loss_good), ("loss_bad", loss_bad)):
            _check(0 <= v <= 1, "Gilbert-Elliott {} must be in [0, 1], got {}", name, v)
        _check(p_bg > 0, "Gilbert-Elliott p_bg must be > 0 (else the bad state never ends)")
        self.p_gb, self.p_bg, self.loss_good, self.loss_bad = map(float, (p_gb, p_bg, loss_good, loss_bad))
        self.bad = False

    def lost(self, draws, round, index):
        flip = draws.uniform(round, index, "state") < (self.p_bg if self.bad else self.p_gb)
        self.bad = self.bad != flip
        return draws.uniform(round, index, "loss") < (self.loss_bad if self.bad else self.loss_good)
