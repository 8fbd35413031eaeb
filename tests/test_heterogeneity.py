"""Heterogeneity models of [nodes]: speed distributions drawn once per (seed, node), participation
by data size, partial work (completeness) recorded and replayed, and measured compute."""

import csv
import io
import json
import math
from pathlib import Path

import msgpack
import numpy as np
import pytest

from helpers import records

from netemu.run.calibration import REPETITIONS
from netemu.log import MessageLog
from netemu.engine.net import heterogeneity as H
from netemu.engine.rng import Streams
from netemu.run.runner import execute
from netemu.scenario.build import build_behaviours, build_data, build_task, build_world
from netemu.scenario.graph import build_graph
from netemu.scenario.load import parse_scenario
from netemu.scenario.schema import ScenarioError
from netemu.scenario.settings import network_model
from netemu.trace import Trace
from netemu.engine.world import World

BASE = """
[run]
name = "hetero"
seed = 7
rounds = {rounds}
runs = 1

[topology]
kind = "star"
clients = {clients}

[links.uplink]
latency = {{ model = "exponential", mean = 0.1 }}

[data]
kind = "linear"
dim = 4
samples_min = 10
samples_max = 60

{nodes}

[task]
name = "linear"
steps = 4

[[algorithm]]
name = "fedavg"
round_time = 5.0
{more}
"""


def scenario(tmp_path, nodes="", clients=8, rounds=3, more="", name="s.toml"):
    path = tmp_path / name
    path.write_text(BASE.format(nodes=nodes, clients=clients, rounds=rounds, more=more))
    return parse_scenario(__import__("tomllib").loads(path.read_text()), path)


def speeds(sc, seed=None):
    streams = Streams(sc.settings.run.seed if seed is None else seed)
    g = build_graph(sc, streams)
    b = build_behaviours(sc, g, streams)
    return {n: b[n].speed for n in g.nodes if n != "server"}


N = 3000
# Kolmogorov-Smirnov: sup |F_n - F| exceeds 1.95 / sqrt(n) with probability < 0.1 %; the draws are fixed by
# the seed, so this is a check that the inverse CDF is right, not a flaky statistical test
KS = 1.95 / math.sqrt(N)


def ks_distance(sample, cdf):
    x = np.sort(np.asarray(sample))
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


# ------------------------------------------------------------------ speed distributions


def test_pareto_speeds_follow_the_power_law_of_a_pareto_slowdown(tmp_path):
    sc = scenario(tmp_path, '[nodes]\nspeed = { model = "pareto", alpha = 1.5, speed = 40.0 }', clients=N)
    s = np.array(list(speeds(sc).values())) / 40.0  # speed / fastest = 1 / X, P(1/X <= y) = y^alpha
    assert s.max() <= 1.0 and s.min() > 0
    assert ks_distance(s, lambda y: y**1.5) < KS
    # mean of 1/X is alpha / (alpha + 1) = 0.6; its sd is sqrt(alpha/(alpha+2) - 0.36) ~ 0.255: 4 standard errors
    assert abs(s.mean() - 0.6) < 4 * 0.255 / math.sqrt(N)


def test_lognormal_speeds_have_the_median_and_log_spread_asked_for(tmp_path):
    sc = scenario(tmp_path, '[nodes]\nspeed = { model = "lognormal", median = 100.0, sigma = 0.4 }', clients=N)
    logs = np.log(np.array(list(speeds(sc).values())) / 100.0)
    assert abs(logs.mean()) < 4 * 0.4 / math.sqrt(N)  # 4 standard errors of the mean
    assert abs(logs.std() - 0.4) < 4 * 0.4 / math.sqrt(2 * N)  # 4 standard errors of the sd (normal data)
    assert abs(np.median(logs)) < 0.05


