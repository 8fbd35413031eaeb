"""Hostile inputs, second round: run names that are paths, bytecode caches that run instead of
the hashed source, FIFOs, numbers and nesting that Python's parsers refuse with a traceback,
and values the validator let through to fail later.  Each ends in one clear line (exit 2)
or a validation issue at the key it concerns — never a traceback, a hang or a silent pass."""

import contextlib
import csv
import io
import json
import os
import py_compile
import sys
from pathlib import Path

import pytest

from helpers import time_limit
from netemu.cli import main
from netemu.errors import EXIT_BAD_INPUT, EXIT_COMPLETE
from netemu.scenario import ScenarioError, load_scenario

SCENARIO = """
[run]
name = "tiny"
rounds = 2
[topology]
kind = "star"
clients = 3
[nodes]
speed = 500.0
[data]
kind = "linear"
dim = 3
[[algorithm]]
name = "fedavg"
round_time = 2.0
"""


def write(tmp_path, text=SCENARIO, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def cli(args):
    """(exit code, stdout, stderr) of `netemu ARGS` in this process."""
    out, err = io.StringIO(), io.StringIO()
    with time_limit(20), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def one_clear_line(code, err, *needles, prefix="netemu: "):
    """Exit 2 and one line on stderr (`netemu validate` starts its lines with the file, not `netemu: `)."""
    assert code == EXIT_BAD_INPUT, err
    assert err.startswith(prefix) and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err


# ------------------------------------------------------------------ run.name is a name


BAD_NAMES = ["../../x", "/tmp/netemu-abs", "a/b", "a\\\\b", ".", "..", "x\\u0000y", "x" * 5000, "\\u001b]0;owned\\u0007",
             "\\u001b[31mred", "abc\\u202etxt"]  # TOML escapes: the file holds a NUL, an ESC, a U+202E


@pytest.mark.parametrize("name", BAD_NAMES, ids=lambda n: n[:12])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_run_name_that_is_not_one_printable_path_component_is_refused_at_run_name(tmp_path, monkeypatch, name, command):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, SCENARIO.replace('name = "tiny"', f'name = "{name}"'))
    code, out, err = cli([command, path, *(["--quiet"] if command == "run" else [])])
    one_clear_line(code, err, "run.name", prefix="netemu: " if command == "run" else str(path))
    assert "\x1b" not in err + out and "\u202e" not in err + out
    assert not (tmp_path / "runs").exists() and not Path("/tmp/netemu-abs").exists()


def test_a_run_name_of_100_printable_characters_is_accepted(tmp_path):
    name = "é-" * 50
    sc = load_scenario(write(tmp_path, SCENARIO.replace('name = "tiny"', f'name = "{name}"')))
    assert sc.name == name


def test_the_run_folder_line_escapes_control_characters_of_out(tmp_path):
    out_dir = tmp_path / "a\x1b]0;owned\x07b"
    code, out, err = cli(["run", write(tmp_path), "--out", out_dir])
    assert code == EXIT_COMPLETE, err
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "run folder: " in out and "\\x1b]0;owned\\x07" in out


def test_an_existing_run_folder_with_control_characters_is_named_escaped(tmp_path):
    out_dir = tmp_path / "a\x1b[2Jb"
    out_dir.mkdir()
    code, out, err = cli(["run", write(tmp_path), "--out", out_dir, "--quiet"])
    one_clear_line(code, err, "\\x1b[2J", "already exists")


# ------------------------------------------------------------------ what runs is what is hashed


def stale_bytecode(module: Path, source: str, stale: str) -> None:
    """Write `source` to `module` with a valid-looking cached .pyc in __pycache__ compiled from
    `stale` (same size, same mtime: the import system trusts it)."""
    assert len(source) == len(stale)
    module.write_text(stale)
    py_compile.compile(str(module), doraise=True)  # __pycache__/NAME.cpython-3X.pyc, keyed by mtime and size
    st = module.stat()
    module.write_text(source)
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_stale_pyc_beside_a_scenario_script_does_not_run(tmp_path):
    from netemu.scenario.build import load_script

    script = tmp_path / "script.py"
    stale_bytecode(script, "def setup(world):\n    pass\nOK = 1  \n", "def setup(world):\n    pass\nOK = 1/0\n")
    load_script(script)  # the .py runs: no ZeroDivisionError from the cached bytecode


