"""netemu against Flower's own simulation (Ray): one app, FedAvg, FedAdam and FedMedian, an
ideal network on netemu.  Needs the `flower-simulation` extra (flwr[simulation], Ray);
slow (Ray starts in about half a minute)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr", reason="Flower is not installed: pip install -e '.[flower]'")
pytest.importorskip("ray", reason="Flower's Ray simulation is not installed: pip install -e '.[flower-simulation]'")

sys.path.insert(0, str(Path(__file__).parent))
from flower_strategy_app import server_app  # noqa: E402
from test_flower import APP_DIR, digits_world, final_model  # noqa: E402

NODES, ROUNDS = 4, 3

RAY = """
import sys
sys.path[:0] = [{tests!r}, {app_dir!r}]
from flower_strategy_app import server_app
from flower_digits.client_app import app as client_app
from flwr.simulation import run_simulation
for strategy in ("fedavg", "fedadam", "fedmedian"):
    run_simulation(server_app(strategy, {rounds}, {nodes}, out={out!r} + "/" + strategy + ".npz"), client_app, num_supernodes={nodes},
                   backend_config={{"client_resources": {{"num_cpus": 1}}, "init_args": {{"num_cpus": 1, "include_dashboard": False}}}})
"""


@pytest.fixture(scope="module")
def ray_models(tmp_path_factory) -> dict[str, list[np.ndarray]]:
    """Final models of Flower's Ray simulation (its own process: Ray owns it while it runs)."""
    out = tmp_path_factory.mktemp("ray")
    code = RAY.format(tests=str(Path(__file__).parent), app_dir=APP_DIR, rounds=ROUNDS, nodes=NODES, out=str(out))
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=900)
    models = {}
    for strategy in ("fedavg", "fedadam", "fedmedian"):
        with np.load(out / f"{strategy}.npz") as saved:
            models[strategy] = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    return models


@pytest.mark.slow
@pytest.mark.parametrize(("strategy", "atol"), [("fedmedian", 0.0), ("fedavg", 1e-12), ("fedadam", 1e-12)])
def test_an_ideal_network_gives_the_model_of_flowers_own_ray_simulation(ray_models, strategy, atol):
    """FedMedian does not depend on the order of the replies: equal.  FedAvg and FedAdam sum
    them in the order they arrive, which under Ray is not netemu's push order: to 1e-12."""
    world = digits_world(server_app=server_app(strategy, ROUNDS, NODES), clients=NODES,
                         run_config={"local-epochs": 1})  # Flower's run_simulation passes an empty run config
    world.run()
    for got, want in zip(final_model(world), ray_models[strategy], strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=atol)
    assert not np.allclose(final_model(world)[0], 0)  # it learned something
