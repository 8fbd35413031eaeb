"""Hostile inputs, third round: scenario keys that reached the build unchecked, data sources
that are not readable regular files, data budgets counted in the values netemu will hold,
and Flower app folders that do not exist or are FIFOs.  Each is refused by `netemu validate`
and `netemu run` in one clear line (exit 2) naming the key — never a traceback, a hang or a
build failure."""

import contextlib
import gzip
import io
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import time_limit
from netemu.cli import main
from netemu.errors import EXIT_BAD_INPUT
from netemu.scenario import ScenarioError, load_scenario
from test_hostile_inputs import SCENARIO  # the same tiny FedAvg scenario

ROOT = Path(__file__).resolve().parent.parent
DIGITS = """
[run]
name = "digits"
rounds = 1
[topology]
kind = "star"
clients = 2
[data]
kind = "digits_fl"
source = "{source}"
samples = 10
test_samples = 5
[task]
name = "softmax"
epochs = 5
work_per_sample = 0.002
[[algorithm]]
name = "fedpnp-soft"
"""


def cli(args):
    out, err = io.StringIO(), io.StringIO()
    with time_limit(20), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, err.getvalue()


def refused_by_validate_and_run(tmp_path, path, key, *needles, overrides=()):
    """`netemu validate` and `netemu run` both refuse `path` in one line naming `key`, exit 2."""
    sets = [a for o in overrides for a in ("--set", o)]
    for args, prefix in ((["validate", path, *sets], str(path)), (["run", path, *sets, "--quiet", "--out", tmp_path / "out"], "netemu: ")):
        code, err = cli(args)
        assert code == EXIT_BAD_INPUT, err
        assert err.startswith(prefix) and err.count("\n") == 1 and "Traceback" not in err, err
        assert f"{key} = " in err, err
        for needle in needles:
            assert needle in err, err
    assert not (tmp_path / "out").exists()


def issue_of(tmp_path, text, overrides=()):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, overrides)
    assert len(info.value.issues) == 1, str(info.value)
    return info.value.issues[0]


# ------------------------------------------------------------------ keys checked by validate, not by the build


LINK_TABLES = ["links.uplink", "links.downlink", "topology.server_link"]


@pytest.mark.parametrize("where", LINK_TABLES)
@pytest.mark.parametrize(("component", "value"), [("latency", '"constant"'), ("latency", "0.5"), ("loss", '"bernoulli"'),
                                                  ("loss", "0.1"), ("latency", "[1, 2]")])
def test_a_link_model_that_is_not_a_table_is_refused_at_its_key(tmp_path, where, component, value):
    issue = issue_of(tmp_path, SCENARIO, [f"{where}.{component}={value}"])
    assert issue.key == f"{where}.{component}" and f"a table {{model = ..., <parameters>}} naming a {component} model" in issue.accepts


@pytest.mark.parametrize(("table", "selector", "value"), [("topology", "kind", '"star"'), ("topology", "kind", "3"),
                                                          ("data", "kind", '"linear"'), ("task", "name", '"linear"')])
def test_a_named_table_given_as_a_plain_value_is_refused_at_its_key(tmp_path, table, selector, value):
    # `topology = "star"` once reached the topology's parameters as a string and raised AttributeError
    issue = issue_of(tmp_path, SCENARIO, [f"{table}={value}"])
    assert issue.key == table and issue.accepts.startswith(f"expected a table {{{selector} = ..., <parameters>}} naming a")


@pytest.mark.parametrize("key", ["speed", "participation", "completeness"])
@pytest.mark.parametrize("model", ["[1, 2]", "{a = 1}", "3"])
def test_a_node_model_whose_name_is_not_a_string_is_refused_at_its_key(tmp_path, key, model):
    # a list or table there once reached a dict lookup and raised TypeError (unhashable) instead of one line
    issue = issue_of(tmp_path, SCENARIO, [f"nodes.{key}={{model={model}}}"])
    assert issue.key == f"nodes.{key}.model" and "model:" in issue.accepts