def test_zipf_speeds_take_each_level_with_probability_proportional_to_k_to_the_minus_s(tmp_path):
    sc = scenario(tmp_path, '[nodes]\nspeed = { model = "zipf", s = 1.2, levels = 5, speed = 10.0 }', clients=N)
    levels = np.rint(10.0 / np.array(list(speeds(sc).values()))).astype(int)
    p = np.arange(1, 6) ** -1.2
    p /= p.sum()
    freq = np.bincount(levels, minlength=6)[1:] / N
    assert set(levels.tolist()) <= {1, 2, 3, 4, 5}
    assert np.all(np.abs(freq - p) < 4 * np.sqrt(p * (1 - p) / N))  # 4 binomial standard errors per level


def test_empirical_speeds_are_drawn_from_the_file_each_equally_often(tmp_path):
    (tmp_path / "speeds.txt").write_text("# measured\n5\n50\n\n500\n")
    sc = scenario(tmp_path, '[nodes]\nspeed = { model = "empirical", file = "speeds.txt" }', clients=N)
    values = np.array(list(speeds(sc).values()))
    assert set(values.tolist()) == {5.0, 50.0, 500.0}
    for v in (5.0, 50.0, 500.0):
        assert abs(np.mean(values == v) - 1 / 3) < 4 * math.sqrt(2 / 9 / N)


def test_a_speed_is_a_pure_function_of_seed_and_node(tmp_path):
    model = '[nodes]\nspeed = { model = "lognormal", median = 100.0, sigma = 1.0 }'
    small, large = scenario(tmp_path, model, clients=5, name="a.toml"), scenario(tmp_path, model, clients=50, name="b.toml")
    a, b = speeds(small), speeds(large)
    assert a == {n: b[n] for n in a}  # adding clients does not reshuffle the others' speeds
    assert speeds(small) == a  # drawn again: the same
    assert speeds(small, seed=8) != a  # another seed, another population


def test_groups_take_their_own_speed_model_and_plain_speeds_stay_plain(tmp_path):
    nodes = ('[nodes]\nspeed = 3.0\n[[nodes.group]]\nmembers = ["client-{0..3}"]\n'
             'speed = { model = "pareto", alpha = 2.0, speed = 9.0 }')
    s = speeds(scenario(tmp_path, nodes))
    assert all(s[f"client-{i}"] == 3.0 for i in range(4, 8))
    assert all(0 < s[f"client-{i}"] <= 9.0 for i in range(4)) and len({s[f"client-{i}"] for i in range(4)}) == 4


def test_two_algorithms_of_a_run_meet_the_same_drawn_population(tmp_path, fedasync):
    sc = scenario(tmp_path, '[nodes]\nspeed = { model = "zipf", s = 1.0, levels = 8, speed = 50.0 }',
                  more='\n[[algorithm]]\nname = "fedasync"\n')
    worlds = [build_world(sc, a, 0) for a in (0, 1)]
    first, second = ({n: node.speed for n, node in w.network.nodes.items()} for w in worlds)
    assert first == second and len(set(first.values())) > 1


def test_the_drawn_population_is_recorded_in_nodes_csv(tmp_path):
    sc = scenario(tmp_path, '[nodes]\nspeed = { model = "lognormal", median = 20.0, sigma = 1.0 }')
    execute(sc, tmp_path / "out", quiet=True)
    rows = list(csv.DictReader(open(tmp_path / "out" / "nodes.csv")))
    assert [r["node"] for r in rows] == ["server", *(f"client-{i}" for i in range(8))]
    expected = speeds(sc)
    assert {r["node"]: float(r["speed"]) for r in rows if r["role"] == "client"} == expected


