"""Algorithms declare what they need; `netemu validate` checks it, so nothing it accepts
fails when the world is built."""

from pathlib import Path

import pytest

from netemu import plugins
from netemu.scenario import ScenarioError, load_scenario
from netemu.scenario.build import build_world

#: small data of every built-in kind (the defaults, shrunk so a build takes milliseconds).
DATA = {
    "linear": 'kind = "linear"',
    "online": 'kind = "online"\niterations = 20\ngroup_samples = [5, 10]',
    "clustered_linear": 'kind = "clustered_linear"\ndim = 5\nvalidation = true',
    "digits": 'kind = "digits"',
    "digits_fl": 'kind = "digits_fl"\nsamples = 40\ntest_samples = 10\npartition = "rooms"\n[task]\nname = "softmax"',
}

STAR_GRAPHML = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="role" for="node" attr.name="role" attr.type="string"/>
  <graph edgedefault="undirected">
    <node id="server"><data key="role">server</data></node>
    <node id="a"><data key="role">client</data></node>
    <node id="b"><data key="role">client</data></node>
    <edge source="server" target="a"/><edge source="server" target="b"/>
  </graph>
</graphml>
"""
RING_GRAPHML = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <graph edgedefault="undirected">
    <node id="p0"/><node id="p1"/><node id="p2"/><node id="p3"/>
    <edge source="p0" target="p1"/><edge source="p1" target="p2"/><edge source="p2" target="p3"/><edge source="p3" target="p0"/>
  </graph>
</graphml>
"""
TOPOLOGIES = {
    "star": 'kind = "star"\nclients = 4',
    "multi_server": 'kind = "multi_server"\nservers = 2\nclients_per_server = 3',
    "random_peers": 'kind = "random_peers"\npeers = 5',
    "geometric": 'kind = "geometric"\nd_max = 1.5\npositions = { a = [0, 0], b = [1, 0], c = [2, 0], d = [2, 1] }',
    "graphml_star": 'kind = "graphml"\nfile = "star.graphml"',
    "graphml_ring": 'kind = "graphml"\nfile = "ring.graphml"',
}
BUILT_IN = [name for name, origin in ((n, plugins.registry().origin[("algorithm", n)]) for n in plugins.registry().algorithms)
            if "'netemu." in origin]


#: parameters an algorithm cannot run without (the Flower family needs its apps: the example's)
NEEDED = {"flower": f'server_app = "flower_digits.server_app:app"\nclient_app = "flower_digits.client_app:app"\n'
                    f'app_dir = "{Path(__file__).resolve().parents[1] / "examples" / "flower-digits"}"\n'}


def scenario(tmp_path: Path, algorithm: str, topology: str, rounds: int = 3, data: str | None = None) -> Path:
    (tmp_path / "star.graphml").write_text(STAR_GRAPHML)
    (tmp_path / "ring.graphml").write_text(RING_GRAPHML)
    kind = data or (plugins.algorithm(algorithm).datasets or ("linear",))[0]
    path = tmp_path / "s.toml"
    path.write_text(f"[run]\nrounds = {rounds}\n[topology]\n{TOPOLOGIES[topology]}\n[data]\n{DATA[kind]}\n"
                    f'[[algorithm]]\nname = "{algorithm}"\n{NEEDED.get(algorithm, "")}')
    return path


def test_every_built_in_family_registers_through_entry_points():
    assert {"fedavg", "pgfl", "pao-fed-u1", "zcdp-nfl", "npfl-rl-sac", "fedpnp-soft"} <= set(BUILT_IN)
    assert not plugins.registry().broken


#: presets that keep batch-norm entries local (FedBN) while the default task (softmax) has none:
#: validate refuses them on every topology, at `task.batchnorm` (docs/algorithms.md, FedPnP's baselines)
NO_BATCH_NORM = {n for n in BUILT_IN if plugins.algorithm(n).defaults.get("keep_local")}


@pytest.mark.parametrize("algorithm", BUILT_IN)
def test_what_validate_accepts_builds(algorithm, tmp_path):
    """For every built-in algorithm × topology kind: validate-ok ⇒ the world builds; and each
    algorithm is accepted on at least one topology (so this cannot pass by refusing all)."""
    if algorithm == "flower":
        pytest.importorskip("flwr", reason="the Flower family validates its apps, which need Flower ([flower] extra)")
    accepted, refused_at = [], set()
    for topology in TOPOLOGIES:
        try:
            sc = load_scenario(scenario(tmp_path, algorithm, topology))
        except ScenarioError as exc:
            assert all(i.file.endswith("s.toml") and i.key for i in exc.issues)
            refused_at |= {i.key for i in exc.issues}
            continue
        build_world(sc, 0, 0)
        accepted.append(topology)
    if algorithm in NO_BATCH_NORM:
        assert not accepted and "task.batchnorm" in refused_at
        return
    assert accepted, f"{algorithm} refused on every topology kind"


def test_pgfl_on_a_star_is_refused_with_file_key_value(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario(tmp_path, "pgfl", "star"))
    (issue,) = info.value.issues
    assert (issue.key, issue.value) == ("topology.kind", "star")
    assert "algorithm[0] = 'pgfl' needs servers >= 1 with their own clients" in issue.accepts
    assert str(tmp_path / "s.toml") in str(info.value)


def test_pao_fed_on_a_multi_server_graph_is_refused(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario(tmp_path, "pao-fed-u1", "multi_server"))
    (issue,) = info.value.issues
    assert (issue.key, issue.value) == ("topology.kind", "multi_server") and "one server" in issue.accepts


def test_peer_algorithms_refuse_a_star_by_its_roles(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario(tmp_path, "zcdp-nfl", "star"))
    assert [i.key for i in info.value.issues] == ["algorithm[0].name"]


def test_pao_fed_needs_a_stream_as_long_as_the_run(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario(tmp_path, "pao-fed-u1", "star", rounds=21))
    (issue,) = info.value.issues
    assert (issue.key, issue.value) == ("run.rounds", 21) and "data.iterations" in issue.accepts


def test_npfl_rl_needs_validation_sets(tmp_path):
    path = scenario(tmp_path, "npfl-rl-dpg", "random_peers")
    path.write_text(path.read_text().replace("validation = true", "validation = false"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    (issue,) = info.value.issues
    assert (issue.key, issue.value) == ("data.validation", False)


def test_g_fedfilt_positions_need_rooms(tmp_path):
    path = scenario(tmp_path, "g-fedfilt", "star")
    path.write_text(path.read_text().replace('partition = "rooms"', 'partition = "labels"'))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    (issue,) = info.value.issues
    assert (issue.key, issue.value) == ("data.partition", "labels")