def test_loading_a_scenario_script_writes_no_bytecode_cache(tmp_path):
    from netemu.scenario.build import load_script

    script = tmp_path / "script.py"
    script.write_text("def setup(world):\n    pass\n")
    load_script(script)
    assert not (tmp_path / "__pycache__").exists()


def test_a_scenario_script_error_still_names_its_file_and_line(tmp_path):
    from netemu.scenario.build import ScriptError, load_script

    script = tmp_path / "script.py"
    script.write_text("def setup(world):\n    pass\nx = 1/0\n")
    with pytest.raises(ScriptError, match=r"script\.py:3: the scenario script raised ZeroDivisionError"):
        load_script(script)


FLOWER_MODULE = """from flwr.serverapp import ServerApp
app = ServerApp()
"""


def flower_dir(tmp_path, pkg="stalepkg"):
    pytest.importorskip("flwr")
    app_dir = tmp_path / "apps"
    (app_dir / pkg).mkdir(parents=True)
    (app_dir / pkg / "__init__.py").write_text("")
    return app_dir


def test_a_stale_pyc_in_a_flower_app_dir_does_not_run(tmp_path):
    from netemu.flower.apps import load_app

    app_dir = flower_dir(tmp_path, "stale_app_a")
    stale_bytecode(app_dir / "stale_app_a" / "server.py", FLOWER_MODULE + "OK = 1  \n", FLOWER_MODULE + "OK = 1/0\n")
    try:
        load_app("stale_app_a.server:app", "ServerApp", app_dir=app_dir)  # the .py: a ServerApp, no ZeroDivisionError
    finally:
        for name in [m for m in sys.modules if m.startswith("stale_app_a")]:
            del sys.modules[name]
    assert not list(app_dir.rglob("*.cpython-*.pyc"))[1:]  # the stale one only: nothing new written


def test_a_pyc_only_module_in_a_flower_app_dir_is_refused(tmp_path):
    from netemu.flower.apps import FlowerAppError, load_app

    app_dir = flower_dir(tmp_path, "stale_app_b")
    module = app_dir / "stale_app_b" / "server.py"
    module.write_text(FLOWER_MODULE)
    py_compile.compile(str(module), cfile=str(module.with_suffix(".pyc")), doraise=True)
    module.unlink()
    with pytest.raises(FlowerAppError, match=r"server\.pyc: compiled Python without its source"):
        load_app("stale_app_b.server:app", "ServerApp", app_dir=app_dir)
    assert "stale_app_b.server" not in sys.modules
    sys.modules.pop("stale_app_b", None)


# ------------------------------------------------------------------ FIFOs are not files


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("args", [["--format", "fedscale", "--availability"], ["--format", "fedscale", "--capacity"],
                                  ["--format", "netemu-csv", "--availability"], ["--format", "netemu-csv", "--capacity"],
                                  ["--format", "flgo", "--availability"]])
def test_devices_import_refuses_a_fifo_without_opening_it(tmp_path, fifo, args):
    code, _, err = cli(["devices", "import", *args, fifo, "--out", tmp_path / "d.json"])
    one_clear_line(code, err, f"{fifo}: not a regular file")


def test_replay_refuses_a_fifo_trace_without_opening_it(tmp_path, fifo):
    code, _, err = cli(["replay", fifo, "--scenario", write(tmp_path), "--out", tmp_path / "out", "--quiet"])
    one_clear_line(code, err, f"{fifo}: not a regular file")


# ------------------------------------------------------------------ numbers and nesting Python's parsers choke on


@pytest.mark.parametrize("where", ["file", "--set"])
def test_an_integer_of_thousands_of_digits_is_one_clear_line(tmp_path, where):
    huge = "1" * 5000  # Python refuses int("1" * 4301) (sys.get_int_max_str_digits)
    text = SCENARIO.replace("rounds = 2", f"rounds = {huge}") if where == "file" else SCENARIO
    path = write(tmp_path, text)
    code, _, err = cli(["validate", path, *(["--set", f"run.rounds={huge}"] if where == "--set" else [])])
    one_clear_line(code, err, "at most 4300 digits", prefix=str(path))
    assert len(err) < 1000
    if where == "--set":
        assert "run.rounds" in err


def test_a_set_value_nested_100000_deep_is_one_clear_line(tmp_path):
    path = write(tmp_path)
    code, _, err = cli(["validate", path, "--set", "run.name=" + "[" * 100_000 + "]" * 100_000])
    one_clear_line(code, err, "run.name", prefix=str(path))
    assert len(err) < 1000