def test_a_scenario_without_models_writes_no_nodes_csv_and_keeps_its_resolved_table(tmp_path):
    sc = scenario(tmp_path, "[nodes]\nspeed = 20.0")
    assert sc.settings.nodes.default.completeness is None and sc.settings.nodes.compute == "work"  # absent: not in scenario.toml
    execute(sc, tmp_path / "out", quiet=True)
    assert not (tmp_path / "out" / "nodes.csv").exists()
    text = (tmp_path / "out" / "scenario.toml").read_text()
    assert "completeness" not in text and "compute" not in text


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(("nodes", "key", "words"), [
    ('speed = { model = "gamma" }', "nodes.speed.model", "pareto, zipf, lognormal, empirical"),
    ('speed = { model = "pareto", alpha = 0.01 }', "nodes.speed", "alpha must be >= 0.1"),
    ('speed = { model = "pareto", shape = 2.0 }', "nodes.speed.shape", "accepted: alpha, speed"),
    ('speed = { model = "zipf", levels = 0 }', "nodes.speed", "levels must be an integer"),
    ('speed = { model = "lognormal", sigma = 11.0 }', "nodes.speed", "sigma must be in [0, 10]"),
    ('speed = { model = "empirical", samples = [1.0, -2.0] }', "nodes.speed.samples", "finite speeds > 0"),
    ('speed = { model = "empirical", samples = [1.0], file = "x" }', "nodes.speed", "exactly one of"),
    ('speed = { model = "empirical", file = "missing.txt" }', "nodes.speed.file", "a readable file of speeds"),
    ('speed = "fast"', "nodes.speed", "or a speed model table"),
    ('speed = -1.0', "nodes.speed", "> 0 work units per second"),
    ('participation = { model = "data_size", low = 0.2 }', "nodes.participation", "low and high are both required"),
    ('participation = { model = "data_size", low = 0.2, high = 1.5 }', "nodes.participation", "in [0, 1]"),
    ('completeness = { model = "uniform", low = 0.0 }', "nodes.completeness", "0 < low <= high <= 1"),
    ('completeness = 1.5', "nodes.completeness", "in (0, 1]"),
    ('compute = "wallclock"', "nodes.compute", '"measured"'),
])
def test_bad_heterogeneity_keys_name_the_key_the_value_and_what_is_accepted(tmp_path, nodes, key, words):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, "[nodes]\n" + nodes)
    assert any(i.key == key and words in i.accepts for i in err.value.issues), [str(i) for i in err.value.issues]


def test_completeness_is_refused_for_a_family_that_does_not_honour_partial_work(tmp_path, fedasync):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, '[nodes]\ncompleteness = { model = "uniform", low = 0.5 }', more='\n[[algorithm]]\nname = "fedasync"\n')
    issue = next(i for i in err.value.issues if i.key == "nodes.completeness")
    assert "'fedasync'" in issue.accepts and "fedavg" in issue.accepts


def test_measured_compute_is_refused_for_a_family_without_a_step_to_time(tmp_path, fedasync):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, '[nodes]\ncompute = "measured"', more='\n[[algorithm]]\nname = "fedasync"\n')
    issue = next(i for i in err.value.issues if i.key == "nodes.compute")
    assert "'fedasync'" in issue.accepts and "step_cost" in issue.accepts


# ------------------------------------------------------------------ participation by data size


def test_participation_by_data_size_maps_sample_counts_linearly_from_low_to_high(tmp_path):
    sc = scenario(tmp_path, '[nodes]\nparticipation = { model = "data_size", low = 0.2, high = 0.9 }')
    streams = Streams(sc.settings.run.seed)
    g = build_graph(sc, streams)
    data = build_data(sc, g, streams)
    b = build_behaviours(sc, g, streams, data)
    n = {c: part[1].shape[0] for c, part in data.parts.items()}
    lo, hi = min(n.values()), max(n.values())
    for c, k in n.items():
        assert b[c].participation == pytest.approx(0.2 + 0.7 * (k - lo) / (hi - lo), abs=1e-12)
    assert b["server"].participation == 1.0
    assert H.participation_by_size({"a": 5, "b": 5}, 0.9, 0.1) == {"a": 0.1, "b": 0.1}


