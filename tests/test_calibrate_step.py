"""tools/calibrate_step.py: the equal-initial-rate calibration prints the same figures
every time, and its figure is the eq. (4.36) average it says it is."""

import importlib.util
from pathlib import Path

import numpy as np

TOOL = Path(__file__).parent.parent / "tools" / "calibrate_step.py"
SMALL = """
[run]
name = "small"
seed = 3
rounds = 30
runs = 2

[topology]
kind = "star"
clients = 8

[data]
kind = "online"
iterations = 200
group_samples = [50, 100]

[[algorithm]]
name = "pao-fed-u1"

[[algorithm]]
name = "online-fedsgd"
"""


def load_tool():
    spec = importlib.util.spec_from_file_location("calibrate_step", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_calibration_is_reproducible_and_marks_the_closest_step(tmp_path, capsys):
    tool = load_tool()
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    argv = [str(path), "--reference", "pao-fed-u1", "--candidate", "online-fedsgd", "--values", "0.05,0.4", "--window", "20"]
    assert tool.main(argv) == 0
    first = capsys.readouterr().out
    assert tool.main(argv) == 0
    assert capsys.readouterr().out == first
    lines = first.splitlines()
    assert lines[0].startswith("small.toml, 2 runs, initial figure over iterations 0-19")
    ref = float(lines[1].split("initial ")[1].split(" dB")[0])
    figs = {v: float(line.split("initial ")[1].split(" dB")[0]) for v, line in zip((0.05, 0.4), lines[2:4])}
    best = min(figs, key=lambda v: abs(figs[v] - ref))
    assert lines[-1] == f"closest initial figure: mu = {best:g}"


def test_the_initial_figure_averages_linear_mse_over_runs_and_iterations():
    tool = load_tool()
    curves = np.array([[0.0, -10.0], [-10.0, -10.0]])  # dB
    assert abs(tool.db_of_mean(curves) - 10 * np.log10((1 + 0.1 + 0.1 + 0.1) / 4)) < 1e-12
    assert tool.mean_db(curves) == -7.5