@pytest.mark.parametrize("fmt", ["fedscale", "devices-file"])
def test_a_devices_json_nested_100000_deep_is_one_clear_line(tmp_path, fmt):
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    if fmt == "fedscale":
        code, _, err = cli(["devices", "import", "--format", "fedscale", "--availability", deep, "--out", tmp_path / "d.json"])
        one_clear_line(code, err, "deep.json: not JSON")
    else:
        path = write(tmp_path, f'[devices]\nfile = "{deep}"\n' + SCENARIO)
        code, _, err = cli(["validate", path])
        one_clear_line(code, err, "deep.json: not JSON", prefix=str(path))


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    out = base / "run"
    code, _, err = cli(["run", write(base), "--out", out, "--quiet"])
    assert code == EXIT_COMPLETE, err
    return out


def damaged(run_folder, tmp_path, name, content):
    import shutil

    folder = tmp_path / "damaged"
    shutil.copytree(run_folder, folder)
    (folder / name).write_text(content)
    return folder


DAMAGE = {
    "summary.json": "[" * 5000 + "]" * 5000,
    "metrics.csv": "algorithm,run,round,time,metric,value\n" + "fedavg,0,1,0.5,mse," + "1" * 140_000 + "\n",
    "privacy.csv": "algorithm,run,client,round,rho,rho_total\n" + "fedavg,0,client-1,1," + "1" * 140_000 + ",1\n",
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
@pytest.mark.parametrize("command", ["report", "plot"])
def test_report_and_plot_on_a_damaged_run_folder_are_one_clear_line(run_folder, tmp_path, name, command):
    if command == "plot" and name in ("privacy.csv", "summary.json"):
        pytest.skip("netemu plot reads only metrics.csv")
    folder = damaged(run_folder, tmp_path, name, DAMAGE[name])
    args = ["report", folder, "--out", tmp_path / "r.html"] if command == "report" else \
        ["plot", folder, "--metric", "mse", "--out", tmp_path / "p.png"]
    code, _, err = cli(args)
    one_clear_line(code, err, name)
    assert len(err) < 1000


@pytest.mark.parametrize("content", ["x = " + "[" * 5000 + "]" * 5000, "x = " + "1" * 5000])
def test_a_scenario_toml_python_cannot_parse_is_shown_as_text_in_the_report(run_folder, tmp_path, content):
    """As a malformed scenario.toml is: the report shows the text and reads nothing from it."""
    folder = damaged(run_folder, tmp_path, "scenario.toml", content + "\n")
    code, _, err = cli(["report", folder, "--out", tmp_path / "r.html"])
    assert code == EXIT_COMPLETE and "Traceback" not in err, err


@pytest.mark.parametrize("bound", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("option", ["--since", "--until"])
def test_non_finite_timeline_window_bounds_are_refused(run_folder, tmp_path, bound, option):
    code, _, err = cli(["log", "timeline", run_folder, f"{option}={bound}", "--out", tmp_path / "t.png"])
    one_clear_line(code, err, f"{option} {bound}", "finite")


@pytest.mark.parametrize("bound", ["nan", "inf"])
def test_non_finite_report_window_bounds_are_refused(run_folder, tmp_path, bound):
    code, _, err = cli(["report", run_folder, "--since", bound, "--out", tmp_path / "r.html"])
    one_clear_line(code, err, f"--since {bound}", "finite")


# ------------------------------------------------------------------ silently ignored or misattributed


def issue_of(tmp_path, text, overrides=()):
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, text), overrides)
    assert len(info.value.issues) == 1, str(info.value)
    return info.value.issues[0]


@pytest.mark.parametrize(("src", "dst"), [("client-0", "client-1"), ("server", "server"), ("client-0", "client-0")])
def test_a_link_override_that_is_not_a_link_of_the_topology_is_refused(tmp_path, src, dst):
    issue = issue_of(tmp_path, SCENARIO + f'[[link]]\nsrc = "{src}"\ndst = "{dst}"\nbandwidth = 1e6\n')
    assert issue.key == "link[0]" and f"{src} -> {dst}" in issue.accepts
    assert "client-0 -> server" in issue.accepts  # what exists, from the source