def test_less_data_first_is_low_above_high(tmp_path):
    assert H.participation_by_size({"a": 10, "b": 20, "c": 30}, 0.9, 0.1) == pytest.approx({"a": 0.9, "b": 0.5, "c": 0.1})


# ------------------------------------------------------------------ participation by label (FLGo's YMF)

DIGITS = """
[run]
seed = 3
rounds = 2
[topology]
kind = "star"
clients = 12
[data]
kind = "digits_fl"
partition = "dirichlet"
kappa = 0.3
samples = 60
test_samples = 10
[nodes]
participation = {participation}
[task]
name = "softmax"
epochs = 5
work_per_sample = 0.002
[[algorithm]]
name = "fedavg"
"""


def label_behaviours(tmp_path, participation):
    path = tmp_path / "digits.toml"
    path.write_text(DIGITS.format(participation=participation))
    sc = parse_scenario(__import__("tomllib").loads(path.read_text()), path)
    streams = Streams(sc.settings.run.seed)
    g = build_graph(sc, streams)
    data = build_data(sc, g, streams)
    return build_behaviours(sc, g, streams, data), data


def test_participation_by_label_is_flgo_y_max_first_without_a_label(tmp_path):
    # FLGo's YMF-beta: p = beta * min(labels) / (C - 1) + (1 - beta); beta = 0.4 is low = 0.6, high = 1
    b, data = label_behaviours(tmp_path, '{ model = "label", low = 0.6, high = 1.0 }')
    mins = set()
    for c, (_, y) in data.parts.items():
        mins.add(int(y.min()))
        assert b[c].participation == pytest.approx(0.4 * int(y.min()) / 9 + 0.6, abs=1e-12)
    assert len(mins) > 1 and b["server"].participation == 1.0


def test_participation_by_label_k_is_linear_in_the_clients_share_of_k(tmp_path):
    b, data = label_behaviours(tmp_path, '{ model = "label", low = 0.1, high = 0.9, label = 3 }')
    shares = set()
    for c, (_, y) in data.parts.items():
        share = float(np.mean(y == 3))
        shares.add(share)
        assert b[c].participation == pytest.approx(0.1 + 0.8 * share, abs=1e-12)
    assert len(shares) > 2
    assert H.participation_by_label({"a": np.array([0, 0, 1, 1]), "b": np.array([], dtype=int)}, 2, 1.0, 0.0, 1) == {"a": 0.5, "b": 1.0}


def test_participation_by_label_draws_stay_keyed_per_node_and_round(tmp_path):
    b, _ = label_behaviours(tmp_path, '{ model = "label", low = 0.2, high = 0.8, label = 1 }')
    g = build_graph(parse_scenario(__import__("tomllib").loads((tmp_path / "digits.toml").read_text()), tmp_path / "digits.toml"),
                    Streams(3))
    worlds = [World(g, seed=3, behaviours=b) for _ in range(2)]
    names = [n for n in g.nodes if n != "server"]
    rounds = [[w.network.participations(names, r).tolist() for r in range(20)] for w in worlds]
    assert rounds[0] == rounds[1]
    draws = Streams(3).keyed("participation")
    for r in range(20):
        assert rounds[0][r] == [draws.uniform(n, r) < b[n].participation for n in names]


@pytest.mark.parametrize(("data", "participation", "words"), [
    ('[data]\nkind = "linear"', '{ model = "label", low = 0.2, high = 0.9 }', "class labels per client"),
    ("", '{ model = "label", low = 0.2, high = 0.9 }', "class labels per client"),
    ('[data]\nkind = "linear"\nlabels = "binary"', '{ model = "label", low = 0.2, high = 0.9, label = 1.5 }', "integer >= 0"),
])
def test_participation_by_label_is_refused_without_class_labels_or_with_a_bad_label(tmp_path, data, participation, words):
    text = BASE.format(nodes=f"[nodes]\nparticipation = {participation}", clients=4, rounds=1, more="")
    text = text.replace('[data]\nkind = "linear"\ndim = 4\nsamples_min = 10\nsamples_max = 60\n', data + "\n")
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        parse_scenario(__import__("tomllib").loads(text), path)
    assert any(i.key == "nodes.participation" and words in i.accepts for i in err.value.issues), [str(i) for i in err.value.issues]


