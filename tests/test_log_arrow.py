"""The Arrow message log (`output.log_format = "arrow"`): the same records as JSON lines, read
back by every log reader, byte-identical from run to run, kept up to a failure, refused in one line
when asked for wrongly."""

import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import orjson
import pytest

pa = pytest.importorskip("pyarrow")

from netemu import logarrow  # noqa: E402
from netemu.cli import main  # noqa: E402
from netemu.errors import EXIT_COMPLETE, EXIT_FAILED, LogError  # noqa: E402
from netemu.log import MessageLog  # noqa: E402
from netemu.logarrow import ArrowSink, read_arrow  # noqa: E402
from netemu.report.export import export_log  # noqa: E402
from netemu.report.html import collect  # noqa: E402
from netemu.report.logtools import diff, filter_records, read, summarize  # noqa: E402
from netemu.scenario import ScenarioError, load_scenario  # noqa: E402

SCENARIO = """
[run]
name = "tiny"
seed = 4
rounds = 6
runs = 2
[topology]
kind = "star"
clients = 6
[links.uplink]
latency = { model = "lognormal", mu = -1.0, sigma = 0.5 }
loss = { model = "bernoulli", p = 0.1 }
[nodes]
speed = 500.0
participation = 0.8
[data]
kind = "linear"
dim = 3
[[algorithm]]
name = "fedavg"
round_time = 2.0
"""


def run(tmp_path, name, *sets, text=SCENARIO, script=None):
    path = tmp_path / "s.toml"
    path.write_text(('script = "events.py"\n' if script else "") + text)
    if script:
        (tmp_path / "events.py").write_text(script)
    out = tmp_path / name
    code = main(["run", str(path), "--out", str(out), "--quiet", "--set", "output.plots=false", *(a for s in sets for a in ("--set", s))])
    return code, out


def dumped(records):
    """The records as JSON lines bytes: equal only if every field, its order and its type are."""
    return [orjson.dumps(r, option=orjson.OPT_SERIALIZE_NUMPY) for r in records]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("both")
    (code_j, jsonl), (code_a, arrow) = run(tmp, "jsonl"), run(tmp, "arrow", 'output.log_format="arrow"')
    assert code_j == code_a == EXIT_COMPLETE
    return jsonl, arrow


def test_an_arrow_run_writes_messages_arrows_and_no_json_lines(both):
    _, arrow = both
    assert (arrow / "messages.arrows").is_file() and not (arrow / "messages.jsonl").exists()
    assert (arrow / "messages.arrows").read_bytes()[:4] == b"\xff\xff\xff\xff"  # an Arrow IPC stream


def test_the_same_run_logged_both_ways_reads_back_the_same_records_field_for_field(both):
    jsonl, arrow = both
    a, j = list(read(arrow)), list(read(jsonl))
    assert len(j) > 300 and {r["event"] for r in j} >= {"send", "deliver", "drop", "compute", "metric"}
    assert dumped(a) == dumped(j)  # same fields, same order, same types (an integer `work` stays an integer)


def test_the_same_run_logged_both_ways_has_the_same_summary_metrics_and_diff(both):
    jsonl, arrow = both
    assert summarize(arrow) == summarize(jsonl)
    assert (arrow / "metrics.csv").read_bytes() == (jsonl / "metrics.csv").read_bytes()
    sa, sj = (json.loads((d / "summary.json").read_text()) for d in (arrow, jsonl))
    for s in (sa, sj):
        s.pop("wall_time_s")
    assert sa.pop("overrides") == [*sj.pop("overrides"), 'output.log_format="arrow"']
    assert sa == sj
    assert diff(arrow / "messages.arrows", jsonl / "messages.jsonl")["identical"]
    assert list(filter_records(arrow, kind="update", event="drop")) == list(filter_records(jsonl, kind="update", event="drop"))


