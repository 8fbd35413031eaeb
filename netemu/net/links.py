"""Link models: latency, jitter, loss, bandwidth and outages of one directed link.

Every random draw is a keyed uniform addressed by (round, index, component), so a
message's fate depends only on where it stands in the traffic of its link, never on
what other links or actors did.  Each component is a small class; a `Link` composes
them.  Stateful components (Gilbert–Elliott, correlated jitter) evolve in the order
messages are sent on their link.

Memory: a world of a million clients has two million links, so a link holds little —
slots, no dict; the components of a link class may be shared by all its links
(`Link(..., shared=True)`; a link copies a stateful one before its first draw, any one
when a script reads it); its round counter and outage list exist once it needs them.
"""

from __future__ import annotations

import bisect
import copy
import math
from array import array
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

    The counter of the round used last is kept in two slots, the others in two compact
    integer arrays created when a second round is seen: a link that carried one round
    costs no allocation beyond the object itself (a million-client world has two million).
    """

    __slots__ = ("_count", "_counts", "_late", "_round", "_rounds", "window")

    def __init__(self, window: int = 64) -> None:
        _check(window >= 1, f"the round window must be >= 1, got {window}")
        self.window = window
        self._round: int | None = None  # the round used last (None: no round yet) ...
        self._count = 0  # ... and how many indices it has handed out
        self._rounds: array | None = None  # the other kept rounds ...
        self._counts: array | None = None  # ... and their counts, in parallel
        self._late = 0  # negative indices handed out for rounds below the window

    def __len__(self) -> int:
        """How many rounds' counters are kept (at most `window`)."""
        return (self._round is not None) + (len(self._rounds) if self._rounds is not None else 0)

    def next(self, round: int) -> int:
        if round == self._round:
            index = self._count
            self._count = index + 1
            return index
        return self._switch(round)

    def _switch(self, round: int) -> int:
        """`next(round)` for a round other than the last one used.

        The kept rounds are in ascending order, so finding a round is a bisection and the
        oldest is the first; rounds sent in order (the usual case: one message per link
        and round) append at the end and are never found, without a scan."""
        rounds, counts = self._rounds, self._counts
        if self._round is not None:  # park the last round's counter with the others
            if rounds is None or counts is None:
                rounds = self._rounds = array("q")
                counts = self._counts = array("q")
            last = self._round
            if not rounds or last > rounds[-1]:
                rounds.append(last)
                counts.append(self._count)
            else:
                i = bisect.bisect_left(rounds, last)
                rounds.insert(i, last)
                counts.insert(i, self._count)
            self._round = None
        if rounds:
            assert counts is not None
            if round <= rounds[-1]:
                i = bisect.bisect_left(rounds, round)
                if rounds[i] == round:
                    index = counts[i]
                    del rounds[i], counts[i]
                    self._round, self._count = round, index + 1
                    return index
            if len(rounds) >= self.window:  # once full, always full: forgotten rounds < kept rounds
                if round < rounds[0]:
                    self._late += 1
                    return -self._late
                del rounds[0], counts[0]
        self._round, self._count = round, 1
        return 0


# ---------------------------------------------------------------- link