@pytest.mark.parametrize("where", ["nodes", "group"])
def test_a_uniform_completeness_without_its_low_bound_is_refused_at_validate(tmp_path, where):
    if where == "group":
        issue = issue_of(tmp_path, SCENARIO + '[[nodes.group]]\nmembers = ["client-1"]\ncompleteness = { model = "uniform", high = 0.9 }\n')
        assert issue.key == "nodes.group[0].completeness"
    else:
        issue = issue_of(tmp_path, SCENARIO, ['nodes.completeness={model="uniform"}'])
        assert issue.key == "nodes.completeness"
    assert "low is required" in issue.accepts


def test_a_uniform_completeness_with_its_low_bound_runs(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    code, err = cli(["run", path, "--quiet", "--out", tmp_path / "out", "--set", 'nodes.completeness={model="uniform",low=0.5}'])
    assert code == 0, err


# ------------------------------------------------------------------ no input slot opens what is not a regular file


def flower_scenario(tmp_path, app_dir):
    text = (ROOT / "scenarios" / "flower_quickstart.toml").read_text()
    lines = [f'app_dir = "{app_dir}"' if line.startswith("app_dir") else line for line in text.splitlines()]
    path = tmp_path / "flower.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("app_dir", ["nonexistent", "fifo"])
def test_a_flower_app_dir_that_is_not_a_folder_is_refused_in_one_line(tmp_path, monkeypatch, app_dir):
    """Named from the scenario's own folder, as a user in it would (`netemu validate flower.toml`):
    the folder is what `netemu run` hashes (a FIFO would block it) and puts first on sys.path."""
    pytest.importorskip("flwr")
    if app_dir == "fifo":
        os.mkfifo(tmp_path / "fifo")
    flower_scenario(tmp_path, app_dir)
    monkeypatch.chdir(tmp_path)
    for args in (["validate", "flower.toml"], ["run", "flower.toml", "--quiet", "--out", tmp_path / "out"]):
        code, err = cli(args)
        assert code == EXIT_BAD_INPUT and err.count("\n") == 1 and "Traceback" not in err, err
        assert "flower.app_dir = " in err or f"in app_dir '{tmp_path / app_dir}'" in err, err  # the key, or the folder a module was looked for in
    assert not (tmp_path / "out").exists()


SOURCES = {
    "/dev/zero": lambda tmp: "/dev/zero",
    "a FIFO": lambda tmp: (os.mkfifo(tmp / "fifo.npz"), "fifo.npz")[1],
    "a text file": lambda tmp: ((tmp / "x.txt").write_text("not data"), "x.txt")[1],
    "a text file named .npz": lambda tmp: ((tmp / "x.npz").write_text("not a zip"), "x.npz")[1],
    "a missing file": lambda tmp: "missing.npz",
    "a folder without IDX files": lambda tmp: ((tmp / "empty").mkdir(), "empty")[1],
}


@pytest.mark.parametrize("what", sorted(SOURCES))
def test_a_data_source_that_is_not_a_readable_npz_or_idx_folder_is_refused_naming_data_source(tmp_path, what):
    path = tmp_path / "d.toml"
    path.write_text(DIGITS.format(source=SOURCES[what](tmp_path)))
    refused_by_validate_and_run(tmp_path, path, "data.source")


# ------------------------------------------------------------------ budgets count the values held, not the file's bytes


def idx(array):
    array = np.asarray(array, dtype=np.uint8)
    return bytes([0, 0, 8, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape) + array.tobytes()


def idx_folder(folder, train=200, test=20, zipped=False):
    """MNIST's four IDX files of random (incompressible) 28 x 28 images."""
    rng = np.random.default_rng(0)
    folder.mkdir()
    for split, n in (("train", train), ("t10k", test)):
        for kind, array in (("images-idx3", rng.integers(0, 256, (n, 28, 28))), ("labels-idx1", np.arange(n) % 10)):
            data = idx(array)
            name = f"{split}-{kind}-ubyte" + (".gz" if zipped else "")
            (folder / name).write_bytes(gzip.compress(data) if zipped else data)
    return folder


@pytest.mark.parametrize("form", ["idx", "idx.gz", "npz"])
def test_a_data_source_is_budgeted_by_the_float64_values_it_will_hold(tmp_path, monkeypatch, form):
    """200 images of 784 values: 156,800 bytes on disk (and decompressed), 1,254,400 bytes as float64."""
    if form == "npz":
        rng = np.random.default_rng(0)
        np.savez(tmp_path / "data.npz", x_train=rng.integers(0, 256, (200, 28, 28), dtype=np.uint8), y_train=np.arange(200) % 10,
                 x_test=rng.integers(0, 256, (20, 28, 28), dtype=np.uint8), y_test=np.arange(20) % 10)
        source = "data.npz"
    else:
        source = idx_folder(tmp_path / "mnist", zipped=form == "idx.gz").name
    path = tmp_path / "d.toml"
    path.write_text(DIGITS.format(source=source))
    monkeypatch.setenv("NETEMU_DATA_BUDGET", "1000000")  # more than the bytes on disk, less than the values held
    refused_by_validate_and_run(tmp_path, path, "data.source", "more than the budget of 1,000,000 bytes", "float64")
    monkeypatch.setenv("NETEMU_DATA_BUDGET", "2000000")
    load_scenario(path)


def test_an_idx_folder_is_budgeted_in_all_not_file_by_file(tmp_path, monkeypatch):
    """Training images 156,800 values (1,254,400 bytes held), test images 78,400 (627,200): each under 1.5 MB, together over."""
    path = tmp_path / "d.toml"
    path.write_text(DIGITS.format(source=idx_folder(tmp_path / "mnist", train=200, test=100).name))
    monkeypatch.setenv("NETEMU_DATA_BUDGET", "1500000")
    refused_by_validate_and_run(tmp_path, path, "data.source", "the four IDX files", "more than the budget of 1,500,000 bytes")


def test_a_shipped_digits_scenario_reading_mnist_idx_files_still_validates(tmp_path):
    shutil.copy(ROOT / "scenarios" / "fedpnp_fig2.toml", tmp_path / "f.toml")
    idx_folder(tmp_path / "mnist", zipped=True)
    load_scenario(tmp_path / "f.toml", ['data.source="mnist"'])


# ------------------------------------------------------------------ an option that selects nothing is refused


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("selection")
    (base / "s.toml").write_text(SCENARIO)
    code, err = cli(["run", base / "s.toml", "--out", base / "run", "--quiet", "--set", "output.plots=false"])
    assert code == 0, err
    return base / "run"


NOTHING = {
    "report --run": (["report", "--run", "99"], "--run 99: no such Monte Carlo run", "runs: 0"),
    "report --algorithm": (["report", "--algorithm", "nosuch"], "--algorithm 'nosuch': no such algorithm", "it has: fedavg"),
    "report --target": (["report", "--target", "nosuch=1"], "--target nosuch=1: no metric 'nosuch'", "metrics: mse"),
    "report --actors": (["report", "--actors", "zzz*"], "--actors 'zzz*': matches no actor", ""),
    "log timeline --actors": (["log", "timeline", "--actors", "nobody"], "--actors nobody: no such actor", ""),
    "log summary --algorithm": (["log", "summary", "--algorithm", "nosuch"], "--algorithm 'nosuch': no record", ""),
    "log summary --run": (["log", "summary", "--run", "9"], "--run 9: no record", ""),
}
SOMETHING = {
    "report": ["report", "--run", "0", "--algorithm", "fedavg", "--target", "mse=0.5", "--actors", "server,client-1"],
    "log timeline": ["log", "timeline", "--actors", "server", "client-1"],
    "log summary": ["log", "summary", "--algorithm", "fedavg", "--run", "0"],
}


def with_folder(args, folder, out):
    """`args` with the run folder after the command (and --out for those that write a file)."""
    n = 2 if args[0] == "log" else 1
    writes = args[0] == "report" or args[:2] == ["log", "timeline"]
    return [*args[:n], folder, *args[n:], *(["--out", out] if writes else [])]


@pytest.mark.parametrize("option", sorted(NOTHING))
def test_a_report_or_log_option_that_selects_nothing_is_refused_in_one_line(run_folder, tmp_path, option):
    args, said, has = NOTHING[option]
    code, err = cli(with_folder(args, run_folder, tmp_path / "out.file"))
    assert code == EXIT_BAD_INPUT and err.startswith(f"netemu: {said}") and err.count("\n") == 1, err
    assert has in err
    assert not (tmp_path / "out.file").exists()  # no empty page, no empty chart


@pytest.mark.parametrize("command", sorted(SOMETHING))
def test_the_same_options_selecting_something_are_accepted(run_folder, tmp_path, command):
    code, err = cli(with_folder(SOMETHING[command], run_folder, tmp_path / "out.png"))
    assert code == 0, err


@pytest.mark.parametrize("command", [["plot", "--metric", "mse"], ["log", "timeline"]])
def test_an_image_out_of_a_format_matplotlib_cannot_write_is_one_clear_line(run_folder, tmp_path, command):
    n = 2 if command[0] == "log" else 1
    code, err = cli([*command[:n], run_folder, *command[n:], "--out", tmp_path / "image.file"])
    assert code == EXIT_BAD_INPUT and err.startswith("netemu: --out ") and err.count("\n") == 1, err
    assert "Format 'file' is not supported" in err and "png" in err


# ------------------------------------------------------------------ under --log-format json, every line on stderr is JSON


def json_only(err):
    import json

    lines = err.splitlines()
    assert lines, "nothing on stderr"
    return [json.loads(line) for line in lines]  # raises on any line that is not JSON


def test_a_python_warning_during_a_run_is_a_json_event_under_log_format_json(tmp_path):
    import warnings

    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    saved = warnings.formatwarning
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # a warning seen earlier in this process is shown again
            warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
                warnings.formatwarning(message, category, filename, lineno, line))  # as Python prints it, not recorded by pytest
            code, err = cli(["--log-format", "json", "run", path, "--quiet", "--out", tmp_path / "out", "--set", "task.lr=1e200"])
    finally:
        warnings.formatwarning = saved
    assert code == 0, err
    events = json_only(err)
    overflow = [e for e in events if e["event"] == "warning" and e.get("category") == "RuntimeWarning"]
    import inspect

    from netemu.kernels import linear

    body, first = inspect.getsourcelines(linear.gradient_steps)  # the step's line, where the overflow is raised
    step = first + next(i for i, text in enumerate(body) if "w = w - lr" in text)
    assert overflow and "overflow" in overflow[0]["text"] and overflow[0]["source"].endswith(f"netemu/kernels/linear.py:{step}")


@pytest.mark.parametrize(("args", "command"), [(["--log-format", "json", "run", "--bogus"], "run: "),
                                               (["run", "--log-format=json"], "run: "),
                                               (["--log-format", "json", "log", "summary"], "log summary: "),
                                               (["--log-format", "json", "nosuchcommand"], "")])
def test_an_argument_error_under_json_prints_one_json_error_event(capsys, args, command):
    with pytest.raises(SystemExit) as exit:
        main(args)
    assert exit.value.code == EXIT_BAD_INPUT
    [error] = json_only(capsys.readouterr().err)
    assert (error["event"], error["error"], error["exit_code"]) == ("error", "ArgumentError", 2)
    assert error["text"].startswith(f"netemu: {command}")


def test_a_bad_log_format_is_one_line_without_the_usage(capsys):
    with pytest.raises(SystemExit):
        main(["--log-format", "xml", "algorithms"])
    err = capsys.readouterr().err
    assert err == "netemu: argument --log-format: invalid choice: 'xml' (choose from 'text', 'json')\n"


# ------------------------------------------------------------------ a script's failure is reported as an actor's is


EVENT_SCRIPT = """
def setup(world):
    def reroute():
        raise ValueError("no such route")
    world.at(0.5, reroute)
"""


def test_an_error_in_a_scripted_event_stops_the_run_naming_the_script_function_and_virtual_time(tmp_path):
    (tmp_path / "events.py").write_text(EVENT_SCRIPT)
    path = tmp_path / "s.toml"
    path.write_text('script = "events.py"\n' + SCENARIO)
    code, err = cli(["run", path, "--quiet", "--out", tmp_path / "out"])
    assert code == 1 and "Traceback" not in err, err
    stopped = next(line for line in err.splitlines() if line.startswith("netemu: the emulation stopped: "))
    assert "setup.<locals>.reroute()" in stopped and f"{tmp_path / 'events.py'}:4" in stopped, stopped
    assert "at virtual time 0.5: ValueError: no such route" in stopped
    import json

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["complete"] is False and "reroute" in summary["stopped_by"] and "no such route" in summary["failure"]
    assert (tmp_path / "out" / "messages.jsonl").stat().st_size > 0  # what was logged before stays


# ------------------------------------------------------------------ long router chains


def chain_graphml(path, routers):
    """server - r0 - r1 - ... - r{n-1} - client-0, client-1: routers + 1 links between the server and a client."""
    nodes = ['<node id="server"><data key="role">server</data></node>'] + [
        f'<node id="client-{i}"><data key="role">client</data></node>' for i in range(2)] + [
        f'<node id="r{i}"><data key="role">router</data></node>' for i in range(routers)]
    edges = ['<edge source="server" target="r0"/>'] + [f'<edge source="r{i}" target="r{i + 1}"/>' for i in range(routers - 1)] + [
        f'<edge source="r{routers - 1}" target="client-{i}"/>' for i in range(2)]
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
                    '<key id="role" for="node" attr.name="role" attr.type="string"/>\n<graph edgedefault="undirected">\n'
                    + "\n".join(nodes + edges) + "\n</graph>\n</graphml>\n")


