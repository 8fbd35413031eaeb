"""Plug-ins: algorithms and data kinds from entry points or "package.module:attribute" get
everything a built-in gets — validation, listing, run, sweep, replay, plot.

The example package (examples/netemu-fedasync) is installed by a session fixture, from the
local folder, the way a user installs a plug-in (`pip install -e`), so that
`python3 -m pytest` alone (the README's test command) tests it on a fresh checkout; the
commands then run as subprocesses, as a user runs them, because an editable install made
during a process is seen only by processes started after it.
"""

import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from netemu import plugins
from netemu.cli import main
from netemu.run.runner import execute
from netemu.scenario import ScenarioError, load_scenario
from netemu.scenario.build import build_world

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "netemu-fedasync"
SCENARIO = EXAMPLE / "scenarios" / "fedasync_vs_fedavg.toml"
NETEMU = [sys.executable, "-m", "netemu.cli"]
SMALL = ["--set", "run.rounds=4", "--set", "run.runs=1"]


def netemu(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*NETEMU, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)


# ----------------------------------------------------------------------- the example package


def test_an_installed_plug_in_is_listed_with_its_parameters_and_defaults(fedasync):
    out = netemu("algorithms", "fedasync")
    assert out.returncode == 0, out.stderr
    assert "fedasync  (entry point fedasync = 'netemu_fedasync:SPEC'" in out.stdout
    assert "alpha = 0.6, staleness = 'polynomial'" in out.stdout and "needs: one server" in out.stdout
    assert "fedasync" in netemu("--help").stdout


def test_an_installed_plug_in_is_validated_like_a_built_in(fedasync):
    assert netemu("validate", SCENARIO).returncode == 0
    bad = netemu("validate", SCENARIO, "--set", "algorithm.fedasync.alpha=2")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert f"{SCENARIO}: algorithm[1].alpha = 2.0: in (0, 1]" in bad.stderr
    unknown = netemu("validate", SCENARIO, "--set", "algorithm.fedasync.alhpa=0.5")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "algorithm[1].alhpa = 0.5: unknown key; accepted keys here: name, label, alpha, staleness" in unknown.stderr


