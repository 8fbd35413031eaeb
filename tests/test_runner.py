"""Run folders, exact and cross-algorithm replay, interrupted and failed runs, trace errors."""

import csv
import io
import json
import tomllib
from pathlib import Path

import msgpack
import numpy as np
import orjson
import pytest

from netemu.cli import main
from netemu.scenario import load_scenario
from netemu.run.runner import execute
from netemu.trace import Trace, TraceError
from netemu.version import __version__

SCENARIO = """
[run]
name = "tiny"
seed = 4
rounds = 6
runs = 2
[topology]
kind = "star"
clients = 5
[links.uplink]
latency = { model = "exponential", mean = 0.5 }
loss = { model = "bernoulli", p = 0.2 }
bandwidth = 1e5
[links.downlink]
latency = { model = "uniform", low = 0.1, high = 0.4 }
[nodes]
participation = 0.7
speed = 500.0
[data]
kind = "linear"
dim = 4
[task]
lr = 0.1
[[algorithm]]
name = "fedavg"
label = "fast"
round_time = 3.0
[[algorithm]]
name = "fedavg"
label = "slow"
round_time = 1.5
"""


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(SCENARIO)
    return path


def run(path, out, *args):
    assert main(["run", str(path), "--out", str(out), "--quiet", *args]) == 0
    return out


def lines(path):
    return [orjson.loads(x) for x in Path(path).read_bytes().splitlines()]


def test_a_run_folder_holds_every_documented_file(scenario, tmp_path):
    out = run(scenario, tmp_path / "out")
    names = {p.name for p in out.iterdir()}
    assert {"scenario.toml", "messages.jsonl", "trace.msgpack", "metrics.csv", "summary.json", "curves_mse.png"} <= names
    load_scenario(out / "scenario.toml")  # the written scenario validates again, and records who wrote it
    assert tomllib.loads((out / "scenario.toml").read_text())["netemu"] == {"version": __version__}


def test_metrics_csv_is_long_format_with_one_row_per_metric_round_algorithm_and_run(scenario, tmp_path):
    out = run(scenario, tmp_path / "out")
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["algorithm", "run", "round", "time", "metric", "value"]
    keys = {(r["algorithm"], r["run"], r["round"], r["metric"]) for r in rows}
    learning = {k for k in keys if not k[3].startswith("unused_")}  # unused_<reason>: counts of late updates (docs/formats.md)
    assert len(keys) == len(rows) and len(learning) == 2 * 2 * 6 * 2  # algorithms x runs x rounds x metrics
    assert len(keys - learning) == 2 * 2 * 6 * len({k[3] for k in keys - learning})  # a count per algorithm, run and round


def test_summary_json_reports_final_metrics_messages_and_times(scenario, tmp_path):
    out = run(scenario, tmp_path / "out")
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is True and s["algorithms"] == ["fast", "slow"]
    assert set(s["final"]["fast"]) == {"mse", "participants"}
    m = s["messages"]["fast"]
    assert m["sent"] == m["delivered"] + m["dropped"] + m["in_flight"]
    assert set(m["bytes"]) == {"uplink", "downlink"} and m["dropped_by_reason"]["loss"] > 0
    assert 0 < m["payload_bytes"]["uplink"] < m["bytes"]["uplink"]  # the rest is envelope overhead
    assert len(s["virtual_time"]["slow"]) == 2 and s["wall_time_s"] >= 0


def test_every_log_record_says_its_algorithm_and_run(scenario, tmp_path):
    out = run(scenario, tmp_path / "out")
    recs = lines(out / "messages.jsonl")
    assert {(r["algorithm"], r["run"]) for r in recs} == {("fast", 0), ("slow", 0), ("fast", 1), ("slow", 1)}
    assert all("wall" not in k for r in recs for k in r)