def chain_scenario(tmp_path, routers):
    chain_graphml(tmp_path / "chain.graphml", routers)
    path = tmp_path / "chain.toml"
    path.write_text(SCENARIO.replace('kind = "star"\nclients = 3', 'kind = "graphml"\nfile = "chain.graphml"'))
    return path


def test_actors_more_than_64_hops_apart_are_refused_at_topology_file(tmp_path):
    from netemu.scenario.crosscheck import MAX_HOPS

    refused_by_validate_and_run(tmp_path, chain_scenario(tmp_path, MAX_HOPS), "topology.file", f"at most {MAX_HOPS} hops apart",
                                f"would cross {MAX_HOPS + 1} links")


def test_actors_64_hops_apart_run(tmp_path):
    code, err = cli(["run", chain_scenario(tmp_path, 63), "--quiet", "--out", tmp_path / "out", "--set", "output.plots=false"])
    assert code == 0, err


@pytest.mark.slow  # ~12 s, most of it reading the GraphML file
def test_a_chain_of_50000_routers_is_refused_in_one_line_within_seconds(tmp_path):
    """It ran past 120 s; the route search scanned every searched router at every step (quadratic)."""
    path = chain_scenario(tmp_path, 50_000)
    code, err = cli(["validate", path])  # cli's time limit: 20 s
    assert code == EXIT_BAD_INPUT and err.count("\n") == 1 and "would cross 50001 links" in err, err


def test_a_route_through_a_long_chain_costs_linear_time():
    import time

    from netemu.engine.net.routing import Routes

    n = 30_000
    succ = {"a": ["r0"], **{f"r{i}": [f"r{i - 1}", f"r{i + 1}"] for i in range(1, n - 1)}, "r0": ["a", "r1"],
            f"r{n - 1}": [f"r{n - 2}", "b"], "b": [f"r{n - 1}"]}
    roles = {"a": "peer", "b": "peer", **{f"r{i}": "router" for i in range(n)}}
    start = time.perf_counter()
    path = Routes(succ, roles).path("a", "b")
    assert path == ("a", *(f"r{i}" for i in range(n)), "b")
    assert time.perf_counter() - start < 5  # a quadratic search takes minutes here; a linear one tens of milliseconds
