"""netemu log summary / filter / diff and netemu plot, on small run folders made here."""

import json

import orjson
import pytest

from netemu.cli import main
from netemu.logtools import LogError, diff, filter_records, summarize

SCENARIO = """
[run]
name = "small"
seed = 2
rounds = 5
runs = 2
[topology]
kind = "star"
clients = 4
[links.uplink]
latency = { model = "constant", delay = 0.5 }
loss = { model = "bernoulli", p = 0.3 }
[nodes]
speed = 1000.0
[[nodes.group]]
members = ["client-3"]
participation = 0.0
[data]
kind = "linear"
dim = 3
[[algorithm]]
name = "fedavg"
round_time = 2.0
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("logs")
    path = base / "s.toml"
    path.write_text(SCENARIO)
    for name, extra in (("a", []), ("b", ["--set", "algorithm.lr=0.5"])):
        assert main(["run", str(path), "--out", str(base / name), "--quiet", *extra]) == 0
    return base


def test_the_summary_counts_every_message_once_per_kind_and_link_class(runs):
    s = summarize(runs / "a")
    up = s["traffic"]["update / uplink"]
    assert up["sent"] == up["delivered"] + up["dropped"] + up["in_flight"] and up["dropped_by_reason"]["loss"] == up["dropped"]
    assert up["delay"]["p50"] == up["delay"]["max"] == pytest.approx(0.5, abs=1e-3)  # constant delay + tiny transmission
    summary = json.loads((runs / "a" / "summary.json").read_text())["messages"]["fedavg"]
    assert sum(t["sent"] for t in s["traffic"].values()) == summary["sent"]


def test_the_summary_reports_participation_and_compute_per_actor(runs):
    actors = summarize(runs / "a")["actors"]
    assert actors["server"]["participation_rate"] == 1.0
    assert "client-3" not in actors  # never participated: never sent, never computed
    assert 0 < actors["client-0"]["participation_rate"] <= 1 and actors["client-0"]["compute_time"] > 0


def test_filter_follows_one_actor_in_one_round(runs):
    recs = list(filter_records(runs / "a", actor="client-1", round=2, run=0))
    assert recs and all("client-1" in (r.get("src"), r.get("dst"), r.get("actor")) and r["round"] == 2 for r in recs)
    times = [r["t"] for r in recs]
    assert times == sorted(times)
    assert list(filter_records(runs / "a", event="drop", since=1e9)) == []


def test_diff_finds_the_first_divergence_of_two_runs(runs):
    d = diff(runs / "a", runs / "b")
    assert not d["identical"] and d["first_difference"]["a"]["event"] == "metric"
    assert d["totals"]["send"]["b_minus_a"] == 0  # same network, same traffic: only the learning differs
    assert diff(runs / "a", runs / "a")["identical"]


def test_the_log_commands_print_and_exit_cleanly(runs, capsys):
    assert main(["log", "summary", str(runs / "a")]) == 0
    assert "update / uplink" in capsys.readouterr().out
    assert main(["log", "filter", str(runs / "a" / "messages.jsonl"), "--kind", "update", "--event", "drop"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(orjson.loads(x)["event"] == "drop" for x in lines)
    assert main(["log", "diff", str(runs / "a"), str(runs / "b")]) == 1
    assert "first difference at line" in capsys.readouterr().out


def test_a_bad_log_names_the_file_and_line(tmp_path, capsys):
    bad = tmp_path / "messages.jsonl"
    bad.write_text('{"t": 0, "event": "send"}\nnot json\n')
    with pytest.raises(LogError, match="messages.jsonl:2"):
        list(filter_records(bad))
    assert main(["log", "summary", str(tmp_path / "nowhere")]) == 2
    assert "no message log" in capsys.readouterr().err


def test_plot_draws_several_run_folders_in_one_figure(runs, tmp_path, capsys):
    out = tmp_path / "mse.svg"
    assert main(["plot", str(runs / "a"), str(runs / "b"), "--metric", "mse", "--out", str(out), "--svg"]) == 0
    text = out.read_text()
    assert "a: fedavg" in text and "b: fedavg" in text
    assert main(["plot", str(runs / "a"), "--metric", "accuracy"]) == 2
    assert "no metric 'accuracy'" in capsys.readouterr().err


def test_timeline_draws_a_png_of_the_chosen_window(runs, tmp_path):
    out = tmp_path / "t.png"
    assert main(["log", "timeline", str(runs / "a"), "--out", str(out), "--since", "0", "--until", "6", "--run", "1"]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