def test_the_algorithms_of_one_run_share_the_participation_draws(scenario, tmp_path):
    out = run(scenario, tmp_path / "out")
    recs = lines(out / "messages.jsonl")
    sent = lambda alg, r: {(x["src"], x["round"]) for x in recs if x["algorithm"] == alg and x["run"] == r and x["event"] == "send" and x["kind"] == "update"}
    assert sent("fast", 0) == sent("slow", 0)
    assert sent("fast", 0) != sent("fast", 1)


def test_the_same_seed_gives_byte_identical_results(scenario, tmp_path):
    a, b = run(scenario, tmp_path / "a"), run(scenario, tmp_path / "b")
    for name in ("messages.jsonl", "metrics.csv", "trace.msgpack"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    c = run(scenario, tmp_path / "c", "--seed", "5")
    assert (a / "messages.jsonl").read_bytes() != (c / "messages.jsonl").read_bytes()


# topologies built: one per run for the trace's fingerprint, one per (run, algorithm) world, less
# the first world of a one-run scenario, which takes the fingerprinted graph (two algorithms here)
@pytest.mark.parametrize("runs, builds", [(1, 1 + 2 - 1), (2, 2 + 4)])
def test_the_runner_builds_a_one_run_topology_once_and_writes_what_two_builds_write(scenario, tmp_path, monkeypatch, runs, builds):
    import netemu.run.runner as runner
    import netemu.scenario.build as build

    sc = load_scenario(scenario, [f"run.runs={runs}", "run.rounds=2", "output.plots=false"])
    with monkeypatch.context() as m:  # the reference: every world builds its own graph
        m.setattr(runner, "build_world", lambda *args, graph=None, **kwargs: build.build_world(*args, **kwargs))
        execute(sc, tmp_path / "ref", quiet=True)
    original, calls = build.build_graph, []

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(runner, "build_graph", counted)
    monkeypatch.setattr(build, "build_graph", counted)
    execute(sc, tmp_path / "out", quiet=True)
    assert len(calls) == builds
    for name in ("messages.jsonl", "metrics.csv", "trace.msgpack"):
        assert (tmp_path / "ref" / name).read_bytes() == (tmp_path / "out" / name).read_bytes()

def test_replaying_a_trace_with_the_same_scenario_gives_a_byte_identical_log(scenario, tmp_path):
    a = run(scenario, tmp_path / "a")
    assert main(["replay", str(a / "trace.msgpack"), "--scenario", str(scenario), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    assert (a / "messages.jsonl").read_bytes() == (tmp_path / "r" / "messages.jsonl").read_bytes()
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["replay"]["new"] == 0 and s["replay"]["replayed"] > 100


def fates(recs):
    """(algorithm, run, src, dst, round, index) -> drop reason or (link) delay, from a log."""
    index, out, keys = {}, {}, {}
    for r in recs:
        if r["event"] == "send":
            k = (r["run"], r["src"], r["dst"], r["round"])
            index[k] = index.get(k, -1) + 1
            keys[(r["algorithm"], r["run"], r["id"])] = (*k, index[k])
        elif r["event"] in ("deliver", "drop"):
            out[keys[(r["algorithm"], r["run"], r["id"])]] = r.get("reason") or "delivered"
    return out


def test_another_algorithm_replayed_on_a_trace_meets_the_recorded_participation_and_fates(scenario, tmp_path):
    a = run(scenario, tmp_path / "a", "--set", "algorithm.slow.round_time=1.0")
    other = tmp_path / "other.toml"
    # a different algorithm setting, a different seed in the file: the trace's realization wins
    other.write_text(SCENARIO.replace("seed = 4", "seed = 99").replace('label = "slow"\nround_time = 1.5', 'label = "new"\nround_time = 2.0\nmu = 0.5'))
    assert main(["replay", str(a / "trace.msgpack"), "--scenario", str(other), "--source", "fast", "--out", str(tmp_path / "r"), "--quiet"]) == 0
    orig = [r for r in lines(a / "messages.jsonl") if r["algorithm"] == "fast"]
    new = [r for r in lines(tmp_path / "r" / "messages.jsonl") if r["algorithm"] == "new"]
    part = lambda recs: {(r["run"], r["src"], r["round"]) for r in recs if r["event"] == "send" and r["kind"] == "update"}
    assert part(orig) == part(new)
    f_orig, f_new = fates(orig), fates([{**r, "algorithm": "fast"} for r in new])
    shared = f_orig.keys() & f_new.keys()
    assert len(shared) > 50 and all(f_orig[k] == f_new[k] for k in shared)


def test_a_trace_from_another_topology_is_refused(scenario, tmp_path):
    a = run(scenario, tmp_path / "a")
    other = tmp_path / "other.toml"
    other.write_text(SCENARIO.replace("clients = 5", "clients = 6"))
    trace = Trace.read(a / "trace.msgpack")
    sc = load_scenario(other)
    with pytest.raises(TraceError, match="recorded on another topology"):
        execute(sc, tmp_path / "r", quiet=True, replay=trace)


def repack(data: bytes, end: list) -> bytes:
    """The same trace with another end marker."""
    entries = list(msgpack.Unpacker(io.BytesIO(data)))[:-1]
    return b"".join(msgpack.packb(x) for x in [*entries, end])


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda b: b[: len(b) // 2], "truncated trace: no end marker"),
        (lambda b: b"\xc1" + b, "not a netemu trace"),
        (lambda b: msgpack.packb({"format": "netemu-trace", "version": 99}) + b, "trace format version 99"),
        (lambda b: repack(b, end=["end", 3, True]), "end marker counts 3 entries"),
        (lambda b: b"", "not a netemu trace"),
    ],
    ids=["truncated", "garbage", "version", "count", "empty"],
)
def test_a_damaged_trace_gives_a_clear_error(scenario, tmp_path, damage, message):
    a = run(scenario, tmp_path / "a")
    bad = tmp_path / "bad.msgpack"
    bad.write_bytes(damage((a / "trace.msgpack").read_bytes()))
    with pytest.raises(TraceError, match=message):
        Trace.read(bad)


def test_the_cli_reports_a_bad_trace_without_a_traceback(scenario, tmp_path, capsys):
    bad = tmp_path / "bad.msgpack"
    bad.write_bytes(b"nonsense")
    assert main(["replay", str(bad), "--scenario", str(scenario), "--out", str(tmp_path / "r")]) == 2
    assert "not a netemu trace" in capsys.readouterr().err


def test_an_interrupted_run_leaves_a_valid_folder_marked_incomplete(scenario, tmp_path):
    script = tmp_path / "stop.py"
    script.write_text(
        "def setup(world):\n"
        "    def stop():\n"
        "        raise KeyboardInterrupt\n"
        "    world.at(10.0, stop)\n"
    )
    scenario.write_text('script = "stop.py"\n' + SCENARIO)
    assert main(["run", str(scenario), "--out", str(tmp_path / "out"), "--quiet"]) == 130
    out = tmp_path / "out"
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False and "interrupted" in s["stopped_by"]
    recs = lines(out / "messages.jsonl")
    assert recs and max(r["t"] for r in recs) <= 10.0
    with open(out / "metrics.csv") as f:
        assert len(list(csv.DictReader(f))) > 0
    assert Trace.read(out / "trace.msgpack").complete is False


def test_a_failing_actor_stops_the_run_and_the_folder_keeps_what_was_logged(scenario, tmp_path, capsys):
    script = tmp_path / "fail.py"
    script.write_text(
        "def setup(world):\n"
        "    server = world.actors['server']\n"
        "    def corrupt():\n"
        "        server.task = None\n"
        "    world.at(7.0, corrupt)\n"
    )
    scenario.write_text('script = "fail.py"\n' + SCENARIO)
    assert main(["run", str(scenario), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "actor 'server' failed at virtual time" in err
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["complete"] is False and s["stopped_by"].startswith("ActorFailed")
    assert lines(tmp_path / "out" / "messages.jsonl")


def test_an_existing_run_folder_is_not_overwritten(scenario, tmp_path, capsys):
    run(scenario, tmp_path / "a")
    assert main(["run", str(scenario), "--out", str(tmp_path / "a"), "--quiet"]) == 2
    assert "already exists" in capsys.readouterr().err


def test_validate_reports_ok_and_problems(scenario, tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(SCENARIO.replace("participation = 0.7", "participation = 7"))
    assert main(["validate", str(scenario)]) == 0
    assert main(["validate", str(scenario), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.toml: nodes.participation = 7" in err and "in [0, 1]" in err


def test_a_fate_shared_by_the_algorithms_of_a_run_is_written_once(scenario, tmp_path):
    a = run(scenario, tmp_path / "a")
    recorded = Trace.read(a / "trace.msgpack").fates_by_run  # the entries each algorithm wrote, per run
    by_alg = {alg: sum(len(fates) for (label, _), fates in recorded.items() if label == alg) for alg in ("fast", "slow")}
    assert by_alg["fast"] > 100 and by_alg["slow"] < 0.1 * by_alg["fast"]


def test_output_switches_leave_out_the_log_and_the_trace(scenario, tmp_path):
    out = run(scenario, tmp_path / "a", "--set", "output.log=false", "--set", "output.trace=false")
    names = {p.name for p in out.iterdir()}
    assert "messages.jsonl" not in names and "trace.msgpack" not in names and "metrics.csv" in names


def test_the_summary_reports_the_privacy_each_client_spent(scenario, tmp_path):
    script = tmp_path / "spend.py"
    script.write_text(
        "def setup(world):\n"
        "    world.at(1.0, lambda: world.privacy.spend('client-0', 0, 0.1))\n"
        "    world.at(2.0, lambda: world.privacy.spend('client-0', 1, 0.2))\n"
    )
    scenario.write_text('script = "spend.py"\n' + SCENARIO)
    out = run(scenario, tmp_path / "out")
    p = json.loads((out / "summary.json").read_text())["privacy"]["fast"]["client-0"]
    assert p["rho_total"] == pytest.approx(0.3) and p["epsilon"] > p["rho_total"]
    per_round = (out / "privacy.csv").read_text().splitlines()
    assert per_round[:3] == ["algorithm,run,client,round,rho,rho_total", "fast,0,client-0,0,0.1,0.1",
                             "fast,0,client-0,1,0.2,0.30000000000000004"]


def test_without_noise_the_summary_has_no_privacy_section(scenario, tmp_path):
    out = run(scenario, tmp_path / "out")
    assert "privacy" not in json.loads((out / "summary.json").read_text())
    assert not (out / "privacy.csv").exists()


def test_db_metrics_are_averaged_in_the_linear_domain():
    from netemu.report import final_values, mean_over

    assert mean_over("mse_db", [0.0, 10.0]) == pytest.approx(10 * np.log10(5.5))
    assert mean_over("mse", [0.0, 10.0]) == 5.0
    rows = [("a", 0, 9, 1.0, "mse_db", -10.0), ("a", 1, 9, 1.0, "mse_db", -20.0)]
    assert final_values(rows)["a"]["mse_db"] == pytest.approx(10 * np.log10((0.1 + 0.01) / 2))


def test_a_run_folder_of_a_python_world_keeps_its_compute_records(tmp_path):
    """netemu.run_folder(world, out) writes every record the world makes to the folder's
    log, the nodes' compute records included (not only the network's)."""
    from netemu import Actor, World, run_folder, star

    class Worker(Actor):
        async def run(self):
            await self.compute(2.0)
            self.metric("done", 1.0, round=0)

    world = World(star(1), seed=3)
    world.add(Worker("client-0"))
    run_folder(world, tmp_path / "run")
    events = [orjson.loads(line)["event"] for line in (tmp_path / "run" / "messages.jsonl").read_bytes().splitlines()]
    assert "compute" in events