class Link:
    """One directed link: composed impairments plus a FIFO transmission queue.

    `bandwidth` is in bits/s (None = infinite).  A message occupies the link for
    its encoded size × 8 / bandwidth seconds; messages queue in FIFO order behind
    the previous one (`busy_until`), which is what a capacity-1 SimPy resource
    computes, at O(1) cost per message.  `outages` are [start, end) windows in which
    whatever is sent is dropped with reason ``outage``.

    `shared=True`: the components may also be given to other links (a scenario gives
    every link of a class the same ones).  The link then copies a stateful component
    (Gilbert–Elliott, jitter) before it first draws from it, and every component the
    first time `latency`, `jitter` or `loss` is read, so changing one link never
    changes another and each link's state evolves with its own traffic only.
    """

    __slots__ = (
        "_count", "_indices", "_jitter", "_latency", "_loss", "_outages", "_round", "_shared", "bandwidth", "busy_until",
        "link_class",
    )

    def __init__(
        self,
        latency: Latency | None = None,
        *,
        jitter: Jitter | None = None,
        loss: Loss | None = None,
        bandwidth: float | None = None,
        outages: Sequence[tuple[float, float]] = (),
        link_class: str = "link",
        shared: bool = False,
    ) -> None:
        _check(bandwidth is None or bandwidth > 0, f"bandwidth must be > 0 bits/s, got {bandwidth}")
        self._latency = latency if latency is not None else _NO_DELAY
        self._jitter, self._loss, self.bandwidth, self.link_class = jitter, loss, bandwidth, link_class
        # 0: the components are the link's own; 1: shared; 2: stateful ones copied, the others shared
        self._shared = 1 if shared else 0
        self._outages: list[tuple[float, float]] | None = None
        for start, end in outages:
            self.add_outage(start, end)
        self.busy_until = 0.0
        # the message indices: the last round's counter here, the others' in a RoundCounter made
        # when a second round is seen (a link that carried one round allocates nothing for them)
        self._round: int | None = None
        self._count = 0
        self._indices: RoundCounter | None = None

    # the components; reading one gives the link its own copy (see the class docstring)

    @property
    def latency(self) -> Latency:
        self._own_all()
        if self._latency is _NO_DELAY:
            self._latency = Constant(0.0)
        return self._latency

    @latency.setter
    def latency(self, value: Latency) -> None:
        self._own_all()
        self._latency = value

    @property
    def jitter(self) -> Jitter | None:
        self._own_all()
        return self._jitter

    @jitter.setter
    def jitter(self, value: Jitter | None) -> None:
        self._own_all()
        self._jitter = value

    @property
    def loss(self) -> Loss | None:
        self._own_all()
        return self._loss

    @loss.setter
    def loss(self, value: Loss | None) -> None:
        self._own_all()
        self._loss = value

    def _own_all(self) -> None:
        if self._shared:
            every = self._shared == 1  # 2: the stateful ones are already this link's own
            if every or not self._latency.stateful:
                self._latency = copy.copy(self._latency)
            if self._jitter is not None and (every or not self._jitter.stateful):
                self._jitter = copy.copy(self._jitter)
            if self._loss is not None and (every or not self._loss.stateful):
                self._loss = copy.copy(self._loss)
            self._shared = 0

    def _own_stateful(self) -> None:
        """Copy the shared components that change as they draw (before the first draw)."""
        if self._latency.stateful:
            self._latency = copy.copy(self._latency)
        if self._jitter is not None and self._jitter.stateful:
            self._jitter = copy.copy(self._jitter)
        if self._loss is not None and self._loss.stateful:
            self._loss = copy.copy(self._loss)
        self._shared = 2

    @property
    def random(self) -> bool:
        """Whether this link draws any random numbers."""
        return self._loss is not None or self._jitter is not None or not isinstance(self._latency, Constant)

    @property
    def max_delay(self) -> float:
        """The longest delay the latency model allows (longer: the message expires)."""
        return self._latency.max_delay

    @property
    def outages(self) -> tuple[tuple[float, float], ...]:
        return tuple(self._outages) if self._outages else ()

    def add_outage(self, start: float, end: float) -> None:
        _check(0 <= start < end, f"an outage needs 0 <= start < end, got [{start}, {end})")
        if self._outages is None:
            self._outages = []
        bisect.insort(self._outages, (float(start), float(end)))

    def is_down(self, t: float) -> bool:
        return bool(self._outages) and any(start <= t < end for start, end in self._outages or ())

    def next_index(self, round: int) -> int:
        """Index of the next message of `round` on this link (0, 1, ... within each round,
        whatever order rounds are sent in; see `RoundCounter`)."""
        if round == self._round:
            index = self._count
            self._count = index + 1
            return index
        indices = self._indices
        if indices is None:
            if self._round is None:
                self._round, self._count = round, 1
                return 0
            indices = self._indices = RoundCounter()
        indices._round, indices._count = self._round, self._count  # noqa: SLF001 - the counter this link keeps in its slots
        index = indices.next(round)
        self._round, self._count = indices._round, indices._count  # noqa: SLF001
        return index

    def draw_fate(self, draws: KeyedDraws, round: int, index: int) -> tuple[str | None, float]:
        """(drop reason or None, propagation delay) of message `index` in `round`."""
        if self._shared == 1:
            self._own_stateful()
        loss, latency, jitter = self._loss, self._latency, self._jitter
        lost = loss is not None and loss.lost(draws, round, index)
        delay = latency.sample(draws, round, index)
        if jitter is not None:
            delay = max(0.0, delay + jitter.sample(draws, round, index))
        if lost:
            return "loss", delay
        if delay > latency.max_delay:
            return "expired", delay
        return None, delay

    def transmission_time(self, nbytes: int) -> float:
        return 0.0 if self.bandwidth is None else nbytes * 8.0 / self.bandwidth


_NO_DELAY = Constant(0.0)  # the default latency, shared (a link replaces it before a script may change it)
