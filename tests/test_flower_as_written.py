"""Flower apps as written: the app's own run-config defaults (merged as `flwr run` merges them),
rounds counted as the app counts them, warnings about Flower's default timeouts and long waits,
wall-clock sleeps in a ClientApp, a relative app_dir checked by validate, and a stop at the
horizon that names what the ServerApp waited for."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402

from netemu import Bernoulli, Link, NodeBehaviour, World, star  # noqa: E402
from netemu.cli import main  # noqa: E402
from netemu.config import ConfigError  # noqa: E402
from netemu.flower import add_flower, load_client_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP_DIR = str(ROOT / "examples" / "flower-digits")
SERVER, CLIENT = "flower_digits.server_app:app", "flower_digits.client_app:app"
STAR = '[run]\nrounds = 2\n[topology]\nkind = "star"\nclients = 3\n[nodes]\nspeed = 1000.0\n'
APPS = 'server_app = "flower_digits.server_app:app"\nclient_app = "flower_digits.client_app:app"\n'


def _world(server_app=SERVER, client_app=CLIENT, run_config=None, links=None, clients=3, **kw) -> World:
    behaviours = {f"client-{k}": NodeBehaviour(speed=1000.0) for k in range(clients)}
    world = World(star(clients), seed=1, links=links, behaviours=behaviours)
    add_flower(world, server_app, client_app, run_config=run_config, app_dir=APP_DIR, **kw)
    return world


# ---------------------------------------------------------------- the app's own config


def test_the_apps_pyproject_defaults_are_the_run_config_under_the_given_values(tmp_path):
    app = tmp_path / "app"
    (app / "pkg").mkdir(parents=True)
    (app / "pkg" / "__init__.py").write_text("")
    (app / "pkg" / "apps.py").write_text("from flwr.clientapp import ClientApp\nfrom flwr.serverapp import ServerApp\n"
                                         "server = ServerApp()\nclient = ClientApp()\n")
    (app / "pyproject.toml").write_text('[tool.flwr.app]\npublisher = "x"\n[tool.flwr.app.config]\n'
                                        'num-server-rounds = 3\nlr = 0.1\n[tool.flwr.app.config.model]\nwidth = 8\n')
    world = World(star(2), seed=1)
    add_flower(world, "pkg.apps:server", "pkg.apps:client", run_config={"lr": 0.5}, app_dir=str(app))
    assert world.actors["server"].run_config == {"num-server-rounds": 3, "lr": 0.5, "model.width": 8}  # flwr's flattening
    with pytest.raises(ConfigError, match=r"run_config\.lr2: a key of the app's \[tool\.flwr\.app\.config\] in .*pyproject\.toml"):
        add_flower(World(star(2), seed=1), "pkg.apps:server", "pkg.apps:client", run_config={"lr2": 0.5}, app_dir=str(app))


def test_a_scenario_gets_the_example_apps_defaults_and_run_rounds(tmp_path):
    from netemu.flower.spec import SPEC, FlowerParams

    world = World(star(3), seed=1)
    SPEC.build(world, FlowerParams(server_app=SERVER, client_app=CLIENT, app_dir=APP_DIR, run_config={"lr": 0.2}), None, 7)
    rc = world.actors["server"].run_config
    assert rc["num-server-rounds"] == 7 and rc["lr"] == 0.2 and rc["local-epochs"] == 5  # run.rounds, given, the app's default


def test_validate_refuses_a_run_config_key_the_app_does_not_declare(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(f'{STAR}[flower]\n{APPS}app_dir = "{APP_DIR}"\nrun_config = {{ learning-rate = 0.1 }}\n')
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "flower.run_config.learning-rate" in err and "pyproject.toml" in err and "flwr run" in err


def test_validate_finds_a_missing_module_with_a_relative_app_dir_from_any_working_directory(tmp_path, monkeypatch, capsys):
    sc = tmp_path / "sc"
    sc.mkdir()
    rel = Path("..") / Path(*([".."] * len(sc.resolve().parts[1:]))) / Path(APP_DIR).relative_to("/")  # relative to sc/
    (sc / "bad.toml").write_text(f'{STAR}[flower]\nserver_app = "flower_digits.nope:app"\n'
                                 f'client_app = "flower_digits.client_app:app"\napp_dir = "{rel.as_posix()}"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "sc/bad.toml"]) == 2  # the scenario's path relative too: the form the docs use
    assert "no module 'flower_digits.nope' in app_dir" in capsys.readouterr().err


# ---------------------------------------------------------------- rounds as the app counts them


def _zero_based_apps() -> tuple[ServerApp, ClientApp]:
    server, client = ServerApp(), ClientApp()

    @server.main()
    def run(grid: Grid, context: Context) -> None:
        for rnd in range(int(context.run_config["num-server-rounds"])):  # rounds 0 .. N-1, as quickstart-pandas does
            messages = [Message(RecordDict({"config": ConfigRecord({"x": 1})}), node, "query", group_id=str(rnd))
                        for node in grid.get_node_ids()]
            replies = list(grid.send_and_receive(messages, timeout=10.0))
            assert replies

    @client.query()
    def query(msg: Message, context: Context) -> Message:
        return Message(RecordDict({"m": MetricRecord({"v": 1.0})}), reply_to=msg)

    return server, client


def test_an_app_that_numbers_its_rounds_from_zero_does_all_its_rounds():
    server, client = _zero_based_apps()
    world = World(star(2), seed=1)
    add_flower(world, server, client, run_config={"num-server-rounds": 3})
    world.run()
    assert world.rounds_done == 3


def test_flowers_own_numbering_still_leaves_the_initial_evaluation_out():
    world = _world(run_config={"num-server-rounds": 2, "round-timeout": 30.0})
    world.run()
    assert world.rounds_done == 2


# ---------------------------------------------------------------- waits and sleeps


def test_waiting_on_flowers_default_round_timeout_is_a_warning_with_the_fix(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(f'{STAR}[links.uplink]\nloss = {{ model = "bernoulli", p = 0.5 }}\n'
                    f'[flower]\n{APPS}app_dir = "{APP_DIR}"\nwait_warning = 100.0\n')  # round-timeout: the app's 3600 s
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--quiet", "--set", "output.plots=false"]) == 0
    warnings = json.loads((tmp_path / "run" / "summary.json").read_text())["warnings"]
    default = [w for w in warnings if "default round timeout of 3600 s" in w]
    assert default and "strategy.start(..., timeout=30.0)" in default[0] and "docs/flower.md" in default[0]
    assert any("lasted more than 100 virtual seconds" in w for w in warnings)  # a lost reply: a 3600 s round
    assert "default round timeout of 3600 s" in capsys.readouterr().err  # and on stderr


def test_an_explicit_round_timeout_gives_no_such_warning():
    world = _world(run_config={"num-server-rounds": 2, "round-timeout": 30.0})
    world.run()
    assert world.actors["server"].summary_warnings() == []


def test_a_clientapps_wall_clock_sleep_is_reported_in_one_line():
    inner = load_client_app(CLIENT, app_dir=APP_DIR)
    sleepy = ClientApp()

    @sleepy.train()
    def train(msg: Message, context: Context) -> Message:
        time.sleep(0.01)
        return inner(msg, context)

    world = _world(client_app=sleepy, run_config={"num-server-rounds": 1, "round-timeout": 30.0})
    world.run()
    (line,) = world.actors["server"].summary_warnings()
    assert "ClientApps called time.sleep 3 time(s)" in line and "virtual time did not" in line and "\n" not in line


def test_a_stop_at_the_horizon_names_what_the_serverapp_waits_for():
    app = ServerApp()

    @app.main()
    def run(grid: Grid, context: Context) -> None:
        content = RecordDict({"arrays": ArrayRecord([np.zeros((64, 10)), np.zeros(10)]), "config": ConfigRecord({"lr": 0.5})})
        grid.send_and_receive([Message(content, node, "train") for node in grid.get_node_ids()], timeout=None)

    links = {(f"client-{k}", "server"): Link(loss=Bernoulli(1.0), link_class="uplink") for k in range(3)}
    world = _world(server_app=app, links=links)
    world.run(max_time=100.0)
    assert world.stopped_by == "horizon"
    first, what = next(iter(world.stop_waits.items()))
    assert first == "server" and "replies to 3 'train' message(s) of round" in what and "default message TTL of 12 h" in what