def test_a_built_in_name_is_found_without_reading_the_installed_plug_ins_and_a_plug_ins_name_with(fedasync, tmp_path):
    plugins.refresh()
    full = plugins.registry()
    for what in ("algorithm", "data", "task", "latency", "loss", "topology"):  # the built-ins, the same objects
        own = plugins.builtin().names(what)
        assert own and all(full.names(what)[name] is spec for name, spec in own.items())
        assert all(plugins.registered(what, name) is spec for name, spec in full.names(what).items())
    assert "fedasync" in full.algorithms and "fedasync" not in plugins.builtin().algorithms
    assert plugins.registered("algorithm", "no-such-thing") is None
    # a scenario of built-ins alone is loaded without the full registry (a scan of every installed
    # distribution's metadata, and every plug-in imported: ~0.1 s of CPU at every `netemu run`)
    code = ("from netemu import plugins; from netemu.scenario import load_scenario; "
            f"load_scenario({str(ROOT / 'scenarios' / 'quickstart.toml')!r}); "
            "print(plugins.registry.cache_info().currsize, plugins.builtin.cache_info().currsize)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == ["0", "1"]
    assert load_scenario(write(tmp_path, name="fedasync")).settings.labels == ["fedasync"]  # a plug-in's: the full registry


def test_an_installed_plug_in_runs_replays_and_plots(fedasync, tmp_path):
    run = netemu("run", SCENARIO, *SMALL, "--quiet", "--out", tmp_path / "run")
    assert run.returncode == 0, run.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["complete"] and set(summary["final"]["fedasync"]) == {"mse", "updates", "staleness"}
    replay = netemu("replay", tmp_path / "run" / "trace.msgpack", "--scenario", SCENARIO, *SMALL, "--quiet", "--out", tmp_path / "again")
    assert replay.returncode == 0, replay.stderr
    assert (tmp_path / "run" / "messages.jsonl").read_bytes() == (tmp_path / "again" / "messages.jsonl").read_bytes()
    plot = netemu("plot", tmp_path / "run", "--metric", "mse", "--out", tmp_path / "mse.png")
    assert plot.returncode == 0 and (tmp_path / "mse.png").stat().st_size > 0


#: dask here repeats what the dask sweep tests check (10-14 s of the default run): `-m slow` runs it
@pytest.mark.parametrize("executor", ["local", pytest.param("dask", marks=pytest.mark.slow)])
def test_an_installed_plug_in_sweeps(fedasync, tmp_path, executor):
    out = netemu("sweep", SCENARIO, "--grid", "algorithm.fedasync.alpha=0.3,0.9", "--set", "run.rounds=3", "--set", "run.runs=1",
                 "--executor", executor, "--workers", "2", "--quiet", "--out", tmp_path / "sweep")
    assert out.returncode == 0, out.stderr
    rows = (tmp_path / "sweep" / "sweep.csv").read_text()
    assert "alpha=0.3" in rows and "alpha=0.9" in rows and "fedasync" in rows


# ----------------------------------------------------------------------- "package.module:attribute"

MODULE = '''
from dataclasses import dataclass

from dataclasses import replace

from netemu import plugins
from netemu.algorithms.base import ONE_SERVER, AlgorithmSpec
from netemu.algorithms.fedavg import SPEC as FEDAVG, FedAvgParams
from netemu.config import require
from netemu.data.base import DataSpec
from netemu.data.synthetic import make_linear, LinearData


@dataclass(frozen=True)
class Params:
    lr: float = 0.05
    local_steps: int = 2
    round_time: float = 10.0

    def __post_init__(self):
        require(self.lr > 0, "lr", "> 0")


def build(world, params, task, rounds):
    FEDAVG.build(world, FedAvgParams(round_time=params.round_time), task, rounds)


ALGORITHM = AlgorithmSpec("my-fedavg", Params, build, roles=("server", "client"), requires=(ONE_SERVER,), task=True)
DATA = DataSpec("my-linear", LinearData, make_linear)
TASK = replace(plugins.task("linear"), name="my-task", datasets=("my-linear",))
NOT_A_SPEC = 42


def _broken_build(*args, **kwargs):
    raise KeyError("a plug-in bug")


BROKEN = AlgorithmSpec("broken", Params, _broken_build, datasets=("linear",), roles=("server", "client"), requires=(ONE_SERVER,))
'''

TEXT = """
[run]
rounds = 3
[topology]
kind = "star"
clients = 3
[data]
kind = "{data}"
[[algorithm]]
name = "{name}"
"""


@pytest.fixture
def my_module(tmp_path, monkeypatch):
    (tmp_path / "my_plugins.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def write(tmp_path, name="my_plugins:ALGORITHM", data="linear", extra=""):
    path = tmp_path / "s.toml"
    path.write_text(TEXT.format(name=name, data=data) + extra)
    return path


def test_a_scenario_names_an_algorithm_as_module_attribute(my_module, tmp_path):
    sc = load_scenario(write(tmp_path))
    assert sc.settings.labels == ["my-fedavg"] and sc.algorithm_params(0).local_steps == 2
    summary = execute(sc, tmp_path / "run", quiet=True)
    assert summary["complete"] and "mse" in summary["final"]["my-fedavg"]


def test_a_plug_in_whose_build_raises_stops_the_run_with_one_line_and_an_incomplete_folder(my_module, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(write(tmp_path, name="my_plugins:BROKEN")), "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "building 'broken' for run 0 failed (" in err and "my_plugins.py:" in err and "KeyError" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and "KeyError" in summary["failure"]


def test_a_scenario_names_a_data_kind_and_a_task_as_module_attribute(my_module, tmp_path):
    path = write(tmp_path, data="my_plugins:DATA", extra='[task]\nname = "my_plugins:TASK"\n')
    sc = load_scenario(path, ["data.dim=3"])
    assert build_world(sc, 0, 0).actors["server"].w.shape == (3,)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, ["data.dimm=3"])
    assert [(i.key, i.value) for i in info.value.issues] == [("data.dimm", 3)]
    with pytest.raises(ScenarioError) as info:  # a data kind of a plug-in has no default task
        load_scenario(write(tmp_path, name="fedavg", data="my_plugins:DATA"))
    assert [i.key for i in info.value.issues] == ["task"] and "has no default one" in info.value.issues[0].accepts
    with pytest.raises(ScenarioError) as info:  # the built-in linear task does not learn it
        load_scenario(write(tmp_path, name="fedavg", data="my_plugins:DATA", extra='[task]\nname = "linear"\n'))
    assert [(i.key, i.value) for i in info.value.issues] == [("task.name", "linear")]


def test_a_module_attribute_plug_in_gets_parameter_errors_with_file_key_value(my_module, tmp_path):
    for override, key, value, accepts in [("algorithm.lr=-1", "algorithm[0].lr", -1, "> 0"),
                                          ("algorithm.steps=3", "algorithm[0].steps", 3,
                                           "unknown key; accepted keys here: name, label, lr, local_steps, round_time")]:
        with pytest.raises(ScenarioError) as info:
            load_scenario(write(tmp_path), [override])
        (issue,) = info.value.issues
        assert (issue.file, issue.key, issue.value) == (str(tmp_path / "s.toml"), key, value) and issue.accepts.startswith(accepts)


@pytest.mark.parametrize("name, says", [
    ("my_plugins:MISSING", "AttributeError"),
    ("no_such_package.mod:SPEC", "ModuleNotFoundError"),
    ("my_plugins:NOT_A_SPEC", "expected a AlgorithmSpec"),
    ("my_plugins:DATA", "expected a AlgorithmSpec"),
])
def test_a_module_attribute_that_is_not_an_algorithm_is_refused(my_module, tmp_path, name, says):
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, name=name))
    (issue,) = info.value.issues
    assert (issue.key, issue.value) == ("algorithm[0].name", name) and says in issue.accepts


def test_an_unknown_name_lists_what_is_registered(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, name="fedavgg"))
    (issue,) = info.value.issues
    assert issue.key == "algorithm[0].name" and "one of fedavg, " in issue.accepts and "package.module:attribute" in issue.accepts