def test_netemu_log_commands_and_the_report_take_an_arrow_run(both, tmp_path, capsys):
    jsonl, arrow = both
    for d in (jsonl, arrow):
        assert main(["log", "summary", str(d), "--json"]) == 0
    js, ar = capsys.readouterr().out.split("\n{", 1)
    assert json.loads(js) == json.loads("{" + ar)
    assert main(["log", "filter", str(arrow), "--event", "drop"]) == 0
    arrow_lines = capsys.readouterr().out
    assert main(["log", "filter", str(jsonl), "--event", "drop"]) == 0
    assert arrow_lines == capsys.readouterr().out and arrow_lines
    assert main(["report", str(arrow), "--out", str(tmp_path / "page.html")]) == 0
    a, j = collect(arrow), collect(jsonl)
    assert a["log"] == j["log"] is None and a["records"] == j["records"] > 300
    for key in ("traffic", "actors", "activity", "timeline", "loads", "bytes_at"):
        assert a[key] == j[key], key


def test_an_arrow_run_exports_the_same_tables(both, tmp_path):
    jsonl, arrow = both
    for fmt in ("csv", "parquet"):
        ja, aa = export_log(jsonl, tmp_path / f"j-{fmt}", fmt), export_log(arrow, tmp_path / f"a-{fmt}", fmt)
        assert [(t.table, t.rows) for t in ja] == [(t.table, t.rows) for t in aa]
        assert all(x.path.read_bytes() == y.path.read_bytes() for x, y in zip(ja, aa))


def test_the_same_scenario_and_seed_write_a_byte_identical_arrow_log(both, tmp_path):
    _, arrow = both
    code, again = run(tmp_path, "again", 'output.log_format="arrow"')
    assert code == EXIT_COMPLETE
    assert (again / "messages.arrows").read_bytes() == (arrow / "messages.arrows").read_bytes()


FAILING = ("from netemu import Actor\n\nclass A(Actor):\n    networked = False\n\n    async def run(self):\n"
           "        await self.sleep(7)\n        1 / 0\n\ndef setup(world):\n    world.add(A('bad'))\n")


def test_a_run_that_fails_midway_keeps_every_record_logged_before_the_failure(tmp_path, monkeypatch):
    monkeypatch.setattr(logarrow, "BATCH", 40)  # several batches written before the failure, one held when it comes
    (tmp_path / "a").mkdir()
    (tmp_path / "j").mkdir()
    code_a, arrow = run(tmp_path / "a", "out", 'output.log_format="arrow"', script=FAILING)
    code_j, jsonl = run(tmp_path / "j", "out", script=FAILING)
    assert code_a == code_j == EXIT_FAILED
    j = list(read(jsonl))
    assert len(j) > 100 and len(j) % 40 != 0 and max(r["t"] for r in j) <= 7
    assert dumped(read(arrow)) == dumped(j)


def test_a_stream_cut_mid_batch_reads_to_its_last_whole_batch_then_says_where_it_is_cut(tmp_path):
    buffer = io.BytesIO()
    sink = ArrowSink(buffer, batch=10)
    log = MessageLog(sink).bind(algorithm="a", run=0)
    for i in range(25):
        log.message(0.5 * i, "send", i, "server", f"client-{i}", "model", 0, 100 + i, "downlink", "payload_bytes", 80)
    log.flush()  # batches of 10, 10 and 5
    whole = buffer.getvalue()
    path = tmp_path / "cut.arrows"
    path.write_bytes(whole[:-20])
    got = []
    with pytest.raises(LogError, match=r"cut\.arrows: the Arrow stream is cut or damaged after record 20"):
        for _, r in read_arrow(path):
            got.append(r)
    assert [r["id"] for r in got] == list(range(20))


