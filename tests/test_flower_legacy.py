"""Flower's compatibility layer on netemu: `ServerApp(server_fn=...)` with a legacy strategy and
`ServerConfig`, `DefaultWorkflow` with a `LegacyContext`, `ClientApp(client_fn=...)` with a
`NumPyClient` (examples/flower-digits/flower_digits/legacy.py, written with Flower's public API)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr", reason="Flower is not installed: pip install -e '.[flower]'")

from flwr.app import Context
from flwr.server import ServerAppComponents, ServerConfig, SimpleClientManager
from flwr.server import Server as LegacyServer
from flwr.serverapp import Grid, ServerApp

from netemu import MessageLog, NodeBehaviour

sys.path.insert(0, str(Path(__file__).parent))
from test_flower import APP_DIR, CLIENT, K, SERVER, SPEED, curve, digits_world, final_model, lossy_links  # noqa: E402

LEGACY_SERVER, LEGACY_CLIENT = "flower_digits.legacy:server_app", "flower_digits.legacy:client_app"
WORKFLOW = "flower_digits.legacy:workflow_app"
ROUNDS = 3
LEGACY = {"num-server-rounds": ROUNDS, "local-epochs": 2, "lr": 0.5, "round-timeout": 30.0}


def legacy_world(seed: int = 1, *, server_app=LEGACY_SERVER, client_app=LEGACY_CLIENT, run_config=LEGACY, **kw):
    return digits_world(seed, server_app=server_app, client_app=client_app, run_config=run_config, **kw)


def log_of(world) -> bytes:
    buf = io.BytesIO()
    world.use_log(MessageLog(buf))
    world.run()
    return buf.getvalue()


def test_a_server_fn_app_with_a_numpy_client_completes_every_round_with_every_reply():
    world = legacy_world()
    result = world.run()
    assert result.complete and world.rounds_done == ROUNDS
    assert curve(world, "train_replies") == [K] * ROUNDS and curve(world, "train_failures") == [0] * ROUNDS
    # an ideal star: 240 examples x 2 epochs at speed 100 per round, from the legacy replies' num_examples
    assert world.env.now == pytest.approx(ROUNDS * 240 * 2 / SPEED)


def test_legacy_strategies_aggregated_metrics_reach_the_run_metrics():
    world = legacy_world()
    world.run()
    names = {name for _, _, _, name, _ in world.metrics}
    assert {"train_train-loss", "server_loss", "server_accuracy"} <= names
    assert [r for _, r, _, name, _ in world.metrics if name == "server_loss"] == list(range(ROUNDS + 1))  # round 0: the initial model
    evaluated = legacy_world(run_config={**LEGACY, "fraction-evaluate": 1.0})
    evaluated.run()
    assert len(curve(evaluated, "evaluate_loss")) == ROUNDS and len(curve(evaluated, "evaluate_eval-acc")) == ROUNDS


def test_legacy_fedavg_the_default_workflow_and_the_message_api_fedavg_learn_the_same_model():
    models = []
    for server_app, client_app in ((LEGACY_SERVER, LEGACY_CLIENT), (WORKFLOW, LEGACY_CLIENT), (SERVER, CLIENT)):
        world = legacy_world(server_app=server_app, client_app=client_app)
        world.run()
        models.append(final_model(world))
    for other in models[1:]:  # the same weighted mean, summed in different orders of operations
        for a, b in zip(models[0], other, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_a_legacy_run_on_a_lossy_network_is_byte_identical_when_rerun():
    slow = {"client-0": NodeBehaviour(speed=SPEED / 10, slowdown_sigma=0.5)}
    logs = [log_of(legacy_world(5, links=lossy_links(0.3), behaviours=slow)) for _ in range(2)]
    assert logs[0] == logs[1]
    assert b'"train-reply"' in logs[0] and b'"drop"' in logs[0]


def test_a_legacy_run_is_byte_identical_in_another_process_with_other_hash_seeds():
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_flower_legacy as t; "
            "sys.stdout.buffer.write(t.log_of(t.legacy_world(5, links=t.lossy_links(0.3))))")
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, env=env).stdout
    assert out == log_of(legacy_world(5, links=lossy_links(0.3)))


def test_the_round_timeout_of_server_config_leaves_stragglers_behind_in_virtual_time():
    slow = {f"client-{k}": NodeBehaviour(speed=SPEED / 20) for k in (0, 1)}  # 96 s of work: past the 30 s timeout
    world = legacy_world(behaviours=slow)
    world.run()
    assert curve(world, "train_replies") == [K - 2] * ROUNDS
    assert curve(world, "train_failures") == [2] * ROUNDS  # Flower's REPLY_MESSAGE_UNAVAILABLE at the TTL: failures
    assert world.env.now == pytest.approx(ROUNDS * LEGACY["round-timeout"])


def test_a_server_with_max_workers_runs_that_many_exchanges_at_once(monkeypatch):
    monkeypatch.syspath_prepend(APP_DIR)
    from flower_digits.legacy import strategy

    def server_fn(context: Context) -> ServerAppComponents:
        server = LegacyServer(client_manager=SimpleClientManager(), strategy=strategy(context))
        server.set_max_workers(2)
        return ServerAppComponents(server=server, config=ServerConfig(num_rounds=1))

    world = legacy_world(server_app=ServerApp(server_fn=server_fn))
    world.run()
    assert curve(world, "train_replies") == [K]
    # three waves of two trainings, 2 epochs over shards of 240, 240 | 240, 239 | 239, 239 examples
    assert world.env.now == pytest.approx((240 + 240 + 239) * 2 / SPEED)


def test_a_legacy_strategy_waiting_for_more_clients_than_exist_stops_at_once_naming_the_settings():
    from netemu.flower import FlowerAppFailed

    started = time.monotonic()
    with pytest.raises(FlowerAppFailed, match=r"waits for 7 clients, more than the 6 Flower nodes .*min_available_clients"):
        legacy_world(run_config={**LEGACY, "min-available-nodes": K + 1}).run()
    assert time.monotonic() - started < 60  # not Flower's day of wall time on a condition variable


def test_polls_from_other_threads_than_the_server_apps_count_for_nothing(monkeypatch):
    """Flower's DefaultWorkflow polls get_node_ids() from a background thread every 5 s of
    wall time; such polls neither stop the run nor change it."""
    monkeypatch.syspath_prepend(APP_DIR)
    from flower_digits.server_app import app as digits

    polled = []
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        poller = threading.Thread(target=lambda: polled.extend(len(list(grid.get_node_ids())) for _ in range(10)))
        poller.start()
        poller.join()
        digits(grid, context)

    plain, polling = digits_world(), digits_world(server_app=app)
    assert log_of(polling) == log_of(plain) and polled == [K] * 10


def test_a_grid_call_from_a_thread_netemu_does_not_schedule_is_refused_in_one_line():
    from flwr.app import Message, RecordDict

    from netemu.flower import FlowerAppFailed

    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        errors = []

        def push() -> None:
            try:
                grid.send_and_receive([Message(RecordDict(), 1000, "query")])
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

        t = threading.Thread(target=push, name="my-thread")
        t.start()
        t.join()
        raise errors[0]

    with pytest.raises(FlowerAppFailed, match=r"Grid.push_messages called from thread 'my-thread', which netemu does not run in turns"):
        digits_world(server_app=app).run()


def test_client_apps_that_take_seconds_of_wall_time_change_nothing(monkeypatch):
    """The DefaultWorkflow's node-id polling runs every 5 s of wall time: a run whose ClientApps
    take 6 s of wall time in all gives the same log as one whose ClientApps take none."""
    from flwr.clientapp import ClientApp

    monkeypatch.syspath_prepend(APP_DIR)
    from flower_digits.legacy import client_app as fast

    slow = ClientApp()

    @slow.train()
    def train(msg, context):
        time.sleep(3.0)
        return fast(msg, context)

    config = {**LEGACY, "num-server-rounds": 1}
    quick = log_of(legacy_world(server_app=WORKFLOW, run_config=config, clients=2))
    started = time.monotonic()
    sleepy = log_of(legacy_world(server_app=WORKFLOW, client_app=slow, run_config=config, clients=2))
    assert time.monotonic() - started > 5.0  # Flower's poll ran at least once meanwhile
    assert sleepy == quick
    assert b"train" in quick and json.loads(quick.splitlines()[0])


SECAGG = Path(__file__).resolve().parents[1] / "scenarios" / "flower_secagg.toml"


def test_secagg_plus_with_dropouts_halts_the_rounds_it_cannot_complete_and_the_run_goes_on(tmp_path):
    from netemu.cli import main

    out = tmp_path / "run"
    assert main(["run", str(SECAGG), "--out", str(out), "--set", "run.rounds=6", "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["outcome"]["flower-secagg"][0]["rounds_done"] == 6
    loss = [float(line.split(",")[-1]) for line in (out / "metrics.csv").read_text().splitlines() if ",server_loss," in line]
    steps = [b - a for a, b in zip(loss, loss[1:])]
    assert any(s == 0 for s in steps) and any(s < 0 for s in steps)  # halted rounds keep the model; the others learn
    assert any("client app errors" in w for w in summary["warnings"])  # SecAgg+ clients that miss shares raise, as in Flower
    again = tmp_path / "again"
    assert main(["run", str(SECAGG), "--out", str(again), "--set", "run.rounds=6", "--quiet"]) == 0
    assert (out / "messages.jsonl").read_bytes() == (again / "messages.jsonl").read_bytes()


def test_local_dp_mod_on_a_numpy_client_is_reproducible_with_the_seed(monkeypatch):
    from flwr.client.mod import LocalDpMod
    from flwr.clientapp import ClientApp

    monkeypatch.syspath_prepend(APP_DIR)
    from flower_digits.legacy import client_fn

    def model(seed: int) -> list[np.ndarray]:
        noisy = ClientApp(client_fn=client_fn, mods=[LocalDpMod(clipping_norm=10.0, sensitivity=10.0, epsilon=5.0, delta=1e-5)])
        world = legacy_world(seed, client_app=noisy)
        assert world.run().complete and curve(world, "train_replies") == [K] * ROUNDS
        return final_model(world)

    a, b, c = model(2), model(2), model(3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))  # the noise is drawn, from the run's streams
