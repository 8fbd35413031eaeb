"""Link models: each distribution matches its parameters (fixed seeds, 5-sigma bounds)."""

import math

import numpy as np
import pytest

from netemu.engine.net import Bernoulli, Constant, Empirical, Exponential, GilbertElliott, Jitter, Link, LogNormal, RoundDelay, Uniform
from netemu.engine.rng import Streams

N = 20000


def delays(latency, n=N, seed=11):
    draws = Streams(seed).keyed("link/a->b")
    return np.array([latency.sample(draws, i // 10, i % 10) for i in range(n)])


def test_constant_delay_is_constant():
    assert set(delays(Constant(0.25), 100)) == {0.25}


def test_uniform_delay_has_the_uniform_mean_and_variance():
    d = delays(Uniform(1.0, 3.0))
    assert abs(d.mean() - 2.0) < 5 * math.sqrt(1 / 3 / N)
    assert abs(d.var() - 1 / 3) < 0.02
    assert d.min() >= 1.0 and d.max() <= 3.0


def test_exponential_delay_has_its_mean_above_its_base():
    d = delays(Exponential(mean=0.5, base=0.1))
    assert d.min() >= 0.1
    assert abs(d.mean() - 0.6) < 5 * 0.5 / math.sqrt(N)
    assert abs(d.std() - 0.5) < 0.02


def test_lognormal_delay_has_the_given_log_mean_and_deviation():
    logs = np.log(delays(LogNormal(mu=-1.0, sigma=0.5)))
    assert abs(logs.mean() + 1.0) < 5 * 0.5 / math.sqrt(N)
    assert abs(logs.std() - 0.5) < 0.015


def test_empirical_delay_draws_each_sample_equally_often(tmp_path):
    f = tmp_path / "rtt.txt"
    f.write_text("# measured\n0.1\n0.2\n\n0.4\n")
    d = delays(Empirical.from_file(f))
    values, counts = np.unique(d, return_counts=True)
    assert list(values) == [0.1, 0.2, 0.4]
    assert np.all(np.abs(counts / N - 1 / 3) < 5 * math.sqrt(2 / 9 / N))


def test_empirical_file_with_a_bad_line_names_the_file_and_line(tmp_path):
    f = tmp_path / "rtt.txt"
    f.write_text("0.1\nfast\n")
    with pytest.raises(ValueError, match=r"rtt.txt:2: expected a delay in seconds, got 'fast'"):
        Empirical.from_file(f)


def test_round_delay_is_at_least_l_rounds_with_probability_delta_to_the_l():
    model = RoundDelay(delta=0.2, l_max=10, round_time=2.0)
    rounds = delays(model) / 2.0
    assert np.all(rounds == np.round(rounds))
    for l in range(1, 4):
        p = 0.2**l
        assert abs((rounds >= l).mean() - p) < 5 * math.sqrt(p * (1 - p) / N)
    assert model.max_delay == 20.0


def test_round_delays_beyond_l_max_expire():
    link = Link(RoundDelay(delta=0.8, l_max=2))
    draws = Streams(2).keyed("link/a->b")
    fates = [link.draw_fate(draws, 0, i) for i in range(N)]
    expired = np.mean([reason == "expired" for reason, _ in fates])
    assert abs(expired - 0.8**3) < 5 * math.sqrt(0.512 * 0.488 / N)
    assert all(delay > 2 for reason, delay in fates if reason == "expired")


def test_jitter_has_its_deviation_and_lag_one_correlation():
    jitter = Jitter(sigma=0.3, correlation=0.7)
    draws = Streams(4).keyed("link/a->b")
    j = np.array([jitter.sample(draws, 0, i) for i in range(N)])
    assert abs(j.std() - 0.3) < 0.02
    assert abs(np.corrcoef(j[:-1], j[1:])[0, 1] - 0.7) < 0.03


def test_bernoulli_loss_rate():
    loss = Bernoulli(0.1)
    draws = Streams(5).keyed("link/a->b")
    rate = np.mean([loss.lost(draws, 0, i) for i in range(N)])
    assert abs(rate - 0.1) < 5 * math.sqrt(0.09 / N)


def burst_lengths(lost):
    runs, current = [], 0
    for x in lost:
        if x:
            current += 1
        elif current:
            runs.append(current)
            current = 0
    return np.array(runs)


def test_gilbert_elliott_loss_comes_in_bursts_of_the_configured_mean_length():
    ge = GilbertElliott(p_gb=0.02, p_bg=0.25)  # mean burst 4 messages, mean gap 50
    draws = Streams(6).keyed("link/a->b")
    lost = [ge.lost(draws, i // 100, i % 100) for i in range(100000)]
    bursts = burst_lengths(lost)
    assert abs(bursts.mean() - 4.0) < 0.3
    assert abs(np.mean(lost) - 0.02 / (0.02 + 0.25)) < 0.01
    memoryless = Bernoulli(float(np.mean(lost)))
    independent = burst_lengths([memoryless.lost(draws, 0, i) for i in range(100000)])
    assert independent.mean() < 1.2  # the same loss rate without memory gives no bursts


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Constant(-1), "constant delay must be >= 0"),
        (lambda: Uniform(2, 1), "low <= high"),
        (lambda: Bernoulli(1.5), r"loss probability must be in \[0, 1\]"),
        (lambda: RoundDelay(1.0, 3), r"delta must be in \[0, 1\)"),
        (lambda: Link(bandwidth=0), "bandwidth must be > 0"),
        (lambda: Link(outages=[(5, 2)]), "outage needs 0 <= start < end"),
        (lambda: Jitter(0.1, correlation=1.0), r"correlation must be in \[0, 1\)"),
    ],
)
def test_bad_link_parameters_are_refused_with_what_is_accepted(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_log_normal_delay_that_would_overflow_a_float_is_refused():
    from statistics import NormalDist

    assert abs(NormalDist().inv_cdf(2.0**-53)) < 9  # the largest |Z| a keyed draw can give
    with pytest.raises(ValueError, match="overflows"):
        LogNormal(mu=700.0, sigma=1.0)
    LogNormal(mu=690.0, sigma=2.0)  # the largest delay stays finite: accepted


def _state(obj):
    names = [n for c in type(obj).__mro__ for n in c.__dict__.get("__slots__", ())]
    return {n: getattr(obj, n) for n in names if hasattr(obj, n)} | getattr(obj, "__dict__", {})


class _Tagged(GilbertElliott):
    """A user's subclass that keeps more state (in a __dict__)."""

    def __init__(self):
        super().__init__(0.1, 0.2)
        self.tag = "mine"


@pytest.mark.parametrize("component", [
    Constant(0.5), Uniform(0.1, 0.3), Exponential(0.2, base=0.1), LogNormal(-2.0, 0.5), RoundDelay(0.3, 4, 2.0),
    Empirical([0.1, 0.2]), Jitter(0.1, 0.5), Bernoulli(0.2), GilbertElliott(0.1, 0.3, 0.05, 0.9), _Tagged(),
], ids=lambda c: type(c).__name__)
def test_a_copied_component_has_the_same_state_in_an_object_of_its_own(component):
    import copy

    if hasattr(component, "bad"):
        component.bad = True
    if isinstance(component, Jitter):
        component._last = 0.25
    clone = copy.copy(component)
    assert clone is not component and type(clone) is type(component)
    assert _state(clone).keys() == _state(component).keys()
    assert all(a is b for a, b in zip(_state(clone).values(), _state(component).values()))


def _link_state(link):
    return {n: getattr(link, n) for n in Link.__slots__}


@pytest.mark.parametrize("bandwidth", [None, 2e6])
def test_a_twin_is_the_link_the_same_arguments_make(bandwidth):
    shared = {"jitter": Jitter(0.01, 0.5), "loss": GilbertElliott(0.1, 0.3), "bandwidth": 1e6, "outages": [(1.0, 2.0)],
              "link_class": "uplink", "queue_bytes": 5e4, "duplicate": 0.01, "corrupt": 0.02}
    latency = LogNormal(-2.0, 0.5)
    template = Link(latency, shared=True, **shared)
    twin = template.twin(bandwidth)
    made = Link(latency, shared=True, **{**shared, "bandwidth": bandwidth or 1e6})
    assert _link_state(twin) == _link_state(made)
    assert twin._outages is not template._outages  # an outage added to one link is its own
    draws = Streams(3).keyed("link/a->b")
    assert [twin.draw_fate(draws, 0, i) for i in range(20)] == [made.draw_fate(draws, 0, i) for i in range(20)]
    assert template._loss.bad is False  # the twin copied the stateful component before drawing


def test_only_a_fresh_shared_link_is_twinned_and_a_bad_bandwidth_is_refused():
    with pytest.raises(ValueError, match="template"):
        Link(Constant(0.1)).twin()
    used = Link(Constant(0.1), shared=True)
    used.next_index(0)
    with pytest.raises(ValueError, match="template"):
        used.twin()
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        Link(Constant(0.1), shared=True).twin(-1.0)
