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
    plugin.SPEC = AlgorithmSpec("renamed", Params, SPEC.build, datasets=SPEC.datasets, roles=SPEC.roles, requires=SPEC.requires)
    monkeypatch.setitem(sys.modules, "renamed_plugin", plugin)
    sc = load_scenario(write(tmp_path, SCENARIO.replace('name = "fedavg"', 'name = "renamed_plugin:SPEC"')))
    assert sc.settings.algorithms[0].deadlines == (2.0, 1e5)
    assert run_horizon(sc) == 8 * 2e5  # twice the longest declared deadline per round (more than a day)
