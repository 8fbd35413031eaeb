"""netemu sweep: grids, one folder per point, resume, both executors, plots against a parameter."""

import csv

import pytest

from netemu.cli import main
from netemu.sweep import SweepError, grid_points, parse_grid, sweep

SCENARIO = """
[run]
rounds = 3
[topology]
kind = "star"
clients = 3
[nodes]
speed = 1000.0
[data]
kind = "linear"
dim = 2
[[algorithm]]
name = "fedavg"
"""


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    return path


def test_grids_parse_lists_and_inclusive_ranges():
    grid = parse_grid(["algorithm.lr=0.1,0.2", "run.seed=1..3", "algorithm.label=a,b"])
    assert grid == {"algorithm.lr": [0.1, 0.2], "run.seed": [1, 2, 3], "algorithm.label": ["a", "b"]}
    assert len(list(grid_points(grid))) == 12
    assert next(grid_points(grid))[0] == "lr=0.1__seed=1__label=a"


@pytest.mark.parametrize("bad", ["run.seed", "run.seed=", "run.seed=5..1"])
def test_a_bad_grid_says_what_is_expected(bad):
    with pytest.raises(SweepError, match="run.seed"):
        parse_grid([bad])


def rows(out):
    with open(out / "sweep.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_a_small_sweep_runs_every_point_in_its_own_folder(scenario, tmp_path, executor):
    out = tmp_path / "sweep"
    sweep(scenario, parse_grid(["algorithm.lr=0.05,0.1", "run.seed=1..2"]), out, executor=executor, workers=2)
    table = rows(out)
    assert {r["folder"] for r in table} == {f"lr={lr}__seed={s}" for lr in (0.05, 0.1) for s in (1, 2)}
    assert all((out / r["folder"] / "summary.json").is_file() for r in table)
    assert {r["metric"] for r in table} == {"mse", "participants"}


def test_a_sweep_run_again_skips_the_finished_points(scenario, tmp_path):
    out = tmp_path / "sweep"
    grid = parse_grid(["run.seed=1..2"])
    sweep(scenario, grid, out, workers=1)
    stamp = (out / "seed=1" / "summary.json").stat().st_mtime_ns
    (out / "seed=2" / "summary.json").unlink()  # as if interrupted
    seen = []
    sweep(scenario, grid, out, workers=1, progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (1, 2) and seen[-1] == (2, 2)
    assert (out / "seed=1" / "summary.json").stat().st_mtime_ns == stamp
    assert len(rows(out)) == 4


def test_every_point_is_validated_before_anything_runs(scenario, tmp_path, capsys):
    assert main(["sweep", str(scenario), "--grid", "algorithm.lr=0.1,-1", "--out", str(tmp_path / "s"), "--quiet"]) == 2
    assert "algorithm[0].lr = -1" in capsys.readouterr().err and not (tmp_path / "s").exists()


def test_plot_draws_a_final_metric_against_a_swept_parameter(scenario, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", str(scenario), "--grid", "algorithm.lr=0.05,0.1", "--out", str(out), "--quiet", "--workers", "1"]) == 0
    png = tmp_path / "mse.png"
    assert main(["plot", str(out), "--metric", "mse", "--x", "algorithm.lr", "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["plot", str(out), "--metric", "mse", "--x", "run.seed"]) == 2
    assert "'run.seed' was not swept" in capsys.readouterr().err