def test_records_no_column_holds_exactly_read_back_as_written(tmp_path):
    """Nulls, lists, fields no table names, an integer where a float is expected (and one too big for
    float64), a string where a number is expected, NumPy scalars, fields named like the context:
    the JSON-lines log and the Arrow log read back the same records, across batch boundaries."""
    records = [
        {"t": 0, "event": "compute", "actor": "c", "round": 1, "work": 140, "duration": 0.5},
        {"t": 0.5, "event": "compute", "actor": "c", "round": 1, "work": 140.5, "duration": np.float64(0.25)},
        {"t": 1.0, "event": "metric", "actor": "s", "round": 2, "metric": "mse", "value": None},
        {"t": 1.2, "event": "metric", "actor": "s", "round": 2, "metric": "mse", "value": float("nan")},  # null, as JSON writes it
        {"t": 1.2, "event": "metric", "actor": "s", "round": 2, "metric": "mse", "value": float("-inf")},
        {"t": 1.5, "event": "metric", "actor": "s", "round": np.int64(3), "metric": "acc", "value": [0.1, 0.2]},
        {"t": 2.0, "event": "flower", "note": "free text", "nested": {"a": [1, 2]}, "id": 2**64 - 1},
        {"t": 2.5, "event": "outage", "src": "a", "dst": "b", "link": "x", "until": 2**60 + 1},
        {"t": 3.0, "event": "send", "id": 1, "src": "a", "dst": "b", "kind": "model", "round": "three", "bytes": 7, "link": "x"},
        {"t": 3.4, "event": "recover", "actor": None},  # a null string, beside the other crash records' names
        {"t": 3.5, "event": "crash", "actor": "c", "algorithm": "other", "duplicate": True, "extra": "x", "keys": ["k"]},
    ]
    written = {}
    for fmt in ("jsonl", "arrows"):
        with open(tmp_path / f"m.{fmt}", "wb") as f:
            sink = ArrowSink(f, batch=3) if fmt == "arrows" else f
            log = MessageLog(sink).bind(algorithm="alg", run=1)
            for r in records * 2:
                log(**r)
            log.message_with(4.0, "deliver", 9, "a", "b", "model", 1, 10, "x", {"delay": 0.1, "hops": 2})
            log.message_with(4.5, "deliver", 9, "a", "b", "model", 1, 10, "x", {"run": 5})  # a field named like the context
            log.close()
        back = list(read(tmp_path / f"m.{fmt}"))
        assert [r["value"] for r in back if r["t"] == 1.2] == [None] * 4  # NaN and inf read back as null, as JSON writes them
        written[fmt] = dumped(back)
    assert len(written["jsonl"]) == 2 * len(records) + 2
    assert written["arrows"] == written["jsonl"]


def test_a_bad_log_format_is_refused_in_one_line_naming_the_file_key_value_and_choices(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO + '[output]\nlog_format = "parquet"\n')
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: output.log_format = 'parquet': ") and '"jsonl"' in text and '"arrow"' in text


def test_arrow_without_pyarrow_is_refused_at_validation_with_the_install_line(tmp_path, monkeypatch):
    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else find(name, *a))
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO + '[output]\nlog_format = "arrow"\n')
    with pytest.raises(ScenarioError, match=r"output\.log_format = 'arrow': .*pip install 'netemu\[export\]'"):
        load_scenario(path)


def test_the_default_log_format_leaves_the_resolved_scenario_as_before(both):
    jsonl, arrow = both
    assert "log_format" not in (jsonl / "scenario.toml").read_text()
    assert 'log_format = "arrow"' in (arrow / "scenario.toml").read_text()
    assert Path(jsonl / "messages.jsonl").is_file()


def test_an_arrow_log_on_a_full_disk_stops_the_run_in_one_line_naming_it(tmp_path, monkeypatch, capsys):
    from helpers import small_disk

    monkeypatch.setattr(logarrow, "BATCH", 200)  # batches written during the run, not only at its end
    (tmp_path / "s.toml").write_text(SCENARIO.replace("rounds = 6", "rounds = 400").replace("runs = 2", "runs = 1"))
    with small_disk(tmp_path / "disk", "16k") as disk:
        code = main(["run", str(tmp_path / "s.toml"), "--out", str(disk / "out"), "--quiet", "--set", "output.trace=false",
                     "--set", "output.plots=false", "--set", 'output.log_format="arrow"'])
        err = capsys.readouterr().err
        assert code == EXIT_FAILED, err
        assert err.startswith(f"netemu: cannot write {disk / 'out' / 'messages.arrows'}") and err.count("\n") == 1, err
        assert "No space left on device (ENOSPC)" in err and "Traceback" not in err
