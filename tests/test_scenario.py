"""Scenario validation: every problem reported together, each naming file, key, value, accepted values."""

import tomllib
from pathlib import Path

import pytest

from netemu.scenario import ScenarioError, load_scenario, parse_scenario
from test_shipped_scenarios import SHIPPED  # every shipped scenario, a Flower one skipped without the extra

SCENARIOS = Path(__file__).parent.parent / "scenarios"

BASE = """
[run]
rounds = 3
[topology]
kind = "star"
clients = 4
[data]
kind = "linear"
[[algorithm]]
name = "fedavg"
"""


def problems(text: str, tmp_path, overrides=()):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, overrides)
    return info.value


def one_problem(text, tmp_path, overrides=()):
    err = problems(text, tmp_path, overrides)
    assert len(err.issues) == 1, str(err)
    issue = err.issues[0]
    assert issue.file.startswith(str(tmp_path / "s.toml"))
    return issue


@pytest.mark.parametrize("path", SHIPPED)  # a Flower scenario is skipped, saying why, without the [flower] extra
def test_every_shipped_scenario_validates(path):
    load_scenario(path)


def test_a_minimal_scenario_is_completed_with_defaults(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE)
    sc = load_scenario(path)
    assert sc.settings.run.seed == 0 and sc.settings.run.runs == 1
    assert sc.task_params().lr == 0.05 and sc.settings.task.name == "linear" and sc.settings.labels == ["fedavg"]
    assert sc.name == "s"


def test_a_scenario_is_parsed_once_into_typed_read_only_records(tmp_path):
    import dataclasses

    path = tmp_path / "s.toml"
    path.write_text(BASE + '[[nodes.crash]]\nnode = "client-1"\nat = 2.0\n[links.uplink]\noutages = [[1.0, 4.0]]\n'
                    '[nodes.speed]\nmodel = "pareto"\nalpha = 2.0\n')
    s = load_scenario(path).settings
    assert (s.run.rounds, s.run.runs, s.run.seed, s.topology.kind, s.topology.params["clients"]) == (3, 1, 0, "star", 4)
    assert s.labels == ["fedavg"] and s.algorithms[0].params["round_time"] == 10.0 and s.algorithms[0].deadlines == (10.0,)
    assert s.nodes.crashes[0].recover is None and s.nodes.population and s.nodes.compute == "work"
    assert s.links.outage_ends() == [4.0] and s.data is not None and s.data.kind == "linear"
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.run.rounds = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.links.classes["uplink"]["bandwidth"] = 1.0  # type: ignore[index]


def test_data_may_be_left_out_only_when_every_algorithm_needs_none(tmp_path):
    issue = one_problem(BASE.replace('[data]\nkind = "linear"\n', ""), tmp_path)
    assert issue.key == "data" and "algorithm[0] = 'fedavg' learns the scenario's data" in issue.accepts


def test_a_shorthand_table_that_is_not_a_table_is_named(tmp_path):
    issue = one_problem("flower = 3\n" + BASE, tmp_path)
    assert issue.key == "flower" and issue.value == 3


def test_an_unknown_key_is_named_with_the_accepted_keys(tmp_path):
    issue = one_problem(BASE.replace("rounds = 3", "rounds = 3\nrounsd = 4"), tmp_path)
    assert issue.key == "run.rounsd" and issue.value == 4 and "accepted keys here: name, description, seed" in issue.accepts


def test_a_wrong_type_is_named(tmp_path):
    issue = one_problem(BASE.replace("rounds = 3", 'rounds = "three"'), tmp_path)
    assert (issue.key, issue.value) == ("run.rounds", "three") and "an integer" in issue.accepts


def test_a_probability_outside_0_1_is_refused(tmp_path):
    issue = one_problem(BASE + "[nodes]\nparticipation = 1.5\n", tmp_path)
    assert (issue.key, issue.value, issue.accepts) == ("nodes.participation", 1.5, "expected a number in [0, 1]")


def test_a_negative_delay_is_refused(tmp_path):
    issue = one_problem(BASE + '[links.uplink]\nlatency = { model = "constant", delay = -0.5 }\n', tmp_path)
    assert issue.key == "links.uplink.latency" and "constant delay must be >= 0, got -0.5" in issue.accepts


def test_an_unknown_link_model_lists_the_models(tmp_path):
    issue = one_problem(BASE + '[links.uplink]\nloss = { model = "burst", p = 0.1 }\n', tmp_path)
    assert issue.key == "links.uplink.loss.model" and "bernoulli, gilbert_elliott" in issue.accepts


def test_an_unknown_link_model_parameter_lists_the_parameters(tmp_path):
    issue = one_problem(BASE + '[links.uplink]\nlatency = { model = "exponential", mean = 1, scale = 2 }\n', tmp_path)
    assert issue.key == "links.uplink.latency.scale" and "accepted: mean, base" in issue.accepts


