"""Flower apps on netemu's network (netemu.flower): the example app flower-digits
(softmax regression on scikit-learn's digits, Flower's FedAvg) runs unmodified."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import msgpack
import numpy as np
import pytest

pytest.importorskip("flwr", reason="Flower is not installed: pip install -e '.[flower]'")

from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import ErrorCode
from flwr.common.serde import message_to_proto
from flwr.serverapp import Grid, ServerApp

from netemu import Bernoulli, Constant, Link, MessageLog, NodeBehaviour, World, star
from netemu.errors import NetemuError
from netemu.flower import FlowerAppError, FlowerAppFailed, WorkModel, add_flower, load_client_app, run_inprocess
from netemu.flower.actors import flower_process_state
from netemu.engine.rng import Streams

APP_DIR = str(Path(__file__).resolve().parents[1] / "examples" / "flower-digits")
SERVER, CLIENT = "flower_digits.server_app:app", "flower_digits.client_app:app"
K = 6
CONFIG = {"num-server-rounds": 4, "local-epochs": 2, "lr": 0.5, "round-timeout": 30.0}
SPEED = 100.0  # work units per virtual second: a node of 240 examples trains 2 epochs in 4.8 s


def digits_world(seed: int = 1, *, links=None, behaviours=None, log=None, server_app=SERVER, client_app=CLIENT,
                 run_config=CONFIG, clients: int = K, on_client_error: str = "reply", work: WorkModel | None = None) -> World:
    behaviours = behaviours or {}
    behaviours = {f"client-{k}": behaviours.get(f"client-{k}", NodeBehaviour(speed=SPEED)) for k in range(clients)}
    world = World(star(clients), seed=seed, links=links, behaviours=behaviours, log=log)
    add_flower(world, server_app, client_app, run_config=run_config, app_dir=APP_DIR, on_client_error=on_client_error, work=work)
    return world


def digits_client_app() -> ClientApp:
    """The example's ClientApp object, to wrap in test apps."""
    return load_client_app(CLIENT, app_dir=APP_DIR)


def final_model(world: World) -> list[np.ndarray]:
    return world.actors["server"].context.state["final-model"].to_numpy_ndarrays()


def curve(world: World, metric: str) -> list[float]:
    return [v for _, _, _, name, v in world.metrics if name == metric]


def lossy_links(p_loss: float) -> dict:
    """Every uplink loses each message with probability p_loss; downlinks delay 0.5 s."""
    links = {}
    for k in range(K):
        links[("server", f"client-{k}")] = Link(Constant(0.5), link_class="downlink")
        links[(f"client-{k}", "server")] = Link(Constant(0.5), loss=Bernoulli(p_loss), link_class="uplink")
    return links


# ---------------------------------------------------------------- the differential test


