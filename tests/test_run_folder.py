"""Run folders from Python: a World built in Python, or a scenario loaded in Python, becomes
the run folder `netemu run` writes, and the inspection commands work on it."""

import json
from pathlib import Path

import numpy as np
import pytest

import netemu
from netemu import Actor, Bernoulli, Exponential, Link, World, star
from netemu.cli import main
from netemu.errors import InputError
from netemu.scenario import load_scenario
from netemu.trace import Trace

SCENARIOS = Path(__file__).parent.parent / "scenarios"


class Server(Actor):
    async def run(self):
        w = np.zeros(2)
        for r in range(5):
            self.round = r
            self.broadcast("model", w)
            got = []
            while (msg := await self.recv("update", until=self.now + 2.0)) is not None:
                got.append(msg.payload)
            w = np.mean(got, axis=0) if got else w
            self.metric("updates", len(got))


class Client(Actor):
    daemon = True

    async def run(self):
        while True:
            msg = await self.recv("model")
            self.send(msg.src, "update", msg.payload + 1, round=msg.round)


def python_world(fates=None) -> World:
    g = star(3)
    links = {e: Link(Exponential(0.5), loss=Bernoulli(0.2), link_class=g.edges[e]["link_class"]) for e in g.edges}
    world = World(g, seed=4, links=links, **({"fates": fates} if fates else {}))
    world.add(Server("server"))
    for k in range(3):
        world.add(Client(f"client-{k}"))
    return world


def test_a_python_world_becomes_a_run_folder_that_log_and_plot_read(tmp_path, capsys):
    summary = netemu.run_folder(python_world(), tmp_path / "run")
    assert summary["complete"] and summary["final"]["python"]["updates"] >= 0
    assert {p.name for p in (tmp_path / "run").iterdir()} >= {"messages.jsonl", "trace.msgpack", "metrics.csv", "summary.json",
                                                             "curves_updates.png"}
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["messages"]["python"]["sent"] > 0
    assert main(["log", "summary", str(tmp_path / "run")]) == 0
    assert main(["plot", str(tmp_path / "run"), "--metric", "updates", "--out", str(tmp_path / "u.png")]) == 0
    assert (tmp_path / "u.png").stat().st_size > 0


def test_the_trace_of_a_python_world_replays_it_byte_for_byte(tmp_path):
    netemu.run_folder(python_world(), tmp_path / "a")
    trace = Trace.read(tmp_path / "a" / "trace.msgpack")
    netemu.run_folder(python_world(fates=trace.fates("python", 0)), tmp_path / "b")
    assert (tmp_path / "a" / "messages.jsonl").read_bytes() == (tmp_path / "b" / "messages.jsonl").read_bytes()
    assert trace.counts["new"] == 0


def test_a_scenario_loaded_in_python_gives_the_folder_netemu_run_gives(tmp_path):
    sc = load_scenario(SCENARIOS / "quickstart.toml", ["run.rounds=3"])
    netemu.run_folder(sc, tmp_path / "api")
    assert main(["run", str(SCENARIOS / "quickstart.toml"), "--set", "run.rounds=3", "--quiet", "--out", str(tmp_path / "cli")]) == 0
    for name in ("messages.jsonl", "metrics.csv", "scenario.toml"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()


def test_a_world_that_already_ran_is_refused(tmp_path):
    world = python_world()
    world.run()
    with pytest.raises(InputError, match="already run"):
        netemu.run_folder(world, tmp_path / "run")


def test_an_existing_folder_is_refused(tmp_path):
    with pytest.raises(InputError, match="already exists"):
        netemu.run_folder(python_world(), tmp_path)


def test_a_python_world_logs_to_messages_arrows_the_records_of_its_json_lines(tmp_path):
    pytest.importorskip("pyarrow")
    from netemu.report.logtools import read, summarize

    sj = netemu.run_folder(python_world(), tmp_path / "jsonl")
    sa = netemu.run_folder(python_world(), tmp_path / "arrow", log_format="arrow")
    assert sj["complete"] and sa["complete"]
    assert (tmp_path / "arrow" / "messages.arrows").is_file() and not (tmp_path / "arrow" / "messages.jsonl").exists()
    j, a = list(read(tmp_path / "jsonl")), list(read(tmp_path / "arrow"))
    assert len(j) > 40 and {r["event"] for r in j} >= {"send", "deliver", "drop", "metric"}
    assert [json.dumps(r) for r in a] == [json.dumps(r) for r in j]  # same fields, order and types
    assert (tmp_path / "arrow" / "metrics.csv").read_bytes() == (tmp_path / "jsonl" / "metrics.csv").read_bytes()
    assert summarize(tmp_path / "arrow") == summarize(tmp_path / "jsonl")


def test_a_bad_log_format_for_a_python_world_is_refused_before_the_folder_is_made(tmp_path, monkeypatch):
    with pytest.raises(InputError, match=r"log_format='parquet' .*accepted: 'jsonl', 'arrow'"):
        netemu.run_folder(python_world(), tmp_path / "bad", log_format="parquet")
    monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)  # pyarrow not installed
    with pytest.raises(InputError, match=r"pip install 'netemu\[export\]'"):
        netemu.run_folder(python_world(), tmp_path / "nopa", log_format="arrow")
    with pytest.raises(InputError, match=r"log_format='arrow' is for a World built in Python; .*\[output\] log_format"):
        netemu.run_folder(load_scenario(SCENARIOS / "quickstart.toml"), tmp_path / "sc", log_format="arrow")
    assert not any((tmp_path / name).exists() for name in ("bad", "nopa", "sc"))