def test_participation_by_label_refuses_a_label_the_data_does_not_have(tmp_path):
    with pytest.raises(Exception, match=r"participation.label = 10: a class of the data, 0 .. 9"):
        label_behaviours(tmp_path, '{ model = "label", low = 0.2, high = 0.9, label = 10 }')


def test_participation_by_label_on_binary_linear_data_uses_the_two_classes(tmp_path):
    text = BASE.format(nodes='[nodes]\nparticipation = { model = "label", low = 0.0, high = 1.0, label = 1 }', clients=6, rounds=1, more="")
    path = tmp_path / "s.toml"
    path.write_text(text.replace("samples_max = 60", 'samples_max = 60\nlabels = "binary"'))
    sc = parse_scenario(__import__("tomllib").loads(path.read_text()), path)
    streams = Streams(7)
    g = build_graph(sc, streams)
    data = build_data(sc, g, streams)
    b = build_behaviours(sc, g, streams, data)
    for c, (_, y) in data.parts.items():
        assert b[c].participation == pytest.approx(float(np.mean(y == 1.0)), abs=1e-12)


def test_participation_by_label_runs_writes_nodes_csv_and_replays_exactly(tmp_path):
    nodes = '[nodes]\nparticipation = { model = "label", low = 0.1, high = 0.9, label = 1 }'
    text = BASE.format(nodes=nodes, clients=8, rounds=4, more="").replace("samples_max = 60", 'samples_max = 60\nlabels = "binary"')
    path = tmp_path / "s.toml"
    path.write_text(text)
    sc = parse_scenario(__import__("tomllib").loads(text), path)
    execute(sc, tmp_path / "a", quiet=True)
    rows = {r["node"]: r for r in csv.DictReader(open(tmp_path / "a" / "nodes.csv"))}
    b = build_behaviours(sc, build_graph(sc, Streams(7)), Streams(7), build_data(sc, build_graph(sc, Streams(7)), Streams(7)))
    assert {n: float(r["participation"]) for n, r in rows.items()} == pytest.approx({n: b[n].participation for n in rows})
    execute(sc, tmp_path / "b", quiet=True, replay=Trace.read(tmp_path / "a" / "trace.msgpack"))
    assert (tmp_path / "a" / "messages.jsonl").read_bytes() == (tmp_path / "b" / "messages.jsonl").read_bytes()


# ------------------------------------------------------------------ completeness


def completeness_entries(trace: Path) -> list:
    return [k for (alg, run), fates in Trace.read(trace).fates_by_run.items() for k in fates if k[0] == "completeness"]


@pytest.mark.parametrize("cohort", [True, False])
def test_fedavg_clients_do_the_drawn_fraction_of_their_local_steps(tmp_path, cohort):
    from netemu.algorithms.fedavg import FedAvgParams, build

    sc = scenario(tmp_path, '[nodes]\nspeed = 100.0\ncompleteness = { model = "uniform", low = 0.25, high = 1.0 }')
    streams = Streams(7)
    g = build_graph(sc, streams)
    task = build_task(sc, build_data(sc, g, streams), streams)
    buf = io.BytesIO()
    world = World(g, seed=7, behaviours=build_behaviours(sc, g, streams), log=MessageLog(buf))
    build(world, FedAvgParams(round_time=5.0), task, 3, cohort=cohort)
    world.run()
    world.log.flush()
    computes = [r for r in records(buf) if r.get("event") == "compute"]
    assert len(computes) == 3 * 8
    fractions = set()
    for r in computes:
        f = world.network.work_fraction(r["actor"], r["round"])
        fractions.add(f)
        steps = max(1, math.floor(f * 4))
        assert 0.25 <= f <= 1.0
        assert r["work"] == steps * task.parts[r["actor"]][1].shape[0] and r["duration"] == r["work"] / 100.0
    assert len(fractions) == len(computes)  # drawn per (node, round)