def test_ideal_network_gives_the_model_of_the_plain_in_process_loop():
    world = digits_world()
    world.run()
    reference = run_inprocess(SERVER, CLIENT, [f"client-{k}" for k in range(K)], run_config=CONFIG, seed=1, app_dir=APP_DIR)
    expected = reference.state["final-model"].to_numpy_ndarrays()
    # replies are aggregated in push order on both sides, so the sums are the same sums: bit for bit
    for got, want in zip(final_model(world), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert curve(world, "train_replies") == [K] * CONFIG["num-server-rounds"]


def test_the_example_app_learns_the_digits():
    world = digits_world()
    world.run()
    accuracy = curve(world, "server_accuracy")
    assert accuracy[0] < 0.2 and accuracy[-1] > 0.8  # from chance (10 classes) to a useful classifier


# ---------------------------------------------------------------- the network matters


def test_stragglers_and_lossy_uplinks_change_the_learning_curve():
    ideal = digits_world()
    ideal.run()
    slow = {f"client-{k}": NodeBehaviour(speed=SPEED / 20) for k in (0, 1)}  # 96 s of work: misses every 30 s round
    impaired = digits_world(links=lossy_links(0.3), behaviours=slow)
    impaired.run()
    replies = curve(impaired, "train_replies")
    assert max(replies) <= K - 2  # the stragglers never make it
    assert min(replies) < K - 2  # and the lossy uplinks cost more replies in some round
    assert curve(impaired, "server_loss") != curve(ideal, "server_loss")
    assert impaired.env.now == pytest.approx(CONFIG["num-server-rounds"] * CONFIG["round-timeout"])


def test_a_stragglers_reply_after_its_rounds_timeout_is_marked_late():
    buf = io.BytesIO()
    slow = {"client-0": NodeBehaviour(speed=SPEED / 20)}  # 96 s of work: its round-1 reply comes in round 4
    digits_world(behaviours=slow, log=MessageLog(buf)).run()
    records = [json.loads(line) for line in buf.getvalue().splitlines()]
    unused = [r for r in records if r["event"] == "unused" and r["dst"] == "server"]  # (client-0 has instructions unread at the end)
    assert unused and {(r["src"], r["reason"]) for r in unused} == {("client-0", "late")}
    delivered = {r["id"]: r["t"] for r in records if r["event"] == "deliver" and r["src"] == "client-0"}
    assert all(r["id"] in delivered and r["t"] >= delivered[r["id"]] > CONFIG["round-timeout"] for r in unused)


def test_each_round_waits_for_the_slowest_reply_in_virtual_time():
    world = digits_world(links=lossy_links(0.0))
    world.run()
    # 0.5 s down + 240 or 239 examples x 2 epochs / 100 + 0.5 s up; the largest shard has 240 examples
    assert world.env.now == pytest.approx(CONFIG["num-server-rounds"] * (0.5 + 240 * 2 / SPEED + 0.5))


def test_a_node_that_does_not_participate_sends_no_reply():
    behaviours = {"client-3": NodeBehaviour(speed=SPEED, participation=0.0)}
    world = digits_world(behaviours=behaviours)
    world.run()
    assert curve(world, "train_replies") == [K - 1] * CONFIG["num-server-rounds"]
    assert curve(world, "train_failures") == [0] * CONFIG["num-server-rounds"]


def test_a_crashed_node_comes_back_as_flowers_node_unavailable_error_reply():
    behaviours = {"client-2": NodeBehaviour(speed=SPEED, crashes=((0.0, None),))}
    world = digits_world(behaviours=behaviours)
    world.run()
    assert curve(world, "train_failures") == [1] * CONFIG["num-server-rounds"]
    assert curve(world, "train_replies") == [K - 1] * CONFIG["num-server-rounds"]


def test_a_lost_reply_becomes_a_reply_unavailable_error_when_its_ttl_runs_out():
    seen = {}
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        content = RecordDict({"arrays": ArrayRecord([np.zeros((64, 10)), np.zeros(10)]), "config": ConfigRecord({"lr": 0.5})})
        messages = [Message(content, node, "train", ttl=50.0) for node in grid.get_node_ids()]
        replies = list(grid.send_and_receive(messages, timeout=None))  # no timeout: only the TTL ends the wait
        seen["codes"] = [r.error.code for r in replies if r.has_error()]
        seen["contents"] = sum(r.has_content() for r in replies)

    links = {**lossy_links(0.0), ("client-4", "server"): Link(loss=Bernoulli(1.0), link_class="uplink")}
    world = digits_world(server_app=app, links=links)
    world.run()
    assert seen == {"codes": [ErrorCode.REPLY_MESSAGE_UNAVAILABLE], "contents": K - 1}
    assert world.env.now == pytest.approx(50.0)  # created at 0 with a TTL of 50 virtual seconds


# ---------------------------------------------------------------- bytes


def test_logged_bytes_are_flowers_serialized_message_sizes():
    sizes = {}
    recording = ClientApp()
    digits = digits_client_app()

    @recording.train()
    def train(msg: Message, context: Context) -> Message:
        sizes[msg.metadata.message_id] = len(message_to_proto(msg).SerializeToString())
        return digits(msg, context)

    buf = io.BytesIO()
    world = digits_world(client_app=recording, log=MessageLog(buf))
    world.run()
    records = [json.loads(line) for line in buf.getvalue().splitlines()]
    sends = {r["id"]: r for r in records if r["event"] == "send"}
    flower = [r for r in records if r["event"] == "flower"]
    assert len(flower) == len(sends) == 2 * K * CONFIG["num-server-rounds"]
    instructions = [r for r in flower if r["reply_to"] == ""]
    assert {r["message_id"]: r["flower_bytes"] for r in instructions} == sizes
    for r in flower:  # the link carries Flower's bytes as one msgpack bin inside netemu's envelope
        header = len(msgpack.packb(b"\0" * r["flower_bytes"])) - r["flower_bytes"]
        assert sends[r["id"]]["payload_bytes"] == r["flower_bytes"] + header


# ---------------------------------------------------------------- failures and bad input


def test_with_on_client_error_stop_a_client_app_that_raises_stops_the_run_naming_node_time_and_message_type():
    failing = ClientApp()
    digits = digits_client_app()

    @failing.train()
    def train(msg: Message, context: Context) -> Message:
        if context.node_config["partition-id"] == 2 and msg.content["config"]["server-round"] == 2:
            raise ValueError("out of memory on this device")
        return digits(msg, context)

    buf = io.BytesIO()
    world = digits_world(client_app=failing, log=MessageLog(buf), on_client_error="stop")
    with pytest.raises(FlowerAppFailed) as info:
        world.run()
    first = str(info.value).splitlines()[0]
    assert first == ("Flower ClientApp on node 'client-2' (Flower node 1002) raised ValueError: out of memory on this device "
                     "at virtual time 4.8 while handling a 'train' message (round 2)")
    assert "Traceback" in str(info.value)
    records = [json.loads(line) for line in buf.getvalue().splitlines()]  # flushed: nothing logged is lost
    ended = {r["id"] for r in records if r["event"] in ("deliver", "drop", "in_flight")}
    assert {r["id"] for r in records if r["event"] == "send"} == ended


def test_a_server_app_that_raises_stops_the_run_naming_the_server():
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        raise RuntimeError("no strategy configured")

    with pytest.raises(FlowerAppFailed, match=r"^Flower ServerApp on node 'server' raised RuntimeError: no strategy configured at virtual time 0"):
        digits_world(server_app=app).run()


def test_a_server_app_waiting_for_more_nodes_than_exist_is_stopped_with_a_clear_error():
    config = {**CONFIG, "min-available-nodes": K + 1}
    with pytest.raises(FlowerAppFailed, match=r"waits for more nodes than the 6 Flower nodes"):
        digits_world(run_config=config).run()


@pytest.mark.parametrize(
    ("server_app", "message"),
    [
        ("flower_digits.no_such_module:app", r"server_app: 'flower_digits.no_such_module:app': no module named 'flower_digits.no_such_module'"),
        ("flower_digits.server_app:nope", r"server_app: 'flower_digits.server_app:nope': module 'flower_digits.server_app' has no attribute 'nope'"),
        ("flower_digits.task:initial_model", r"server_app: 'flower_digits.task:initial_model' is a function, not a flwr.serverapp.server_app.ServerApp"),
        ("flower_digits.server_app", r"server_app: 'flower_digits.server_app' is not of the form 'package.module:attribute'"),
        (CLIENT, r"is a ClientApp, not a flwr.serverapp.server_app.ServerApp"),
    ],
)
def test_a_bad_server_app_reference_is_a_clear_netemu_error(server_app, message):
    with pytest.raises(FlowerAppError, match=message) as info:
        digits_world(server_app=server_app)
    assert isinstance(info.value, NetemuError) and "\n" not in str(info.value)


def test_a_client_app_that_is_not_a_client_app_is_refused():
    with pytest.raises(FlowerAppError, match=r"client_app: 'flower_digits.server_app:app' is a ServerApp, not a flwr.clientapp"):
        digits_world(client_app=SERVER)


# ---------------------------------------------------------------- determinism


def _lossy_log(seed: int) -> bytes:
    buf = io.BytesIO()
    slow = {"client-0": NodeBehaviour(speed=SPEED / 10, slowdown_sigma=0.5)}
    digits_world(seed, links=lossy_links(0.3), behaviours=slow, log=MessageLog(buf)).run()
    return buf.getvalue()


def test_a_rerun_with_the_same_seed_is_byte_identical():
    assert _lossy_log(5) == _lossy_log(5)
    assert _lossy_log(5) != _lossy_log(6)


def test_a_rerun_in_another_process_with_other_hash_seeds_is_byte_identical():
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            "import test_flower as t; sys.stdout.buffer.write(t._lossy_log(5))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, env=env).stdout
    assert out == _lossy_log(5)


def test_importing_netemu_does_not_import_flower():
    code = "import sys, netemu, netemu.run.runner, netemu.cli; print('flwr' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_the_work_model_counts_examples_times_epochs():
    work = WorkModel(train_per_example=2.0, evaluate_per_example=0.5, per_message=1.0)
    with flower_process_state(Streams(0).generator, run_id=1):  # Flower stamps run and node ids into new messages
        _check_work(work)


def _check_work(work: WorkModel) -> None:
    ins = Message(RecordDict({"config": ConfigRecord({"local-epochs": 3})}), 1001, "train")
    reply = Message(RecordDict({"m": MetricRecord({"num-examples": 10})}), reply_to=ins)
    assert work.work(ins, reply, {}) == 1.0 + 2.0 * 3 * 10
    evaluate = Message(RecordDict(), 1001, "evaluate")
    assert work.work(evaluate, Message(RecordDict({"m": MetricRecord({"num-examples": 10})}), reply_to=evaluate), {"local-epochs": 3}) == 1.0 + 0.5 * 10


# ---------------------------------------------------------------- scenario and CLI


QUICKSTART = Path(__file__).resolve().parents[1] / "scenarios" / "flower_quickstart.toml"


def _outcomes(out: Path) -> list[tuple[int, int, bool]]:
    summary = json.loads((out / "summary.json").read_text())
    return [(o["rounds_planned"], o["rounds_done"], o["complete"]) for alg in summary["algorithms"] for o in summary["outcome"][alg]]


def test_the_quickstart_scenario_runs_through_the_cli_and_replays_byte_for_byte_from_anywhere(tmp_path, monkeypatch):
    from netemu.cli import main

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")  # app_dir is relative to the scenario file, not to the working directory
    out, again = tmp_path / "run", tmp_path / "replay"
    assert main(["run", str(QUICKSTART), "--out", str(out), "--set", "run.rounds=3", "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["final"]["flower-fedavg"]["server_accuracy"] > 0.5
    assert _outcomes(out) == [(3, 3, True)]  # Flower's round-0 initial evaluation is not a round
    recorded = tomllib.loads((out / "scenario.toml").read_text())
    assert recorded["algorithm"][0]["app_dir"] == str(QUICKSTART.parent.parent / "examples" / "flower-digits")
    monkeypatch.chdir(tmp_path / "b")
    assert main(["replay", str(out / "trace.msgpack"), "--scenario", str(out / "scenario.toml"), "--out", str(again), "--quiet"]) == 0
    for name in ("messages.jsonl", "metrics.csv"):
        assert (out / name).read_bytes() == (again / name).read_bytes(), name


def test_a_run_of_n_server_rounds_does_n_rounds_and_keeps_the_initial_evaluation_as_round_0():
    world = digits_world()
    ticks = []
    world.on_round = ticks.append
    result = world.run()
    n = CONFIG["num-server-rounds"]
    assert result.complete and world.rounds_done == n and world.rounds_seen == set(range(1, n + 1))
    assert ticks == list(range(1, n + 1))  # the progress bar counts rounds 1..N, not the initial evaluation
    assert [r for _, r, _, name, _ in world.metrics if name == "server_accuracy"] == list(range(n + 1))


def test_a_flower_run_stopped_by_until_is_incomplete_with_the_rounds_it_did(tmp_path):
    from netemu.cli import main

    out = tmp_path / "run"
    # the quickstart's rounds end at 5, 10, 15 s (the 5 s round timeout): until = 12 stops it inside round 3
    assert main(["run", str(QUICKSTART), "--out", str(out), "--set", "run.rounds=3", "--set", "run.until=12", "--quiet"]) != 0
    assert _outcomes(out) == [(3, 2, False)]


def test_a_server_crash_leaves_a_flower_run_incomplete(tmp_path):
    from netemu.cli import main

    out = tmp_path / "run"
    crash = ["--set", 'nodes.crash=[{node = "server", at = 7.0}]']
    assert main(["run", str(QUICKSTART), "--out", str(out), "--set", "run.rounds=3", *crash, "--quiet"]) != 0
    assert _outcomes(out) == [(3, 1, False)]


def _flower_console(tmp_path: Path, *settings: str) -> str:
    """What a handler on Flower's logger (as Flower's own console handler is) shows during `netemu run`."""
    from flwr.supercore.logger import FLOWER_LOGGER

    from netemu.cli import main

    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    FLOWER_LOGGER.addHandler(handler)
    try:
        sets = [x for s in settings for x in ("--set", s)]
        assert main(["run", str(QUICKSTART), "--out", str(tmp_path / "run"), "--set", "run.rounds=2", *sets, "--quiet"]) == 0
    finally:
        FLOWER_LOGGER.removeHandler(handler)
    assert handler.level == logging.NOTSET  # restored after the run
    return buf.getvalue()


def test_flowers_round_by_round_console_output_is_quiet_under_a_scenario_unless_asked_for(tmp_path):
    assert "[ROUND 1/2]" not in _flower_console(tmp_path / "quiet")
    assert "fraction_evaluate is set to 0.0" in _flower_console(tmp_path / "warnings")  # warnings still show
    assert "[ROUND 1/2]" in _flower_console(tmp_path / "info", 'flower.console="info"')


QUICK_STAR = '[run]\nrounds = 2\n[topology]\nkind = "star"\nclients = 3\n'
APPS = 'server_app = "flower_digits.server_app:app"\nclient_app = "flower_digits.client_app:app"\n'


def test_a_flower_table_is_the_flower_algorithm_entry_and_needs_no_data(tmp_path):
    from netemu.scenario import load_scenario

    short, long = tmp_path / "short.toml", tmp_path / "long.toml"
    short.write_text(f'{QUICK_STAR}[flower]\n{APPS}app_dir = "{APP_DIR}"\nrun_config = {{ lr = 0.1 }}\n')
    long.write_text(f'{QUICK_STAR}[[algorithm]]\nname = "flower"\n{APPS}app_dir = "{APP_DIR}"\nrun_config = {{ lr = 0.1 }}\n')
    table = load_scenario(short).table
    assert table == load_scenario(long).table
    assert table["data"] is None and table["algorithm"][0]["label"] == "flower"


@pytest.mark.parametrize(("line", "key", "accepts"), [
    ("run_config = { lr = [1] }", "flower.run_config.lr", "a bool, integer, float or string"),
    ("bogus = 1", "flower.bogus", "unknown key"),
    ('console = "loud"', "flower.console", "one of debug, info, warning, error"),
    ('server_app = "flower_digits.nope:app"', "flower.server_app", "no module 'flower_digits.nope' in app_dir"),
])
def test_errors_in_a_flower_table_name_its_keys(tmp_path, line, key, accepts):
    from netemu.scenario import ScenarioError, load_scenario

    apps = APPS.replace('server_app = "flower_digits.server_app:app"\n', "") if line.startswith("server_app") else APPS
    path = tmp_path / "s.toml"
    path.write_text(f'{QUICK_STAR}[flower]\n{apps}app_dir = "{APP_DIR}"\n{line}\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert [(i.key, accepts in i.accepts) for i in info.value.issues] == [(key, True)], str(info.value)


def test_app_dir_is_relative_to_the_scenario_file_not_the_working_directory(tmp_path, monkeypatch):
    from netemu.scenario import ScenarioError, load_scenario

    (tmp_path / "apps").mkdir()
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "apps" / "netemu_app_dir_probe.py").write_text(
        "from flwr.clientapp import ClientApp\nfrom flwr.serverapp import ServerApp\nserver = ServerApp()\nclient = ClientApp()\n")
    text = f'{QUICK_STAR}[flower]\nserver_app = "netemu_app_dir_probe:server"\nclient_app = "netemu_app_dir_probe:client"\n'
    good, bad = tmp_path / "scenarios" / "good.toml", tmp_path / "scenarios" / "bad.toml"
    good.write_text(text + 'app_dir = "../apps"\n')
    bad.write_text(text + 'app_dir = "apps"\n')  # would be right from the working directory, not from the file
    monkeypatch.setattr(sys, "path", list(sys.path))  # load_app puts app_dir first on it
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError, match=r"flower\.server_app = 'netemu_app_dir_probe:server': .*no module 'netemu_app_dir_probe' in app_dir"):
        load_scenario(bad)
    assert load_scenario(good).table["algorithm"][0]["app_dir"] == "../apps"  # the table keeps what the file says
    assert load_scenario(good).algorithm_params(0).app_dir == str((good.parent / "../apps").resolve())  # the params, where it is (absolute)
    assert "netemu_app_dir_probe" not in sys.modules  # located, never imported: validate runs no scenario code


def test_flower_params_refuse_an_app_that_does_not_load_naming_the_parameter(monkeypatch):
    from netemu.config import ConfigError
    from netemu.flower import FlowerParams

    monkeypatch.syspath_prepend(APP_DIR)  # as if the example app were installed
    with pytest.raises(ConfigError) as info:  # an installed app (no app_dir) is loaded and checked at once
        FlowerParams(server_app=SERVER, client_app="flower_digits.client_app:nope")
    assert info.value.field == "client_app"
    assert info.value.accepts.startswith("'flower_digits.client_app:nope': module 'flower_digits.client_app' has no attribute 'nope'")


def test_an_app_dir_app_is_only_located_by_validate_and_its_attribute_checked_when_the_run_is_built(tmp_path, capsys):
    from netemu.cli import main
    from netemu.flower import FlowerParams

    FlowerParams(server_app=SERVER, client_app="flower_digits.client_app:nope", app_dir=APP_DIR)  # located: no code ran
    bad = tmp_path / "bad.toml"
    bad.write_text(QUICKSTART.read_text().replace('"../examples/flower-digits"', f'"{APP_DIR}"')
                   .replace('"flower_digits.client_app:app"', '"flower_digits.client_app:nope"'))
    assert main(["validate", str(bad)]) == 0
    assert main(["run", str(bad), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "module 'flower_digits.client_app' has no attribute 'nope'" in err
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["complete"] is False


def test_validate_refuses_a_scenario_whose_flower_app_does_not_load(tmp_path, monkeypatch):
    pytest.importorskip("netemu.plugins", reason="scenarios name the Flower family through the plug-in registry (issue 14)")
    from netemu.scenario import load_scenario

    text = QUICKSTART.read_text().replace('"../examples/flower-digits"', f'"{APP_DIR}"')
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('"flower_digits.server_app:app"', '"flower_digits.server_ap:app"'))
    with pytest.raises(NetemuError, match=r"flower\.server_app.*no module 'flower_digits.server_ap' in app_dir"):
        load_scenario(bad)


def test_a_run_stopped_at_until_unwinds_the_server_app_and_restores_flowers_globals():
    import random
    import threading

    from flwr.supercore.task_identity import TaskIdentity

    before = (random.getstate(), TaskIdentity._run_id, threading.active_count())
    world = digits_world()
    result = world.run(until=7.0)  # inside round 2: the ServerApp is waiting in send_and_receive
    assert not result.complete and world.env.now == pytest.approx(7.0)
    assert not world.actors["server"].turns.main.thread.is_alive()
    assert (random.getstate(), TaskIdentity._run_id, threading.active_count()) == before


def test_flowers_node_sampling_does_not_depend_on_other_users_of_the_global_random_module():
    import random

    noisy = ClientApp()
    digits = digits_client_app()

    @noisy.train()
    def train(msg: Message, context: Context) -> Message:
        random.random()  # as another thread of the process (e.g. a Dask worker's) might, at any moment
        return digits(msg, context)

    def sampled(client_app) -> list[str]:
        buf = io.BytesIO()
        digits_world(client_app=client_app, run_config={**CONFIG, "fraction-train": 0.5}, log=MessageLog(buf)).run()
        return [r["dst"] for r in map(json.loads, buf.getvalue().splitlines()) if r["event"] == "send" and r["kind"] == "train"]

    plain = sampled(CLIENT)
    assert len(plain) == K // 2 * CONFIG["num-server-rounds"] and len(set(plain)) > K // 2  # a sample, not always the same half
    assert sampled(noisy) == plain


def test_validate_and_no_scripts_never_execute_a_flower_app_shipped_with_the_scenario(tmp_path, capsys):
    from netemu.cli import main

    app = tmp_path / "evilapp" / "evilpkg"
    app.mkdir(parents=True)
    marker = tmp_path / "PWNED"
    (app / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (app / "server.py").write_text("app = None\n")
    scenario = tmp_path / "evil.toml"
    scenario.write_text('[run]\nrounds = 2\n[topology]\nkind = "star"\nclients = 2\n'
                        '[flower]\nserver_app = "evilpkg.server:app"\nclient_app = "evilpkg.server:app"\napp_dir = "evilapp"\n')
    assert main(["validate", str(scenario)]) == 0
    assert "algorithm[0].app_dir" in capsys.readouterr().out and not marker.exists()
    assert main(["run", str(scenario), "--no-scripts", "--out", str(tmp_path / "out")]) == 2
    assert "refused by --no-scripts" in capsys.readouterr().err and not marker.exists()
    scenario.write_text(scenario.read_text().replace("evilpkg.server:app", "evilpkg.nothere:app", 1))
    assert main(["validate", str(scenario)]) == 2  # a module that does not exist is still refused by validate
    assert "no module 'evilpkg.nothere' in app_dir" in capsys.readouterr().err and not marker.exists()


# ---------------------------------------------------------------- failures as Flower reports them


def _raising_on(partition: int, round: int) -> ClientApp:
    failing = ClientApp()
    digits = digits_client_app()

    @failing.train()
    def train(msg: Message, context: Context) -> Message:
        if context.node_config["partition-id"] == partition and msg.content["config"]["server-round"] == round:
            raise ValueError("out of memory on this device")
        return digits(msg, context)

    return failing


def test_a_client_app_that_raises_sends_flowers_error_reply_and_the_round_goes_on():
    buf = io.BytesIO()
    world = digits_world(client_app=_raising_on(2, 2), log=MessageLog(buf))
    result = world.run()
    assert result.complete
    assert curve(world, "train_failures") == [0, 1, 0, 0] and curve(world, "train_replies") == [K, K - 1, K, K]
    records = [json.loads(line) for line in buf.getvalue().splitlines()]
    [error] = [r for r in records if r["event"] == "flower_client_error"]
    assert (error["node"], error["error"]) == ("client-2", "ValueError: out of memory on this device")
    [reply] = [r for r in records if r["event"] == "flower" and r["error"]]
    assert reply["src"] == "client-2" and reply["message_id"] != error["message_id"]
    assert [(r, v) for _, r, _, name, v in world.metrics if name == "warn_client_app_errors"] == [(2, 1.0)]


def test_the_summary_warns_of_client_app_errors_and_unmatched_replies(tmp_path):
    from netemu.run.runner import write_run_folder

    wrong = ClientApp()
    digits = digits_client_app()

    @wrong.train()
    def train(msg: Message, context: Context) -> Message:
        if context.node_config["partition-id"] == 1:
            raise RuntimeError("broken")
        reply = digits(msg, context)
        if context.node_config["partition-id"] == 4:  # a mod that answers another message than the one it got
            return Message(reply.content, reply_to=Message(RecordDict(), 1004, "train"))
        return reply

    summary = write_run_folder(digits_world(client_app=wrong), tmp_path / "run")
    assert summary["complete"]
    assert "python: client app errors: 4 (metric warn_client_app_errors)" in summary["warnings"]
    assert "python: unmatched replies: 4 (metric warn_unmatched_replies)" in summary["warnings"]
    assert summary["messages"]["python"]["unused"] == {"discarded": 4}  # the replies to no instruction: not used


def test_on_client_error_is_checked_naming_the_setting():
    from netemu.config import ConfigError
    from netemu.flower import FlowerParams

    with pytest.raises(ConfigError) as info:
        FlowerParams(server_app=SERVER, client_app=CLIENT, app_dir=APP_DIR, on_client_error="ignore")
    assert info.value.field == "on_client_error" and "'reply'" in info.value.accepts


def test_an_app_that_reports_no_examples_is_warned_of_in_the_summary(tmp_path):
    from netemu.run.runner import write_run_folder

    world = digits_world(work=WorkModel(examples_key="samples"))  # the app reports "num-examples", not "samples"
    summary = write_run_folder(world, tmp_path / "run")
    assert world.env.now == 0.0  # no work reported: no compute time
    assert "python: no work reported: 1 (metric warn_no_work_reported)" in summary["warnings"]
    assert not any("no work" in w for w in write_run_folder(digits_world(), tmp_path / "plain")["warnings"])


def test_the_work_model_reads_the_legacy_num_examples():
    with flower_process_state(Streams(0).generator, run_id=1):
        ins = Message(RecordDict({"config": ConfigRecord({"local-epochs": 3})}), 1001, "train")
        legacy = Message(RecordDict({"fitres.num_examples": MetricRecord({"num_examples": 10})}), reply_to=ins)
        assert WorkModel().work(ins, legacy, {}) == 3 * 10
        assert WorkModel().examples(Message(RecordDict({"m": MetricRecord({"loss": 1.0})}), reply_to=ins)) is None