def test_a_link_class_the_topology_lacks_is_named(tmp_path):
    issue = one_problem(BASE + "[links.peer]\nbandwidth = 1e6\n", tmp_path)
    assert issue.key == "links.peer" and "classes: downlink, uplink" in issue.accepts


def test_a_disconnected_graph_is_refused(tmp_path):
    text = BASE.replace('kind = "star"\nclients = 4', 'kind = "geometric"\nd_max = 1.5\npositions = { a = [0, 0], b = [1, 0], c = [9, 9] }')
    err = problems(text, tmp_path)
    assert any(i.key == "topology" and "falls into 2 parts (smallest: c)" in i.accepts for i in err.issues)


def test_an_algorithm_parameter_out_of_range_is_named_by_its_key(tmp_path):
    issue = one_problem(BASE + "mu = -1.0\n", tmp_path)
    assert (issue.key, issue.value, issue.accepts) == ("algorithm[0].mu", -1.0, ">= 0")


def test_an_unknown_algorithm_lists_the_algorithms(tmp_path):
    issue = one_problem(BASE.replace('name = "fedavg"', 'name = "fedsgd"'), tmp_path)
    assert issue.key == "algorithm[0].name" and "one of fedavg" in issue.accepts


def test_a_missing_required_value_is_named(tmp_path):
    issue = one_problem(BASE.replace("rounds = 3", ""), tmp_path)
    assert issue.key == "run.rounds" and issue.accepts.startswith("required")


def test_a_group_member_matching_no_node_is_named(tmp_path):
    issue = one_problem(BASE + '[[nodes.group]]\nmembers = ["server", "client-9*"]\nspeed = 2.0\n', tmp_path)
    assert (issue.key, issue.value) == ("nodes.group[0].members", "client-9*")


def test_a_recovery_before_its_crash_is_refused(tmp_path):
    issue = one_problem(BASE + '[[nodes.crash]]\nnode = "client-1"\nat = 10.0\nrecover = 5.0\n', tmp_path)
    assert issue.key == "nodes.crash[0].recover" and "after the crash time at = 10.0" in issue.accepts


def test_a_toml_syntax_error_names_the_file(tmp_path):
    issue = one_problem("[run\nrounds = 3", tmp_path)
    assert issue.key == "(syntax)"


def test_a_missing_script_file_is_named(tmp_path):
    issue = one_problem('script = "nowhere.py"\n' + BASE, tmp_path)
    assert (issue.key, issue.value) == ("script", "nowhere.py")


def test_all_problems_are_reported_together(tmp_path):
    text = BASE.replace("rounds = 3", "rounds = 0\nseed = -2").replace("clients = 4", "clients = 4\nsize = 3")
    err = problems(text + "mu = -1.0\n", tmp_path)
    assert {i.key for i in err.issues} == {"run.rounds", "run.seed", "topology.size", "algorithm[0].mu"}
    assert "4 problems in the scenario" in str(err)


def test_set_overrides_values_and_is_validated_the_same_way(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE)
    sc = load_scenario(path, ["run.rounds=200", "task.lr=0.2", "algorithm.mu=0.1", "nodes.participation=0.5", "run.name=sweep"])
    assert sc.settings.run.rounds == 200 and sc.task_params().lr == 0.2 and sc.algorithm_params(0).mu == 0.1
    assert sc.settings.nodes.default.participation == 0.5 and sc.name == "sweep"
    issue = one_problem(BASE, tmp_path, ["task.lr=-3"])
    assert (issue.key, issue.value) == ("task.lr", -3)


def test_set_addresses_one_algorithm_by_its_label(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE + 'label = "a"\n[[algorithm]]\nname = "fedavg"\nlabel = "b"\n')
    sc = load_scenario(path, ["algorithm.b.mu=0.3"])
    assert [sc.algorithm_params(i).mu for i in (0, 1)] == [0.0, 0.3]
    err = problems(path.read_text(), tmp_path, ["algorithm.c.mu=0.3"])
    assert "no algorithm labelled 'c'; labels: a, b" in str(err)


def test_compared_algorithms_need_distinct_labels(tmp_path):
    err = problems(BASE + '[[algorithm]]\nname = "fedavg"\n', tmp_path)
    assert any(i.key == "algorithm" and "unique labels" in i.accepts for i in err.issues)


def test_a_resolved_scenario_validates_again(tmp_path):
    from netemu.run.runner import resolved_toml

    sc = load_scenario(SCENARIOS / "quickstart_scripted.toml")
    again = parse_scenario(tomllib.loads(resolved_toml(sc)), tmp_path / "resolved.toml")
    assert again.table["algorithm"] == sc.table["algorithm"] and Path(again.table["script"]).is_absolute()
