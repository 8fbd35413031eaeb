"""Synthetic data: each client's samples come from its own named stream, drawn in a fixed order."""

import numpy as np
import pytest

from netemu.data import ClusteredLinearData, LinearData, make_clustered_linear, make_linear
from netemu.engine.rng import Streams

CLIENTS = ["client-0", "client-7", "client-12"]


def test_a_clients_linear_data_is_drawn_from_its_own_stream_count_then_inputs_then_noise():
    p = LinearData(dim=4, samples_min=3, samples_max=9, noise=0.3)
    streams = Streams(5)
    task = make_linear(p, CLIENTS, streams)
    w_star = streams.generator("data/truth").standard_normal(4)
    for c in CLIENTS:
        rng = streams.generator(f"data/{c}")
        n = int(rng.integers(3, 10))
        X = rng.standard_normal((n, 4))
        y = X @ w_star + 0.3 * rng.standard_normal(n)
        assert np.array_equal(task.parts[c][0], X) and np.array_equal(task.parts[c][1], y), c


def test_adding_a_client_changes_no_other_clients_linear_data():
    small = make_linear(LinearData(), CLIENTS[:2], Streams(3))
    large = make_linear(LinearData(), CLIENTS, Streams(3))
    for c in CLIENTS[:2]:
        assert all(np.array_equal(a, b) for a, b in zip(small.parts[c], large.parts[c]))


def test_a_clients_validation_set_has_its_training_size_and_its_own_stream():
    p = ClusteredLinearData(dim=3, clusters=2, samples_min=2, samples_max=7, validation=True)
    streams = Streams(8)
    task = make_clustered_linear(p, CLIENTS, streams)
    for c in CLIENTS:
        n = task.parts[c][0].shape[0]
        X = streams.generator(f"data/{c}/validation").standard_normal((n, 3))
        assert np.array_equal(task.validation[c][0], X), c


def test_drawn_parts_are_the_kept_parts_drawn_again():
    from netemu.data import LinearData, make_linear
    from netemu.data.synthetic import DrawnParts
    from netemu.engine.rng import Streams

    clients = [f"client-{k}" for k in range(40)]
    kept = make_linear(LinearData(dim=3), clients, Streams(7))
    drawn = make_linear(LinearData(dim=3, in_memory=False), clients, Streams(7))
    assert isinstance(drawn.parts, DrawnParts) and list(drawn.parts) == clients and len(drawn.parts) == 40
    for c in clients:
        assert drawn.parts.size(c) == kept.parts[c][1].shape[0]
        for a, b in zip(drawn.parts[c], kept.parts[c]):
            assert np.array_equal(a, b)
    assert np.array_equal(drawn.w_star, kept.w_star) and np.array_equal(drawn.test[0], kept.test[0])
    with pytest.raises(KeyError):
        drawn.parts["client-40"]


@pytest.mark.parametrize("scenario, sets", [
    ("quickstart_scripted.toml", ["run.rounds=6"]),  # FedAvg with a crash and a recovery
    ("stragglers_async.toml", ["run.rounds=6"]),
])
def test_a_run_with_drawn_data_writes_the_files_of_a_run_with_kept_data(tmp_path, scenario, sets):
    from pathlib import Path

    from netemu.run.runner import execute
    from netemu.scenario import load_scenario

    root = Path(__file__).parent.parent / "scenarios"
    files = []
    for in_memory in ("true", "false"):
        out = tmp_path / in_memory
        execute(load_scenario(root / scenario, [*sets, "run.runs=1", "output.plots=false", f"data.in_memory={in_memory}"]),
                out, quiet=True)
        files.append({f.relative_to(out): f.read_bytes() for f in sorted(out.rglob("*"))
                      if f.suffix in (".jsonl", ".csv") and f.name != "scenario.toml"})
    assert files[0] == files[1] and len(files[0]) >= 2


def test_the_calibration_step_draws_only_the_median_client_of_drawn_data():
    from netemu.data.synthetic import DrawnParts
    from netemu.plugins import task
    from netemu.tasks.supervised import LinearParams

    clients = [f"client-{k}" for k in range(60)]
    kept = make_linear(LinearData(dim=3), clients, Streams(2))
    drawn = make_linear(LinearData(dim=3, in_memory=False), clients, Streams(2))
    assert isinstance(drawn.parts, DrawnParts)
    draws = []
    plain = drawn.parts._draw
    drawn.parts._draw = lambda rng: draws.append(1) or plain(rng)
    step_kept, work_kept = task("linear").make(LinearParams(lr=0.1), kept, Streams(2)).step_cost()
    step_drawn, work_drawn = task("linear").make(LinearParams(lr=0.1), drawn, Streams(2)).step_cost()
    assert len(draws) == 1 and work_kept == work_drawn and np.array_equal(step_kept(), step_drawn())