# ----------------------------------------------------------------------- entry points that fail


@pytest.fixture
def installed(tmp_path):
    """Installs a distribution with the given entry points (a dist-info folder on sys.path)
    for one test, and reads the registry again after it."""
    added = []

    def install(entry_points: str, module: str = "") -> None:
        info = tmp_path / "fake_plugin-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugin\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
        if module:
            (tmp_path / "fake_plugin.py").write_text(module)
        sys.path.insert(0, str(tmp_path))
        added.append(str(tmp_path))
        plugins.refresh()

    yield install
    for path in added:
        sys.path.remove(path)
    sys.modules.pop("fake_plugin", None)
    plugins.refresh()


def fake_lines() -> list[str]:
    """The registry's complaints about this test's plug-in (a plug-in installed by another
    test during this process may also be listed: its editable path is not on sys.path here)."""
    return [line for line in plugins.registry().broken if "fake_plugin" in line]


def test_a_plug_in_that_fails_to_import_is_named_with_its_exception(installed, tmp_path, capsys):
    installed("[netemu.algorithms]\nbroken = fake_plugin:SPEC\n", "raise RuntimeError('needs a GPU')\n")
    (line,) = fake_lines()
    assert line == "entry point broken = 'fake_plugin:SPEC' (netemu.algorithms): RuntimeError: needs a GPU"
    assert "fedavg" in plugins.registry().algorithms  # the others still load
    assert main(["algorithms"]) == 2
    err = capsys.readouterr().err
    assert "plug-in not loaded: entry point broken" in err and "Traceback" not in err
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, name="broken"))
    assert "plug-ins that failed to load: entry point broken = 'fake_plugin:SPEC'" in info.value.issues[0].accepts


def test_a_plug_in_cannot_take_a_built_in_name(installed):
    installed("[netemu.algorithms]\nmine = fake_plugin:SPEC\n",
              "from netemu.algorithms.fedavg import SPEC as FEDAVG\nfrom dataclasses import replace\nSPEC = replace(FEDAVG, doc='mine')\n")
    assert plugins.registry().algorithms["fedavg"].doc != "mine"
    (line,) = fake_lines()
    assert "algorithm 'fedavg' is already registered by entry point fedavg = 'netemu.algorithms.fedavg:SPECS'" in line


