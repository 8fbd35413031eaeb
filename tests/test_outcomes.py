"""Honest outcomes: summary.json says how many rounds each run did and why it stopped early;
exit codes tell complete, failed, bad input, incomplete, interrupted and terminated apart;
bad or hostile input ends in one clear line, never a traceback."""

import csv
import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netemu.cli import main
from netemu.errors import EXIT_BAD_INPUT, EXIT_COMPLETE, EXIT_FAILED, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_TERMINATED
from netemu.scenario import ScenarioError, load_scenario
from netemu.scenario.build import DAY, run_horizon
from netemu.trace import Trace

SCENARIO = """
[run]
name = "tiny"
seed = 4
rounds = 8
runs = 2
[topology]
kind = "star"
clients = 4
[links.uplink]
latency = { model = "exponential", mean = 0.3 }
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


def summary(out):
    return json.loads((Path(out) / "summary.json").read_text())


def run(path, out, *args):
    return main(["run", str(path), "--out", str(out), "--quiet", *args])


# ------------------------------------------------------------------ outcome in summary.json


def test_a_complete_run_records_every_round_planned_and_done(tmp_path):
    assert run(write(tmp_path), tmp_path / "out") == EXIT_COMPLETE
    s = summary(tmp_path / "out")
    assert s["complete"] is True and s["stopped_by"] is None and s["rounds_planned"] == 8
    assert s["outcome"]["fedavg"] == [
        {"run": r, "rounds_planned": 8, "rounds_done": 8, "complete": True, "stopped_by": None, "virtual_time": s["virtual_time"]["fedavg"][r]}
        for r in range(2)
    ]


def test_a_server_crash_without_recovery_is_an_incomplete_run_not_a_finished_one(tmp_path, capsys):
    path = write(tmp_path, SCENARIO + '[[nodes.crash]]\nnode = "server"\nat = 5.0\n')
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == EXIT_INCOMPLETE
    s = summary(tmp_path / "out")
    assert s["complete"] is False
    o = s["outcome"]["fedavg"][0]
    done = o["rounds_done"]
    with open(tmp_path / "out" / "metrics.csv") as f:  # rounds with a metric, i.e. finished before the crash
        assert done == len({r["round"] for r in csv.DictReader(f) if r["run"] == "0"}) and 0 < done < 8
    assert o["complete"] is False and o["virtual_time"] == 5.0
    assert f"{done} of 8 rounds" in o["stopped_by"] and "server (at t = 5)" in o["stopped_by"]
    assert s["stopped_by"].startswith(f"fedavg run 0: ended after {done} of 8 rounds: crashed without recovery")
    assert "INCOMPLETE: 2 of 2 run(s) ended early" in capsys.readouterr().out


def test_a_client_crash_is_a_fault_the_algorithm_survives_so_the_run_is_complete(tmp_path):
    path = write(tmp_path, SCENARIO + '[[nodes.crash]]\nnode = "client-1"\nat = 1.0\n')
    assert run(path, tmp_path / "out") == EXIT_COMPLETE
    assert summary(tmp_path / "out")["complete"] is True


def test_run_until_stops_the_run_early_and_says_so(tmp_path, capsys):
    assert run(write(tmp_path), tmp_path / "out", "--set", "run.until=5") == EXIT_INCOMPLETE
    o = summary(tmp_path / "out")["outcome"]["fedavg"][1]
    done = o["rounds_done"]
    assert 0 < done < 8
    assert o == {"run": 1, "rounds_planned": 8, "rounds_done": done, "complete": False,
                 "stopped_by": f"run.until = 5 virtual seconds reached after {done} of 8 rounds", "virtual_time": 5.0}
    assert "INCOMPLETE" in capsys.readouterr().err  # --quiet still says it, in one line


def test_the_horizon_stops_a_run_that_only_waits_and_names_the_waiting_actors(tmp_path):
    # a client that does not take part never answers: the server waits for the round deadline, 1e300 s,
    # far past the horizon (the automatic horizon would allow 2e300 s per round: see the next test)
    args = ["--set", "algorithm.round_time=1e300", "--set", "nodes.participation=0.5", "--runs", "1", "--set", f"run.max_time={8 * DAY}"]
    assert run(write(tmp_path), tmp_path / "out", *args) == EXIT_INCOMPLETE
    o = summary(tmp_path / "out")["outcome"]["fedavg"][0]
    assert o["rounds_done"] == 0 and o["virtual_time"] == 8 * DAY
    assert o["stopped_by"].startswith(f"horizon run.max_time = {8 * DAY:g} virtual seconds reached after 0 of 8 rounds")
    assert "server on recv(kind='update')" in o["stopped_by"]


def test_the_automatic_horizon_is_one_virtual_day_per_round_after_the_last_scheduled_event(tmp_path):
    sc = load_scenario(write(tmp_path, SCENARIO + '[[nodes.crash]]\nnode = "client-1"\nat = 1.0\nrecover = 5000.0\n'))
    assert run_horizon(sc) == 5000.0 + 8 * DAY
    assert run_horizon(load_scenario(write(tmp_path), ["run.max_time=30"])) == 30.0
    assert run_horizon(load_scenario(write(tmp_path), ["algorithm.round_time=100000"])) == 8 * 200000.0  # rounds longer than a day
    assert run_horizon(load_scenario(write(tmp_path), ["run.max_time=inf"])) == float("inf")


def test_the_built_in_algorithms_declare_as_deadlines_the_parameters_once_found_by_name():
    # the automatic horizon used to find deadlines by name; every shipped algorithm (and the example
    # plug-in, when installed) now declares them, and the declared set is what the name rule found
    import dataclasses
    import re

    from netemu.config import deadlines
    from netemu.plugins import registry

    by_name = re.compile(r"(time|timeout|deadline)$")
    for name, spec in registry().algorithms.items():
        named = {f.name for f in dataclasses.fields(spec.params) if by_name.search(f.name)}
        assert set(deadlines(spec.params)) == named, name


def test_the_horizon_reads_declared_deadlines_not_parameter_names(tmp_path, monkeypatch):
    import dataclasses
    import types

    from netemu.algorithms.base import AlgorithmSpec
    from netemu.algorithms.fedavg import SPEC, FedAvgParams
    from netemu.config import deadline

    @dataclasses.dataclass(frozen=True)
    class Params(FedAvgParams):
        wait: float = deadline(1e5)  # a deadline without a deadline's name
        lead_time: float = 1e6  # a name the old rule took, not declared

    plugin = types.ModuleType("renamed_plugin")
    plugin.SPEC = AlgorithmSpec("renamed", Params, SPEC.build, datasets=SPEC.datasets, roles=SPEC.roles, requires=SPEC.requires, task=True)
    monkeypatch.setitem(sys.modules, "renamed_plugin", plugin)
    sc = load_scenario(write(tmp_path, SCENARIO.replace('name = "fedavg"', 'name = "renamed_plugin:SPEC"')))
    assert sc.settings.algorithms[0].deadlines == (2.0, 1e5)
    assert run_horizon(sc) == 8 * 2e5  # twice the longest declared deadline per round (more than a day)


def test_a_run_with_no_participant_warns(tmp_path, capsys):
    assert run(write(tmp_path), tmp_path / "out", "--set", "nodes.participation=0") == EXIT_COMPLETE
    warning = "fedavg: no participant in any round (metric participants = 0 throughout: no client took part or answered in time)"
    assert summary(tmp_path / "out")["warnings"] == [warning]
    assert f"netemu: warning: {warning}" in capsys.readouterr().err


def test_a_run_that_delivered_nothing_warns(tmp_path):
    text = SCENARIO + '[links.downlink]\nloss = { model = "bernoulli", p = 1.0 }\n[links.uplink.loss]\nmodel = "bernoulli"\np = 1.0\n'
    text = text.replace('[links.uplink]\nlatency = { model = "exponential", mean = 0.3 }\n', "")
    assert run(write(tmp_path, text), tmp_path / "out") == EXIT_COMPLETE
    assert any("no message was delivered" in w for w in summary(tmp_path / "out")["warnings"])


def test_a_diverging_run_warns_and_its_summary_stays_json(tmp_path):
    assert run(write(tmp_path), tmp_path / "out", "--set", "task.lr=1e155", "--runs", "1") == EXIT_COMPLETE
    text = (tmp_path / "out" / "summary.json").read_text()
    def refuse(token):  # JSON has no NaN or Infinity: a non-finite number is written as null
        raise AssertionError(f"summary.json holds the non-JSON number {token}")

    s = json.loads(text, parse_constant=refuse)
    assert s["final"]["fedavg"]["mse"] is None
    assert "fedavg: the final value of mse is nan" in s["warnings"]


def test_an_infinite_final_metric_warns_too():
    from netemu.run.outcome import run_warnings

    messages = {"sent": 4, "delivered": 4, "dropped": 0}
    assert run_warnings("fedavg", messages, {"fedavg": {"mse": math.inf, "acc": 0.5}}, []) == ["fedavg: the final value of mse is inf"]


def test_an_algorithms_requirement_is_refused_before_anything_runs(tmp_path, capsys):
    """PAO-Fed declares run.rounds <= data.iterations (issue 14): validate refuses it, so no folder is started."""
    assert main(["run", str(Path(__file__).parent.parent / "scenarios" / "paofed_fig4_2a.toml"), "--out", str(tmp_path / "o"),
                 "--quiet", "--runs", "1", "--set", "run.rounds=3000"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "run.rounds = 3000" in err and "needs run.rounds <= data.iterations" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ exit codes


def test_help_lists_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for code in ("0    complete", "1    failed", "2    bad input", "3    incomplete", "130  interrupted", "143 terminated"):
        assert code in out


def test_the_exit_codes_are_distinct():
    assert len({EXIT_COMPLETE, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_TERMINATED}) == 6


# ------------------------------------------------------------------ signals


@pytest.mark.parametrize(("sig", "code", "reason"), [(signal.SIGTERM, EXIT_TERMINATED, "terminated (SIGTERM)"),
                                                     (signal.SIGINT, EXIT_INTERRUPTED, "interrupted (Ctrl-C)")])
def test_a_signal_leaves_a_closed_incomplete_folder_and_one_line(tmp_path, sig, code, reason):
    path = write(tmp_path, SCENARIO.replace("rounds = 8", "rounds = 10000000").replace("runs = 2", "runs = 1"))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "netemu.cli", "run", str(path), "--out", str(out), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "messages.jsonl"
    for _ in range(600):  # until the emulation is under way (at most 60 s)
        if log.exists() and log.stat().st_size > 20_000:
            break
        time.sleep(0.1)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.strip().count("\n") == 0 and "Traceback" not in err and "never retrieved" not in err
    s = summary(out)
    assert s["complete"] is False and s["stopped_by"] == reason
    assert s["outcome"]["fedavg"][0]["stopped_by"] == reason and 0 < s["outcome"]["fedavg"][0]["rounds_done"] < 10000000
    assert Trace.read(out / "trace.msgpack").complete is False  # closed with its end marker
    assert log.read_bytes().endswith(b"\n")


# ------------------------------------------------------------------ scripts are code (issue 19)


def scripted(tmp_path, body):
    (tmp_path / "events.py").write_text(body)
    return write(tmp_path, 'script = "events.py"\n' + SCENARIO)


def test_validate_never_executes_a_scenario_script(tmp_path, capsys):
    marker = tmp_path / "executed"
    path = scripted(tmp_path, f"open({str(marker)!r}, 'w').close()\ndef setup(world):\n    pass\n")
    assert main(["validate", str(path)]) == 0
    assert not marker.exists()
    assert "not executed by validate" in capsys.readouterr().out


def test_run_prints_the_script_it_executes_with_its_hash(tmp_path, capsys):
    import hashlib

    path = scripted(tmp_path, "def setup(world):\n    pass\n")
    assert run(path, tmp_path / "out") == EXIT_COMPLETE
    digest = hashlib.blake2b((tmp_path / "events.py").read_bytes(), digest_size=16).hexdigest()
    assert f"executes the Python script {(tmp_path / 'events.py').resolve()} (blake2b {digest})" in capsys.readouterr().err


def test_no_scripts_refuses_a_scenario_with_a_script_before_running_it(tmp_path, capsys):
    marker = tmp_path / "executed"
    path = scripted(tmp_path, f"open({str(marker)!r}, 'w').close()\ndef setup(world):\n    pass\n")
    assert run(path, tmp_path / "out", "--no-scripts") == EXIT_BAD_INPUT
    assert not marker.exists() and not (tmp_path / "out").exists()
    assert "refused by --no-scripts" in capsys.readouterr().err


@pytest.mark.parametrize(("body", "where", "what"), [
    ("x = 1\n", "events.py:", "must define `def setup(world):`"),
    ("def setup(world):\n    return (\n", "events.py:2:", "SyntaxError"),
    ("import math\n\ndef setup(world):\n    math.sqrt(-1)\n", "events.py:4:", "setup(world) raised ValueError: math domain error"),
    ("import sys\nsys.exit(3)\n", "events.py:2:", "called sys.exit(3)"),
])
def test_a_broken_script_is_reported_with_its_file_and_line(tmp_path, capsys, body, where, what):
    path = scripted(tmp_path, body)
    assert run(path, tmp_path / "out") == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert where in err and what in err and "Traceback" not in err
    assert summary(tmp_path / "out")["complete"] is False


def test_an_actor_failure_is_one_line_with_the_place_and_the_traceback_goes_to_the_summary(tmp_path, capsys):
    path = scripted(tmp_path, "from netemu import Actor\n\nclass A(Actor):\n    networked = False\n\n    async def run(self):\n"
                              "        await self.sleep(1)\n        1 / 0\n\ndef setup(world):\n    world.add(A('bad'))\n")
    assert run(path, tmp_path / "out") == EXIT_FAILED
    err = capsys.readouterr().err
    assert "actor 'bad' failed at virtual time 1: ZeroDivisionError: division by zero" in err and "events.py:8, in run" in err
    assert "Traceback" not in err
    assert "Traceback" in summary(tmp_path / "out")["failure"]


# ------------------------------------------------------------------ numbers and sizes


@pytest.mark.parametrize(("override", "key"), [
    ('links.downlink.latency={model="constant",delay=inf}', "links.downlink.latency.delay"),
    ('links.uplink.latency={model="lognormal",mu=nan,sigma=0.5}', "links.uplink.latency.mu"),
    ('links.uplink.latency={model="lognormal",mu=inf,sigma=0.5}', "links.uplink.latency.mu"),
    ('links.uplink.latency={model="exponential",mean=inf}', "links.uplink.latency.mean"),
    ("algorithm.round_time=inf", "algorithm[0].round_time"),
    ("task.lr=nan", "task.lr"),
    ("nodes.participation=nan", "nodes.participation"),
    ("run.until=inf", "run.until"),
    ("run.max_time=nan", "run.max_time"),
    ("links.uplink.outages=[[1.0, inf]]", "links.uplink.outages"),
    ('nodes.crash=[{node="server",at=inf}]', "nodes.crash[0].at"),
    ('links.uplink.latency={model="empirical",samples=[0.1,nan]}', "links.uplink.latency.samples"),
])
def test_nan_and_inf_are_refused_where_no_key_documents_them(tmp_path, override, key):
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path), [override])
    assert any(i.key == key for i in info.value.issues), info.value


def test_inf_is_accepted_where_documented_as_no_horizon(tmp_path):
    assert load_scenario(write(tmp_path), ["run.max_time=inf"]).settings.run.max_time == float("inf")


@pytest.mark.parametrize(("seed", "ok"), [(0, True), (2**63 - 1, True), (2**63, False), (2**70, False), (-1, False)])
def test_seeds_are_in_the_documented_range(tmp_path, seed, ok):
    if ok:
        assert load_scenario(write(tmp_path), [f"run.seed={seed}"]).settings.run.seed == seed
    else:
        with pytest.raises(ScenarioError, match="run.seed"):
            load_scenario(write(tmp_path), [f"run.seed={seed}"])


@pytest.mark.parametrize(("override", "message"), [
    ("topology.clients=1000000000", "at most 2,000,000 nodes in all (this topology has 1,000,000,001; a run would need about"),
    ("run.runs=100000000000000000000", "run.runs = 100000000000000000000: expected an integer >= 1 Monte Carlo runs (at most 100,000) (a 64-bit integer"),
    ("run.runs=1000000000", "run.runs = 1000000000: at most 100,000 Monte Carlo runs (a run would need about"),
    ("run.rounds=1000000000000", "run.rounds = 1000000000000: at most 100,000,000 rounds (a run would need about"),
    ("data.dim=1000000000", "a scenario that fits in memory: it would need about"),
])
def test_sizes_are_refused_before_anything_is_allocated(tmp_path, override, message):
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path), [override])
    assert message in str(info.value)


# ------------------------------------------------------------------ files that are not scenarios


@pytest.mark.parametrize(("content", "accepts"), [
    (bytes(range(256)), "a UTF-8 text file (TOML)"),
    ('[run]\nname = "café"\n'.encode("latin-1"), "a UTF-8 text file (TOML)"),
])
def test_a_binary_or_latin1_scenario_is_one_clear_line(tmp_path, capsys, content, accepts):
    path = tmp_path / "s.toml"
    path.write_bytes(content)
    assert main(["validate", str(path)]) == EXIT_BAD_INPUT
    assert accepts in capsys.readouterr().err


def test_a_directory_given_as_scenario_is_one_clear_line(tmp_path, capsys):
    assert main(["run", str(tmp_path), "--quiet"]) == EXIT_BAD_INPUT
    assert "a directory" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["<graphml><node", "<html><body>hello</body></html>", "not xml at all\n"])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_malformed_topology_file_is_one_clear_line(tmp_path, capsys, content, command):
    (tmp_path / "g.graphml").write_text(content)
    path = write(tmp_path, SCENARIO.replace('kind = "star"\nclients = 4', 'kind = "graphml"\nfile = "g.graphml"'))
    args = [command, str(path)] + (["--out", str(tmp_path / "out"), "--quiet"] if command == "run" else [])
    assert main(args) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "g.graphml: not a valid GraphML file" in err and "Traceback" not in err


def test_an_unwritable_run_folder_is_one_clear_line(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert run(write(tmp_path), tmp_path / "file" / "out") == EXIT_BAD_INPUT
    assert "cannot create the run folder" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["x = " + "[" * 100000 + "]" * 100000, "x = " + "{a=" * 5000 + "1" + "}" * 5000,
                                  "[" + ".".join(["a"] * 100000) + "]"])
def test_a_scenario_nested_absurdly_deep_is_refused_not_a_recursion_error(tmp_path, capsys, text):
    assert main(["validate", str(write(tmp_path, text + "\n"))]) == EXIT_BAD_INPUT
    assert "nested at most 32 levels deep" in capsys.readouterr().err


def test_a_huge_bad_value_is_shown_cut_short(tmp_path, capsys):
    assert main(["validate", str(write(tmp_path)), "--set", f"run.rounds=\"{'x' * 100000}\""]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert len(err) < 1000 and "(100,002 characters)" in err


@pytest.mark.parametrize("override", [None, 'topology={kind="graphml",file="/dev/zero"}',
                                      'links.uplink.latency={model="empirical",file="/dev/zero"}', 'devices.file="/dev/zero"'])
def test_a_device_file_instead_of_a_file_is_refused_before_it_is_read(tmp_path, capsys, override):
    """/dev/zero never ends and a FIFO blocks: reading either would hang or fill memory."""
    args = ["validate", "/dev/zero"] if override is None else ["validate", str(write(tmp_path)), "--set", override]
    assert main(args) == EXIT_BAD_INPUT
    assert "/dev/zero: not a regular file (a device, FIFO or socket)" in capsys.readouterr().err
