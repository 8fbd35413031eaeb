"""netemu log summary / filter / diff and netemu plot, on small run folders made here."""

import json
from pathlib import Path

import orjson
import pytest

from netemu.cli import main
from netemu.report.logtools import LogError, diff, filter_records, summarize

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
    for name, extra in (("a", []), ("b", ["--set", "task.lr=0.5"])):
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


# ------------------------------------------------------------------ records of the wrong shape


@pytest.mark.parametrize(
    "line, message",
    [('{"t": 0, "event": "send"}', r"messages.jsonl:2: a 'send' record with no field 'kind'"),
     ('[1, 2]', r"messages.jsonl:2: a record must be a JSON object, got list"),
     ('{"t": "x", "event": "send"}', r"messages.jsonl:2: a record needs a number 't' and a string 'event'"),
     ('{"t": 1, "event": "compute", "actor": "a", "duration": "long"}', r"messages.jsonl:2: a 'compute' record with a field of the wrong type")],
)
def test_records_of_the_wrong_shape_are_one_clear_error(tmp_path, capsys, line, message):
    log = tmp_path / "messages.jsonl"
    log.write_text('{"t": 0, "event": "crash", "actor": "a"}\n' + line + "\n")
    with pytest.raises(LogError, match=message):
        summarize(log)
    assert main(["log", "summary", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_line_longer_than_the_limit_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    from netemu.report import logtools

    monkeypatch.setattr(logtools, "MAX_LINE", 1000)
    log = tmp_path / "messages.jsonl"
    log.write_text('{"t": 0, "event": "crash", "actor": "' + "a" * 5000 + '"}\n')
    with pytest.raises(LogError, match=r"messages.jsonl:1: a line longer than 1000 bytes"):
        list(filter_records(log))


# ------------------------------------------------------------------ summary per run, sorted, streamed


def test_the_summary_gives_per_run_figures_and_filters_by_run(runs):
    s = summarize(runs / "a")
    assert s["runs"] == 2 and set(s["per_run"]) == {"fedavg/0", "fedavg/1"}
    for pr in s["per_run"].values():
        span = pr["virtual_time"]["last"] - pr["virtual_time"]["first"]
        for a in pr["actors"].values():  # a run's compute time never exceeds its span
            assert 0 <= a["compute_time"] <= span + 1e-9 and a["compute_time"] + a["idle_time"] == pytest.approx(span)
    one = summarize(runs / "a", run=1)
    assert one["runs"] == 1 and list(one["per_run"]) == ["fedavg/1"]
    assert one["actors"]["client-0"]["compute_time"] == pytest.approx(s["per_run"]["fedavg/1"]["actors"]["client-0"]["compute_time"])
    assert summarize(runs / "a", algorithm="other")["records"] == 0


def _synthetic_log(path, names):
    recs = []
    for i, name in enumerate(names):
        recs.append({"t": float(i), "event": "send", "id": i, "src": name, "dst": "server", "kind": "update",
                     "round": 0, "bytes": 10, "link": "uplink"})
        recs.append({"t": float(i) + 0.5, "event": "deliver", "id": i, "src": name, "dst": "server", "kind": "update",
                     "round": 0, "bytes": 10, "link": "uplink", "delay": 0.5})
    recs.sort(key=lambda r: r["t"])
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


def test_actors_are_sorted_naturally(tmp_path):
    log = _synthetic_log(tmp_path / "m.jsonl", ["client-10", "client-2", "client-1"])
    assert list(summarize(log)["actors"]) == ["client-1", "client-2", "client-10"]


def test_streaming_quantiles_are_within_one_percent_of_the_exact_order_statistic():
    import numpy as np

    from netemu.report.logtools import Quantiles

    values = np.random.default_rng(7).lognormal(-1.0, 1.5, 20_000)
    q = Quantiles(0.01)
    for v in values:
        q.add(float(v))
    exact = np.sort(values)
    for p in (0.5, 0.9, 0.99):
        ref = exact[int(np.floor(p * (len(values) - 1)))]
        assert abs(q.quantile(p) - ref) <= 0.01 * ref
    assert q.max == values.max() and q.mean == pytest.approx(values.mean())
    assert len(q.buckets) < 2000  # memory: buckets, not values


def test_control_characters_in_names_never_reach_the_terminal_raw(tmp_path, capsys):
    log = _synthetic_log(tmp_path / "m.jsonl", ["evil\x1b[2J\u202e", "client-1"])
    for cmd in (["log", "summary", str(log)], ["log", "filter", str(log), "--table"], ["log", "filter", str(log)]):
        assert main(cmd) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\u202e" not in out and "evil" in out
    assert main(["log", "filter", str(log)]) == 0
    names = {orjson.loads(x).get("src") for x in capsys.readouterr().out.splitlines()}
    assert "evil\x1b[2J\u202e" in names  # the JSON lines still carry the exact name


# ------------------------------------------------------------------ timeline


def test_a_timeline_of_a_long_log_shows_a_readable_window_and_says_so(runs, tmp_path):
    from netemu.report.logtools import timeline

    notes = []
    timeline(runs / "a", tmp_path / "t.png", max_messages=10, notes=notes)
    assert notes and "showing the window up to the 10th send" in notes[0]
    notes = []
    timeline(runs / "a", tmp_path / "t.png", since=0, until=8, max_messages=10, notes=notes)
    assert "drawn aggregated" in notes[0]


def test_timeline_compute_bars_are_clipped_to_the_window(runs, tmp_path, monkeypatch):
    import matplotlib.axes

    from netemu.report.logtools import timeline

    bars = []
    original = matplotlib.axes.Axes.broken_barh
    monkeypatch.setattr(matplotlib.axes.Axes, "broken_barh",
                        lambda self, xr, yr, **kw: bars.append(xr[0]) or original(self, xr, yr, **kw))
    timeline(runs / "a", tmp_path / "t.png", since=1.0, until=3.0)
    assert bars and all(1.0 <= t0 and t0 + d <= 3.0 + 1e-9 for t0, d in bars)


# ------------------------------------------------------------------ plots against virtual time


def test_curves_against_time_hold_each_runs_last_value():
    from netemu.report import curves_time

    rows = [("a", 0, 1, 1.0, "m", 3.0), ("a", 0, 2, 2.0, "m", 2.0), ("a", 0, 3, 3.0, "m", 1.0),
            ("a", 1, 1, 1.5, "m", 4.0), ("a", 1, 2, 3.0, "m", 0.0)]
    t, mean, lo, hi = curves_time(rows, "m")["a"]
    assert t.tolist() == [1.5, 2.0, 3.0]  # from the moment both runs have a value
    assert mean.tolist() == [3.5, 3.0, 0.5] and lo.tolist() == [3.0, 2.0, 0.0] and hi.tolist() == [4.0, 4.0, 1.0]


def test_plot_against_virtual_time_says_what_the_band_is(runs, tmp_path, capsys):
    out = tmp_path / "mse.svg"
    assert main(["plot", str(runs / "a"), str(runs / "b"), "--metric", "mse", "--x", "time", "--out", str(out), "--svg"]) == 0
    text = out.read_text()
    assert "virtual time (s)" in text and "band: min–max over runs" in text and "mean over runs" in text


# ------------------------------------------------------------------ progress off a terminal


def test_progress_off_a_terminal_prints_plain_lines_at_start_now_and_then_and_end():
    import io

    from netemu.run.progress import PlainProgress, progress

    out = io.StringIO()
    with progress(4, label="quickstart", stream=out, interval=0.0) as bar:
        assert isinstance(bar, PlainProgress)
        bar.set_postfix_str("fedavg run 1")
        bar.update(1)
        bar.update(3)
    lines = out.getvalue().splitlines()
    assert lines[0] == "netemu: quickstart: 0/4 rounds (0 %)"
    assert lines[-1] == "netemu: quickstart: 4/4 rounds (100 %), fedavg run 1" and len(lines) == 3
    quiet = io.StringIO()
    with progress(4, quiet=True, stream=quiet) as bar:
        bar.update(4)
    assert quiet.getvalue() == ""


def test_progress_lines_are_paced_by_the_interval():
    import io

    from netemu.run.progress import progress

    out = io.StringIO()
    with progress(1000, label="x", stream=out, interval=3600.0) as bar:
        for _ in range(1000):
            bar.update(1)
    assert len(out.getvalue().splitlines()) == 2  # the start and the end only


def test_the_run_summary_says_final_values_are_means_over_runs(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(SCENARIO)
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "r")]) == 0
    captured = capsys.readouterr()
    assert "final values: each metric's last-round value, mean over 2 Monte Carlo runs" in captured.out
    assert captured.err.splitlines()[-1] == "netemu: small: 10/10 rounds (100 %), fedavg run 1"  # plain progress, no bar


@pytest.mark.parametrize("command", [["plot", "{run}", "--metric", "mse"], ["plot", "{run}", "--metric", "mse", "--x", "time"],
                                     ["log", "timeline", "{run}"]])
def test_an_unwritable_image_is_one_clear_line(runs, tmp_path, capsys, command):
    target = tmp_path / "missing-folder" / "out.png"
    args = [a.format(run=runs / "a") for a in command] + ["--out", str(target)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{target}: cannot write" in err


def test_progress_counts_the_rounds_done_when_an_algorithm_numbers_its_rounds_from_1(tmp_path, capsys):
    # graphfl's round 0 is the statistics exchange; its metrics are rounds 1..T.  The bar once
    # ticked for round 0 too and ended at "10/8 rounds (125 %)".
    scenario = Path(__file__).parent.parent / "scenarios" / "graphfl_stragglers.toml"
    args = ["run", str(scenario), "--out", str(tmp_path / "r"), "--set", "run.rounds=2", "--set", "run.runs=1"]
    assert main(args) == 0
    assert capsys.readouterr().err.splitlines()[-1].startswith("netemu: graphfl_stragglers: 8/8 rounds (100 %), ")