def test_an_entry_point_to_something_else_is_refused(installed):
    installed("[netemu.data]\nodd = fake_plugin:THING\n", "THING = {'name': 'odd'}\n")
    (line,) = fake_lines()
    assert line.endswith("expected a DataSpec (or a list of them), got dict")


# ----------------------------------------------------------------------- link models and topologies

BUILT_IN_LATENCY = ["constant", "uniform", "exponential", "lognormal", "empirical", "rounds", "normal", "pareto", "paretonormal"]
BUILT_IN_LOSS = ["bernoulli", "gilbert_elliott"]
BUILT_IN_TOPOLOGIES = ["star", "multi_server", "random_peers", "geometric", "graphml"]


def test_the_built_in_link_models_and_topologies_are_listed_by_the_registry():
    reg = plugins.registry()
    assert sorted(reg.latency) == sorted(BUILT_IN_LATENCY) and sorted(reg.loss) == sorted(BUILT_IN_LOSS)
    assert sorted(reg.topologies) == sorted(BUILT_IN_TOPOLOGIES)
    assert reg.origin[("latency model", "paretonormal")] == "entry point paretonormal = 'netemu.engine.net.impairments:NetemParetoNormal' (netemu.links)"
    assert reg.origin[("topology", "star")] == "entry point star = 'netemu.scenario.topologies:STAR' (netemu.topologies)"
    assert not [line for line in reg.broken if "netemu.links" in line or "netemu.topologies" in line]


def test_the_registry_holds_what_pyproject_declares():
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert sorted(declared["netemu.links"]) == sorted(BUILT_IN_LATENCY + BUILT_IN_LOSS)
    assert sorted(declared["netemu.topologies"]) == sorted(BUILT_IN_TOPOLOGIES)
    reg = plugins.registry()
    for group, what in (("netemu.links", ("latency model", "loss model")), ("netemu.topologies", ("topology",))):
        for name, value in declared[group].items():
            assert any(reg.origin.get((w, name)) == f"entry point {name} = {value!r} ({group})" for w in what), name


def test_netemus_own_entry_points_come_from_its_source_tree_when_the_installed_metadata_is_stale(monkeypatch):
    # an editable install made before an entry point was added (or PYTHONPATH at another checkout)
    stale = list(importlib.metadata.entry_points(group="netemu.algorithms"))
    monkeypatch.setattr(plugins, "entry_points", lambda: importlib.metadata.EntryPoints(stale))
    try:
        reg = plugins.refresh()
        assert "paretonormal" in reg.latency and "star" in reg.topologies and not reg.broken
        monkeypatch.setattr(plugins, "_own_declared", lambda: None)  # an installed wheel, no source tree
        reg = plugins.refresh()
        assert not reg.latency and "netemu's own netemu.links entry points are not installed: reinstall netemu (pip install -e .)" in reg.broken
    finally:
        monkeypatch.undo()
        plugins.refresh()


NETWORK_MODULE = '''
import networkx as nx

from netemu.engine.net.impairments import Latency, Loss
from netemu.plugins import TopologySpec
from netemu.scenario.schema import REQUIRED, Field


class Spiky(Latency):
    """`base`, and `spike` more with probability `p` (keyed draws: a pure function of the message's keys)."""

    __slots__ = ("base", "spike", "p")

    def __init__(self, base: float, spike: float, p: float = 0.1) -> None:
        if not (base >= 0 and spike >= 0 and 0 <= p <= 1):
            raise ValueError(f"spiky delay needs base, spike >= 0 and p in [0, 1], got base={base}, spike={spike}, p={p}")
        self.base, self.spike, self.p = base, spike, p

    def sample(self, draws, round, index):
        return self.base + (self.spike if draws.uniform(round, index, "latency") < self.p else 0.0)


def ring(params, streams):
    g = nx.DiGraph()
    g.add_node("server", role="server")
    names = [f"client-{i}" for i in range(params["clients"])]
    for name in names:
        g.add_node(name, role="client", server="server")
        g.add_edge(name, "server", link_class="uplink")
        g.add_edge("server", name, link_class="downlink")
    for a, b in zip(names, names[1:] + names[:1]):
        g.add_edge(a, b, link_class="peer")
    return g


def _even(params, key, issues):
    if params["clients"] % 2:
        issues.add(f"{key}.clients", params["clients"], "an even number")


RING = TopologySpec("ring", {"clients": Field(int, REQUIRED, lambda v: v >= 2, ">= 2")}, ring, doc="clients in a ring", check=_even)
BUGGY = TopologySpec("buggy", {"clients": Field(int)}, lambda params, streams: params["servers"])
UNDIRECTED = TopologySpec("undirected", {"clients": Field(int)}, lambda params, streams: nx.path_graph(params["clients"]))
LOSSES = {"never": Loss}
NOT_A_MODEL = 42
'''

