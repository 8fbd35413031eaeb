"""netem's latency models (normal, pareto, paretonormal): Linux tc-netem's tables, drawn by keys.

Each model draws t uniformly from a 4096-entry table and gives mean + jitter * t / 8192,
so its exact moments are the table's: the sample tests compare N keyed draws with them
at 5 standard errors (a fixed seed: the bounds are met or not, deterministically).
"""

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

from netemu.engine.net.impairments import NETEM_DIST_SCALE, NetemNormal, NetemPareto, NetemParetoNormal, netem_table
from netemu.engine.rng import Streams

N = 20000
MODELS = {"normal": NetemNormal, "pareto": NetemPareto, "paretonormal": NetemParetoNormal}
DEBIAN_TC = Path("/usr/lib/x86_64-linux-gnu/tc")  # Debian's iproute2 installs tc's .dist files here


def delays(latency, n=N, seed=11):
    draws = Streams(seed).keyed("link/a->b")
    return np.array([latency.sample(draws, i // 10, i % 10) for i in range(n)])


def table(name):
    return netem_table(name).astype(float) / NETEM_DIST_SCALE


@pytest.mark.parametrize("name, digest", [
    ("normal", "d9ca7c8933c70ab220484c7a66ebf063"),
    ("pareto", "4a21dd6edab02b482ae4bd2023ec9734"),
    ("paretonormal", "13789573128096469b527b41e771813d"),
])
def test_the_tables_are_the_ones_iproute2_generates(name, digest):
    # the digests are of the tables found equal, entry by entry, to Debian iproute2 6.1.0's .dist files
    t = netem_table(name)
    assert t.dtype == np.int16 and t.shape == (4096,) and bool(np.all(np.diff(t) >= 0))
    assert hashlib.blake2b(t.astype("<i2").tobytes(), digest_size=16).hexdigest() == digest


@pytest.mark.parametrize("name", MODELS)
def test_the_tables_equal_the_dist_files_tc_installs(name):
    path = DEBIAN_TC / f"{name}.dist"
    if not path.is_file():
        pytest.skip(f"{path} not installed (apt-get install iproute2)")
    entries = [int(x) for line in path.read_text().splitlines() if not line.startswith("#") for x in line.split()]
    assert netem_table(name).tolist() == entries


def test_the_normal_table_has_mean_0_and_deviation_1():
    # quantised to 1/8192 and cut at -4 and +3.52: the moments stay within 1e-3 of N(0, 1)'s
    t = table("normal")
    assert abs(t.mean()) < 1e-3 and abs(t.std() - 1) < 1e-3


def test_the_pareto_tables_are_narrower_than_jitter_as_in_netem():
    # pareto.c caps its tail at 32767 / 8192 = 4: netem's own pareto is not of deviation `jitter`
    assert table("pareto").std() == pytest.approx(0.820, abs=1e-3) and table("pareto").mean() == pytest.approx(-0.0335, abs=1e-4)
    assert table("paretonormal").std() == pytest.approx(0.834, abs=1e-3)
    assert table("pareto").min() == pytest.approx(-2 / 3, abs=1e-4)


@pytest.mark.parametrize("name", MODELS)
def test_the_sample_mean_and_deviation_are_mean_and_jitter_times_the_tables(name):
    mean, jitter = 0.1, 0.02  # mean - 4 jitter > 0: no draw is clamped, the moments are the table's
    t = table(name)
    d = delays(MODELS[name](mean=mean, jitter=jitter))
    sd = jitter * t.std()
    kurtosis = float(((t - t.mean()) ** 4).mean() / t.std() ** 4)
    assert abs(d.mean() - (mean + jitter * t.mean())) < 5 * sd / math.sqrt(N)
    # the standard error of a sample deviation is sd * sqrt((kurtosis - 1) / 4N)
    assert abs(d.std() - sd) < 5 * sd * math.sqrt((kurtosis - 1) / (4 * N))
    assert set(np.round((d - mean) / jitter * NETEM_DIST_SCALE).astype(int)) <= set(netem_table(name).tolist())


@pytest.mark.parametrize("name", MODELS)
def test_the_same_keys_give_the_same_delays(name):
    a, b = MODELS[name](0.05, 0.01), MODELS[name](0.05, 0.01)
    assert np.array_equal(delays(a, 500), delays(b, 500))
    assert not np.array_equal(delays(a, 500), delays(a, 500, seed=12))
    draws = Streams(3).keyed("link/x->y")
    assert a.sample(draws, 7, 2) == b.sample(Streams(3).keyed("link/x->y"), 7, 2)  # no state between draws


def test_paretonormal_has_a_heavier_upper_tail_than_normal():
    normal, paretonormal = delays(NetemNormal(1.0, 0.1)), delays(NetemParetoNormal(1.0, 0.1))
    beyond = lambda d: int((d > 1.0 + 3 * 0.1).sum())
    # P(t > 3) is 0.12 % in the normal table and 1.6 % in paretonormal's: 24 against 317 expected
    assert beyond(paretonormal) > 5 * beyond(normal)
    assert np.quantile(paretonormal, 0.999) > np.quantile(normal, 0.999)


def test_negative_delays_clamp_at_zero():
    d = delays(NetemNormal(mean=0.01, jitter=0.02))
    assert d.min() == 0.0 and (d == 0).mean() == pytest.approx((table("normal") < -0.5).mean(), abs=0.01)


def test_zero_jitter_gives_the_mean():
    assert set(delays(NetemParetoNormal(0.3, 0.0), 100)) == {0.3}


@pytest.mark.parametrize("mean, jitter", [(-0.1, 0.01), (0.1, -0.01)])
def test_negative_mean_or_jitter_is_refused(mean, jitter):
    with pytest.raises(ValueError, match="needs mean >= 0 and jitter >= 0"):
        NetemPareto(mean, jitter)


SCENARIO = """
[run]
rounds = 2
[topology]
kind = "star"
clients = 2
[links.uplink]
latency = {latency}
[data]
kind = "linear"
[[algorithm]]
name = "fedavg"
"""


def test_a_scenario_names_the_netem_models(tmp_path):
    from netemu.scenario import load_scenario
    from netemu.scenario.build import build_links
    from netemu.scenario.graph import build_graph

    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(latency='{ model = "pareto", mean = 0.1, jitter = 0.02 }'))
    sc = load_scenario(path)
    links = build_links(sc, build_graph(sc, Streams(0)))
    latency = links[("client-0", "server")].latency
    assert isinstance(latency, NetemPareto) and (latency.mean, latency.jitter) == (0.1, 0.02)


def test_a_scenario_with_a_bad_netem_parameter_names_key_and_range(tmp_path):
    from netemu.scenario import ScenarioError, load_scenario

    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(latency='{ model = "normal", mean = 0.1, jiter = 0.02 }'))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    (issue,) = info.value.issues
    assert issue.key == "links.uplink.latency.jiter" and issue.accepts.endswith("accepted: mean, jitter")