def test_completeness_draws_are_recorded_and_replayed_exactly(tmp_path):
    nodes = '[nodes]\nparticipation = 0.7\ncompleteness = { model = "uniform", low = 0.3 }\nslowdown_sigma = 0.2'
    sc = scenario(tmp_path, nodes, rounds=5)
    execute(sc, tmp_path / "a", quiet=True)
    keys = completeness_entries(tmp_path / "a" / "trace.msgpack")
    assert keys and all(len(k) == 3 for k in keys)
    execute(sc, tmp_path / "b", quiet=True, replay=Trace.read(tmp_path / "a" / "trace.msgpack"))
    assert (tmp_path / "a" / "messages.jsonl").read_bytes() == (tmp_path / "b" / "messages.jsonl").read_bytes()
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["replay"]["new"] == 0 and summary["replay"]["replayed"] > 0


def test_a_replay_refuses_another_completeness_or_speed_model_but_not_another_plain_speed(tmp_path):
    nodes = '[nodes]\nspeed = {speed}\ncompleteness = {{ model = "uniform", low = {low} }}'
    sc = scenario(tmp_path, nodes.format(speed='{ model = "pareto", alpha = 2.0 }', low=0.3), name="a.toml")
    execute(sc, tmp_path / "a", quiet=True)
    trace = Trace.read(tmp_path / "a" / "trace.msgpack")
    assert trace.header["network"]["nodes"]["speed"] == {"model": "pareto", "alpha": 2.0}
    with pytest.raises(Exception, match=r"nodes.completeness.low: 0.3 in the trace, 0.4 in the scenario"):
        trace.check_scenario(network_model(scenario(tmp_path, nodes.format(speed='{ model = "pareto", alpha = 2.0 }', low=0.4), name="b.toml").settings))
    with pytest.raises(Exception, match=r"nodes.speed.alpha: 2.0 in the trace, 3.0 in the scenario"):
        trace.check_scenario(network_model(scenario(tmp_path, nodes.format(speed='{ model = "pareto", alpha = 3.0 }', low=0.3), name="c.toml").settings))
    with pytest.raises(Exception, match=r"nodes.speed"):
        trace.check_scenario(network_model(scenario(tmp_path, nodes.format(speed="5.0", low=0.3), name="d.toml").settings))
    plain = '[nodes]\nspeed = {}'
    execute(scenario(tmp_path, plain.format(5.0), name="e.toml"), tmp_path / "e", quiet=True)
    Trace.read(tmp_path / "e" / "trace.msgpack").check_scenario(network_model(scenario(tmp_path, plain.format(9.0), name="f.toml").settings))


def test_completeness_entries_are_checked_when_read(tmp_path):
    from netemu.trace.body import COMPLETENESS, Decoder3, Problem

    d = Decoder3({"fedavg"}, 1)
    d.fate([6, "fedavg"])
    d.fate([6, "client-1"])
    d.fate([7, 0, 0])
    assert d.fate([COMPLETENESS, 1, 4, 0.5]) == ("fedavg", 0, ("completeness", "client-1", 4), 0.5)
    for bad in ([COMPLETENESS, 1, 4, 0.0], [COMPLETENESS, 1, 4, 1.5], [COMPLETENESS, 1, 4, True], [COMPLETENESS, 1, 4]):
        with pytest.raises(Problem):
            d.fate(bad)
    assert msgpack.packb([COMPLETENESS, 1, 4, 0.5])[1] == 10


# ------------------------------------------------------------------ measured compute


