"""95 % t-intervals of means over Monte Carlo runs (summary.json, plot, report) and a
time-to-accuracy rule that can require the target to hold for k consecutive evaluations."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from netemu.cli import main
from netemu.errors import ReportError
from netemu.report import read_metrics
from netemu.report.html import collect
from netemu.report.intervals import t_band, t_interval
from netemu.report.target import Target, parse_target, time_to_target

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
T_975_2 = 0.95 * math.sqrt(2 / (4 * 0.975 * 0.025))  # Student t, 97.5 % quantile, 2 degrees of freedom, in closed form


def test_the_interval_of_three_values_is_the_textbook_one():
    lo, hi = t_interval([1.0, 2.0, 3.0])
    assert (lo, hi) == pytest.approx((2 - T_975_2 / math.sqrt(3), 2 + T_975_2 / math.sqrt(3)), rel=1e-12)
    assert t_interval([5.0]) is None and t_interval([1.0, math.nan]) is None  # one finite value: no interval


def test_the_quantile_is_student_t_and_up_to_101_runs_it_is_written_out_not_imported():
    import subprocess
    import sys

    from scipy.special import stdtrit
    from scipy.stats import t

    from netemu.report.intervals import _T975, LEVEL, _quantile, _t_quantile

    assert LEVEL == 0.95  # _T975 holds the quantiles at 0.975
    dof = np.arange(1, 2000)
    # the written-out table is scipy's quantile (scipy 1.17.1's bits; within 2 ulp, so that another scipy
    # passes — and whatever scipy is installed, a run of up to 101 Monte Carlo runs writes the same bytes)
    np.testing.assert_array_max_ulp(_T975, t.ppf(0.975, dof[:len(_T975)]), maxulp=2)
    assert np.array_equal(_t_quantile(dof[:len(_T975)]), _T975)
    assert all(_quantile(int(d)) == _T975[d - 1] for d in dof[:len(_T975)])
    assert np.array_equal(_t_quantile(np.array([[1, 2], [100, 3]])), _T975[np.array([[0, 1], [99, 2]])])
    beyond = dof[len(_T975):]  # past the table, or not a whole number: scipy.special's stdtrit, what t.ppf calls
    assert np.array_equal(_t_quantile(beyond), t.ppf(0.975, beyond))
    for other in (2.0, np.array([2, 101])):
        assert np.array_equal(_t_quantile(other), stdtrit(other, 0.975))
    # writing a run's intervals imports neither scipy.stats (~1.4 s of CPU) nor, up to 101 runs, scipy.special (~0.3 s)
    code = ("import sys; from netemu.report.intervals import t_band, t_interval; t_interval([1.0, 2.0, 4.0]); "
            "t_band([[1.0, 2.0], [3.0, 5.0], [2.0, 1.0]]); print('scipy.special' in sys.modules, 'scipy.stats' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == ["False", "False"]


def test_a_db_metric_gets_the_linear_interval_converted_to_db():
    db = [-10.0, -12.0, -11.0]
    lin = [10 ** (v / 10) for v in db]
    lo, hi = t_interval(lin)
    assert t_interval(db, "mse_db") == pytest.approx((10 * math.log10(lo), 10 * math.log10(hi)))
    lo_wide, hi_wide = t_interval([0.0, -30.0, -30.0], "mse_db")
    assert lo_wide is None and hi_wide is not None  # the linear lower end is below 0: no lower end in dB


def test_a_band_leaves_out_the_runs_that_did_not_report_a_point():
    lo, hi = t_band(np.array([[1.0, 2.0], [3.0, np.nan], [2.0, 7.0]]))
    assert (lo[0], hi[0]) == pytest.approx(t_interval([1.0, 3.0, 2.0]))
    assert (lo[1], hi[1]) == pytest.approx(t_interval([2.0, 7.0]))


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    out = tmp_path_factory.mktemp("ci") / "q"
    assert main(["run", str(SCENARIOS / "quickstart.toml"), "--out", str(out), "--quiet", "--set", "run.rounds=4",
                 "--set", "run.runs=3", "--set", "output.plots=false"]) == 0
    return out


def test_summary_json_gives_each_final_mean_its_t_interval_over_runs(three):
    summary = json.loads((three / "summary.json").read_text())
    rows = read_metrics(three)
    last = [max((r for r in rows if r[1] == run and r[4] == "mse"), key=lambda r: r[2])[5] for run in range(3)]
    ci = summary["final_ci95"]["fedavg"]["mse"]
    assert ci["runs"] == 3 and (ci["lo"], ci["hi"]) == pytest.approx(t_interval(last))
    assert ci["lo"] < summary["final"]["fedavg"]["mse"] < ci["hi"]


def test_plot_draws_the_t_interval_by_default_from_three_runs(three, tmp_path, monkeypatch):
    import netemu.report as report

    bands = []
    real = report._figure
    monkeypatch.setattr(report, "_figure", lambda *a, **k: bands.append(k.get("band")) or real(*a, **k))
    assert main(["plot", str(three), "--metric", "mse", "--out", str(tmp_path / "a.png")]) == 0
    assert main(["plot", str(three), "--metric", "mse", "--band", "minmax", "--out", str(tmp_path / "b.png")]) == 0
    assert bands == ["ci", "minmax"]
    assert report.resolve_band("auto", 2) == "minmax" and report.resolve_band("auto", 3) == "ci"


def test_the_report_curves_carry_the_interval_and_show_it_by_default(three, tmp_path):
    c = collect(three)["curves"]["fedavg"]["mse"]
    rows = read_metrics(three)
    k = 2
    values = [r[5] for r in rows if r[4] == "mse" and r[2] == c["round"][k]]
    assert (c["ci_lo"][k], c["ci_hi"][k]) == pytest.approx(t_interval(values))
    out = tmp_path / "r.html"
    assert main(["report", str(three), "--out", str(out)]) == 0
    page = out.read_text()
    assert 'name="band" value="ci" checked' in page and "final (mean over runs [95 % t-interval])" in page


def _folders(values_per_run):
    rows = [("a", run, rnd, float(rnd), "mse", v) for run, vals in enumerate(values_per_run) for rnd, v in enumerate(vals)]
    return [{"rows": rows, "bytes_at": {}}], [{"folder": 0, "algorithm": "a", "label": "a"}]


def test_a_target_that_must_hold_for_k_evaluations_ignores_a_single_spike():
    folders, series = _folders([[1.0, 0.1, 1.0, 0.2, 0.2, 0.2, 0.2]])  # a noisy dip at round 1
    once = time_to_target(folders, series, parse_target("mse=0.3"))
    held = time_to_target(folders, series, parse_target("mse=0.3:3"))
    assert once["series"][0]["round"] == 1 and once["rule"] == "the first evaluation ≤ the target"
    assert held["series"][0]["round"] == 5 and held["rule"] == "the first evaluation that ends 3 consecutive evaluations ≤ the target"


def test_time_to_target_gives_the_interval_of_the_times_of_the_runs_that_reached_it():
    folders, series = _folders([[1.0, 0.1], [1.0, 1.0, 0.1], [1.0, 1.0, 1.0, 0.1]])
    x = time_to_target(folders, series, Target("mse", 0.3))["series"][0]
    assert x["reached"] == 3 and x["time"] == 2.0 and x["time_ci95"] == pytest.approx(t_interval([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("text", ["mse=0.1:0", "mse=0.1:x", "mse=0.1:", "mse=0.1:-2"])
def test_a_bad_hold_count_is_refused_with_the_accepted_form(text):
    with pytest.raises(ReportError, match="METRIC=VALUE:K with K >= 1"):
        parse_target(text)