def test_a_link_override_of_a_physical_edge_behind_a_router_is_accepted(tmp_path):
    text = SCENARIO.replace('clients = 3', 'clients = 3\nserver_link = { bandwidth = 1e8 }')
    load_scenario(write(tmp_path, text + '[[link]]\nsrc = "router"\ndst = "server"\nbandwidth = 1e6\n'))
    issue = issue_of(tmp_path, text + '[[link]]\nsrc = "client-0"\ndst = "server"\nbandwidth = 1e6\n')
    assert issue.key == "link[0]" and "client-0 -> router" in issue.accepts


@pytest.mark.parametrize("where", ["nodes.slowdown_sigma", "group"])
def test_a_slowdown_sigma_that_would_overflow_is_refused_at_validate(tmp_path, where):
    if where == "group":
        issue = issue_of(tmp_path, SCENARIO + '[[nodes.group]]\nmembers = ["client-1"]\nslowdown_sigma = 1e6\n')
        assert issue.key == "nodes.group[0].slowdown_sigma"
    else:
        issue = issue_of(tmp_path, SCENARIO, ["nodes.slowdown_sigma=1e6"])
        assert issue.key == "nodes.slowdown_sigma"
    assert "<= 10" in issue.accepts


def test_the_largest_slowdown_sigma_accepted_runs(tmp_path):
    code, _, err = cli(["run", write(tmp_path), "--out", tmp_path / "out", "--quiet", "--set", "nodes.slowdown_sigma=10"])
    assert code in (0, 3), err


GRAPHML = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="role" for="node" attr.name="role" attr.type="string"/>
  <graph edgedefault="undirected">
    <node id="server"><data key="role">server</data></node>
    <node id="a"><data key="role">client</data></node>
    <node id="b"><data key="role">client</data></node>
    <edge source="server" target="a"/><edge source="server" target="b"/>{extra}
  </graph>
</graphml>
"""


def test_a_graphml_self_loop_is_refused_at_topology_file(tmp_path):
    (tmp_path / "g.graphml").write_text(GRAPHML.format(extra='<edge source="b" target="b"/>'))
    text = SCENARIO.replace('kind = "star"\nclients = 3', 'kind = "graphml"\nfile = "g.graphml"')
    issue = issue_of(tmp_path, text)
    assert issue.key == "topology.file" and "self-loop" in issue.accepts and "b -> b" in issue.accepts


def test_a_graphml_star_without_self_loops_is_accepted(tmp_path):
    (tmp_path / "g.graphml").write_text(GRAPHML.format(extra=""))
    load_scenario(write(tmp_path, SCENARIO.replace('kind = "star"\nclients = 3', 'kind = "graphml"\nfile = "g.graphml"')))


# ------------------------------------------------------------------ one problem, one line


def test_validate_prints_one_problem_on_one_line(tmp_path):
    code, _, err = cli(["validate", write(tmp_path), "--set", "run.rounds=0"])
    assert code == EXIT_BAD_INPUT
    assert err.count("\n") == 1 and err.startswith(str(tmp_path / "s.toml")) and "run.rounds = 0" in err


def test_validate_lists_several_problems_under_a_header(tmp_path):
    code, _, err = cli(["validate", write(tmp_path), "--set", "run.rounds=0", "--set", "run.runs=0"])
    assert code == EXIT_BAD_INPUT
    assert err.splitlines()[0] == "2 problems in the scenario:" and err.count("\n") == 3


def test_run_prints_one_problem_on_one_line(tmp_path):
    code, _, err = cli(["run", write(tmp_path), "--set", "run.rounds=0", "--quiet", "--out", tmp_path / "o"])
    one_clear_line(code, err, "run.rounds = 0")


def test_csv_rows_used_above_are_real_run_folder_columns(run_folder):
    with open(run_folder / "metrics.csv", newline="") as f:
        assert next(csv.reader(f)) == DAMAGE["metrics.csv"].splitlines()[0].split(",")
    summary = json.loads((run_folder / "summary.json").read_text())
    assert summary["complete"] is True


@pytest.mark.parametrize("grid", ["run.seed=" + "9" * 5000, "run.seed=1.." + "9" * 5000])
def test_a_sweep_grid_integer_of_thousands_of_digits_is_one_clear_line(tmp_path, grid):
    code, _, err = cli(["sweep", write(tmp_path), "--grid", grid, "--out", tmp_path / "sweep"])
    one_clear_line(code, err, "--grid run.seed")
    assert len(err) < 1000
