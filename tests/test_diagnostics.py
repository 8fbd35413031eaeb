"""netemu's own diagnostics: `--log-format text` prints the lines people read, as before;
`--log-format json` prints every event — a run's lifecycle, progress, warnings, errors — as
one JSON object per line on stderr, and nothing else there."""

import json
import warnings

import pytest

from netemu.cli import main
from netemu.devicefile import DeviceTraceWarning
from netemu.diagnostics import event, render, using

SCENARIO = """
[run]
name = "tiny"
seed = 4
rounds = 3
runs = 2
[topology]
kind = "star"
clients = 4
[nodes]
speed = 500.0
[data]
kind = "linear"
dim = 3
[[algorithm]]
name = "fedavg"
round_time = 2.0
[[algorithm]]
name = "fedavg"
label = "late"
round_time = 1e-9
"""
NO_PARTICIPANT = "late: no participant in any round (metric participants = 0 throughout: no client took part or answered in time)"


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(SCENARIO)
    return path


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]  # every line an object, or this raises


def test_json_diagnostics_name_every_lifecycle_event_of_a_run(scenario, tmp_path, capsys):
    assert main(["--log-format", "json", "run", str(scenario), "--out", str(tmp_path / "out")]) == 0
    events = json_lines(capsys.readouterr().err)
    names = [e["event"] for e in events]
    assert names[0] == "run.started" and "run.ended" in names
    started = events[0]
    assert (started["scenario"], started["runs"], started["rounds"], started["algorithms"]) == ("tiny", 2, 3, ["fedavg", "late"])
    worlds = [(e["algorithm"], e["run"]) for e in events if e["event"] == "run.algorithm_started"]
    ended = [e for e in events if e["event"] == "run.algorithm_ended"]
    assert worlds == [("fedavg", 0), ("late", 0), ("fedavg", 1), ("late", 1)] == [(e["algorithm"], e["run"]) for e in ended]
    assert all(e["complete"] and e["rounds_done"] == 3 for e in ended)
    end = next(e for e in events if e["event"] == "run.ended")
    assert end["complete"] is True and end["folder"] == str(tmp_path / "out") and end["warnings"] == 1
    assert [e["done"] for e in events if e["event"] == "progress"][-1] == 12
    warning = next(e for e in events if e["event"] == "warning")
    assert warning["level"] == "warning" and warning["text"] == f"netemu: warning: {NO_PARTICIPANT}"
    assert all(e["timestamp"].endswith("Z") for e in events)


def test_the_format_may_also_follow_the_command(scenario, tmp_path, capsys):
    assert main(["run", str(scenario), "--out", str(tmp_path / "out"), "--quiet", "--log-format", "json"]) == 0
    assert [e["event"] for e in json_lines(capsys.readouterr().err)][0] == "run.started"
    assert main(["log", "summary", str(tmp_path / "none"), "--log-format", "json"]) == 2
    assert [e["event"] for e in json_lines(capsys.readouterr().err)] == ["error"]


def test_text_diagnostics_are_the_lines_people_read_and_no_lifecycle(scenario, tmp_path, capsys):
    assert main(["run", str(scenario), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "netemu: tiny: 0/12 rounds (0 %)",
        "netemu: tiny: 12/12 rounds (100 %), late run 1",
        f"netemu: warning: {NO_PARTICIPANT}",
    ]


def test_an_error_is_one_line_in_text_and_one_event_in_json(tmp_path, capsys):
    missing = tmp_path / "missing.toml"
    assert main(["run", str(missing)]) == 2
    line = f"netemu: {missing}: (file) = '{missing}': an existing scenario file"
    assert capsys.readouterr().err == line + "\n"
    assert main(["--log-format", "json", "run", str(missing)]) == 2
    [error] = json_lines(capsys.readouterr().err)
    assert (error["event"], error["level"], error["exit_code"], error["text"]) == ("error", "error", 2, line)


def test_an_unknown_format_is_refused_naming_the_accepted_ones(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--log-format", "yaml", "algorithms"])
    assert exit.value.code == 2
    assert "--log-format: invalid choice: 'yaml' (choose from 'text', 'json')" in capsys.readouterr().err


def test_text_escapes_what_json_keeps_as_data(capsys):
    event("warning", "netemu: warning: a \x1b[2J name", level="warning")
    assert capsys.readouterr().err == "netemu: warning: a \\x1b[2J name\n"
    with using("json"):
        event("warning", "netemu: warning: a \x1b[2J name", level="warning")
    assert json_lines(capsys.readouterr().err)[0]["text"] == "netemu: warning: a \x1b[2J name"


def test_a_netemu_python_warning_prints_as_the_chosen_format_and_can_still_be_recorded():
    with using("json"):
        assert json.loads(render("warning", "netemu: warning: trace ended", level="warning"))["text"] == "netemu: warning: trace ended"
    with pytest.warns(DeviceTraceWarning, match="trace ended"):
        warnings.warn("trace ended", DeviceTraceWarning, stacklevel=1)