def test_measured_compute_records_its_calibration_and_scales_every_compute_time(tmp_path):
    sc = scenario(tmp_path, '[nodes]\ncompute = "measured"\nspeed = 2.0')
    summary = execute(sc, tmp_path / "a", quiet=True)
    c = summary["compute"]
    seconds = c["seconds_per_work_unit"]["fedavg"]
    assert c["mode"] == "measured" and c["repetitions"] == REPETITIONS and 0 < seconds < 1e-2 and c["replayed"] == []
    assert Trace.read(tmp_path / "a" / "trace.msgpack").header["calibration"] == {"fedavg": seconds}
    for line in open(tmp_path / "a" / "messages.jsonl"):
        r = json.loads(line)
        if r.get("event") == "compute":
            assert r["duration"] == seconds * r["work"] / 2.0


@pytest.mark.parametrize("name", ["fedbuff", "fedasync-mix", "bounded-staleness", "overcommit", "partial-agg"])
def test_the_async_family_takes_partial_work_and_measured_compute(tmp_path, name):
    text = BASE.format(nodes='[nodes]\ncompute = "measured"\ncompleteness = { model = "uniform", low = 0.3 }', clients=8, rounds=3, more="")
    text = text.replace('name = "fedavg"\nround_time = 5.0', f'name = "{name}"\nround_time = 2.0'
                        + ("\nclients_per_round = 4" if name == "overcommit" else ""))
    path = tmp_path / "s.toml"
    path.write_text(text)
    summary = execute(parse_scenario(__import__("tomllib").loads(text), path), tmp_path / "a", quiet=True)
    seconds = summary["compute"]["seconds_per_work_unit"]
    assert list(seconds) == [name] and 0 < seconds[name] < 1e-2
    drawn = {(k[1], k[2]): v for fates in Trace.read(tmp_path / "a" / "trace.msgpack").fates_by_run.values()
             for k, v in fates.items() if k[0] == "completeness"}
    computes = [r for r in map(json.loads, open(tmp_path / "a" / "messages.jsonl")) if r.get("event") == "compute"]
    assert computes and all((r["actor"], r["round"]) in drawn for r in computes)
    assert all(r["duration"] == seconds[name] * r["work"] for r in computes)  # speed 1


def test_a_replay_reuses_the_recorded_calibration_and_is_exact(tmp_path, monkeypatch):
    sc = scenario(tmp_path, '[nodes]\ncompute = "measured"\nparticipation = 0.6')
    execute(sc, tmp_path / "a", quiet=True)
    trace = Trace.read(tmp_path / "a" / "trace.msgpack")

    def no_timing(*args, **kwargs):
        raise AssertionError("a replay must not measure again")

    monkeypatch.setattr("netemu.run.calibration.measure", no_timing)
    summary = execute(sc, tmp_path / "b", quiet=True, replay=trace)
    assert summary["compute"]["seconds_per_work_unit"] == trace.header["calibration"]
    assert summary["compute"]["replayed"] == ["fedavg"]
    assert (tmp_path / "a" / "messages.jsonl").read_bytes() == (tmp_path / "b" / "messages.jsonl").read_bytes()


def test_work_mode_keeps_work_over_speed(tmp_path):
    sc = scenario(tmp_path, "[nodes]\nspeed = 4.0")
    world = build_world(sc, 0, 0)
    assert world.network.work_seconds == 1.0
    assert world.network.compute_time("client-0", 10, 0, 0) == 10 / 4.0


def test_a_damaged_recorded_calibration_is_measured_again_not_used(tmp_path):
    from netemu.run.calibration import calibrate

    sc = scenario(tmp_path, '[nodes]\ncompute = "measured"')
    for bad in (float("inf"), -1.0, "fast", True, None):
        value = calibrate(sc, {"fedavg": bad})["fedavg"]
        assert math.isfinite(value) and value > 0
    assert calibrate(sc, {"fedavg": 2.5e-7}) == {"fedavg": 2.5e-7}