NETWORK_TEXT = """
[run]
rounds = 3
[topology]
kind = "{kind}"
clients = {clients}
[links.uplink]
latency = {latency}
[nodes]
speed = 1e9
[data]
kind = "linear"
[[algorithm]]
name = "fedavg"
round_time = 5.0
"""


@pytest.fixture
def my_network(tmp_path, monkeypatch):
    (tmp_path / "my_network.py").write_text(NETWORK_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("my_network", None)


def network(tmp_path, kind="my_network:RING", clients=4, latency='{ model = "my_network:Spiky", base = 0.5, spike = 2.0, p = 0.25 }'):
    path = tmp_path / "s.toml"
    path.write_text(NETWORK_TEXT.format(kind=kind, clients=clients, latency=latency))
    return path


def test_a_scenario_uses_its_own_latency_model_and_topology_as_module_attribute(my_network, tmp_path):
    sc = load_scenario(network(tmp_path))
    world = build_world(sc, 0, 0)
    assert ("client-3", "client-0") in world.network.graph.edges  # the ring's closing edge
    assert type(world.network.link("client-0", "server").latency).__name__ == "Spiky"
    summary = execute(sc, tmp_path / "run", quiet=True)
    assert summary["complete"]
    records = [json.loads(line) for line in (tmp_path / "run" / "messages.jsonl").read_text().splitlines()]
    up = [r["delay"] for r in records if r["event"] == "deliver" and r["dst"] == "server"]
    assert len(up) == 3 * 4 and set(up) == {0.5, 2.5}  # every client's update of every round, some spiked


def test_a_module_attribute_topology_checks_its_fields(my_network, tmp_path):
    for clients, accepts in [(1, "expected an integer >= 2"), (5, "an even number")]:
        with pytest.raises(ScenarioError) as info:
            load_scenario(network(tmp_path, clients=clients))
        (issue,) = info.value.issues
        assert (issue.key, issue.value, issue.accepts) == ("topology.clients", clients, accepts)


@pytest.mark.parametrize("kind, says", [
    ("my_network:BUGGY", "topology 'buggy': build(params, streams) raised KeyError: 'servers'"),
    ("my_network:UNDIRECTED", "topology 'undirected': build(params, streams) returned Graph, expected a networkx DiGraph"),
])
def test_a_topology_whose_build_fails_is_reported_without_a_traceback(my_network, tmp_path, kind, says):
    with pytest.raises(ScenarioError) as info:
        load_scenario(network(tmp_path, kind=kind))
    (issue,) = info.value.issues
    assert issue.key == "topology" and issue.accepts == says


def test_a_module_attribute_latency_model_gets_parameter_errors_with_key_and_range(my_network, tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(network(tmp_path, latency='{ model = "my_network:Spiky", base = 0.5, spike = 2.0, q = 1 }'))
    (issue,) = info.value.issues
    assert issue.key == "links.uplink.latency.q" and issue.accepts.endswith("accepted: base, spike, p")
    with pytest.raises(ScenarioError) as info:
        load_scenario(network(tmp_path, latency='{ model = "my_network:Spiky", base = 0.5, spike = -2.0 }'))
    assert "spiky delay needs base, spike >= 0" in info.value.issues[0].accepts


@pytest.mark.parametrize("where, latency, kind, says", [
    ("links.uplink.latency.model", '{ model = "my_network:NOT_A_MODEL" }', "star",
     "naming a latency model: 'my_network:NOT_A_MODEL': expected a subclass of netemu.engine.net.impairments.Latency, got int"),
    ("links.uplink.latency.model", '{ model = "my_network:Loss" }', "star", "expected a subclass of netemu.engine.net.impairments.Latency, got the class Loss"),
    ("links.uplink.latency.model", '{ model = "my_network:Missing" }', "star", "AttributeError"),
    ("topology.kind", '{ model = "constant" }', "my_network:Spiky", "expected a TopologySpec (or a list of them), got type"),
])
def test_a_module_attribute_that_is_not_a_link_model_or_topology_is_refused(my_network, tmp_path, where, latency, kind, says):
    with pytest.raises(ScenarioError) as info:
        load_scenario(network(tmp_path, kind=kind, latency=latency))
    (issue,) = info.value.issues
    assert issue.key == where and says in issue.accepts


@pytest.mark.parametrize("where, latency, kind, listed", [
    ("links.uplink.latency.model", '{ model = "paretonromal", mean = 0.1, jitter = 0.01 }', "star",
     "one of constant, empirical, exponential, lognormal, normal, pareto, paretonormal, rounds, uniform, "),
    ("topology.kind", '{ model = "constant" }', "ring", "one of geometric, graphml, multi_server, random_peers, star, "),
])
def test_an_unknown_link_model_or_topology_lists_what_is_registered(tmp_path, where, latency, kind, listed):
    with pytest.raises(ScenarioError) as info:
        load_scenario(network(tmp_path, kind=kind, latency=latency))
    (issue,) = info.value.issues
    assert issue.key == where and issue.accepts.startswith(listed) and issue.accepts.endswith('or "package.module:attribute"')


def test_a_links_entry_point_registers_a_class_or_a_dict_of_them(installed):
    installed("[netemu.links]\nspiky = fake_plugin:Spiky\nmine = fake_plugin:MODELS\n",
              "from netemu.engine.net.impairments import Bernoulli, Constant\nclass Spiky(Constant): pass\n"
              "MODELS = {'flat': Constant, 'coin': Bernoulli}\n")
    reg = plugins.registry()
    assert reg.latency["spiky"].__name__ == "Spiky" and reg.latency["flat"].__name__ == "Constant" and reg.loss["coin"].__name__ == "Bernoulli"
    assert reg.origin[("loss model", "coin")] == "entry point mine = 'fake_plugin:MODELS' (netemu.links)"
    assert plugins.latency_model("spiky") is reg.latency["spiky"] and not fake_lines()


def test_a_link_or_topology_plug_in_that_fails_to_load_is_reported(installed, tmp_path):
    installed("[netemu.links]\nbad = fake_plugin:NOPE\nodd = fake_plugin:ODD\n[netemu.topologies]\nmesh = fake_plugin:NOPE\n",
              "ODD = {'x': 1}\n")
    assert sorted(fake_lines()) == [
        "entry point bad = 'fake_plugin:NOPE' (netemu.links): AttributeError: module 'fake_plugin' has no attribute 'NOPE'",
        "entry point mesh = 'fake_plugin:NOPE' (netemu.topologies): AttributeError: module 'fake_plugin' has no attribute 'NOPE'",
        "entry point odd = 'fake_plugin:ODD' (netemu.links): expected a subclass of netemu.engine.net.impairments.Latency or "
        "netemu.engine.net.impairments.Loss (or a dict of them by name), got int for 'x'",
    ]
    assert "constant" in plugins.registry().latency  # the others still load
    with pytest.raises(ScenarioError) as info:
        load_scenario(network(tmp_path, kind="star", latency='{ model = "bad" }'))
    assert "plug-ins that failed to load: entry point bad = 'fake_plugin:NOPE'" in info.value.issues[0].accepts


def test_a_link_plug_in_cannot_take_a_built_in_name(installed):
    installed("[netemu.links]\nconstant = fake_plugin:Mine\n", "from netemu.engine.net.impairments import Constant\nclass Mine(Constant): pass\n")
    assert plugins.registry().latency["constant"].__name__ == "Constant"
    (line,) = fake_lines()
    assert "latency model 'constant' is already registered by entry point constant = 'netemu.engine.net.impairments:Constant'" in line
