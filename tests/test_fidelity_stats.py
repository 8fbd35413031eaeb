"""tools/fidelity_stats.py: the verdict rule decides as docs/fidelity.md states it, the
margins point the way the claims do, and every claim names algorithms its scenario runs."""

import tomllib

import numpy as np
import pytest
from helpers import load_tool



fs = load_tool("fidelity_stats")


@pytest.mark.parametrize("margins, verdict", [
    ([1.0] * 8 + [-0.1, -0.2], "reproduced"),  # 8 of 10, CI above 0
    ([1.0] * 7 + [-0.1, -0.2, -0.3], "seed-dependent"),  # 7 of 10: too few wins, whatever the CI
    ([5.0, 5.0, -0.1, -0.1, -0.1, -0.1, -0.1, -0.1, -0.1, -0.1], "seed-dependent"),  # 2 of 10 but mean > 0
    ([-1.0] * 8 + [0.1, 0.2], "not reproduced"),  # 2 of 10, CI below 0
    ([0.1, -0.1] * 5, "seed-dependent"),
    ([0.3, 0.5] + [0.4] * 8, "reproduced"),  # 10 of 10 and a CI that excludes 0
    ([1.0] * 8 + [-20.0, -20.0], "seed-dependent"),  # 8 of 10, but the mean is below 0
])
def test_the_verdict_rule(margins, verdict):
    assert fs.summarize(margins).verdict == verdict


def test_the_interval_is_students_t_over_the_seeds():
    s = fs.summarize([1.0, 2.0, 3.0, 4.0])
    half = 3.182446305284263 * np.std([1, 2, 3, 4], ddof=1) / 2  # t(0.975, 3)
    assert (s.wins, s.n, s.mean) == (4, 4, 2.5)
    assert s.low == pytest.approx(2.5 - half) and s.high == pytest.approx(2.5 + half)


def test_a_lower_error_and_a_higher_accuracy_both_give_a_positive_margin():
    err = fs.Claim("e", "", "", "", "s", ("a", "b", "c"), "nmsd", "dB", 2)
    assert err.margin_of({"a": -20.0, "b": -18.0, "c": -17.5}) == pytest.approx(0.5)  # the smallest step
    assert err.margin_of({"a": -20.0, "b": -21.0, "c": -17.5}) == pytest.approx(-1.0)
    acc = fs.Claim("a", "", "", "", "s", ("a", "b"), "accuracy", "points", 2)
    assert acc.margin_of({"a": 97.0, "b": 96.0}) == pytest.approx(1.0)
    assert acc.value(np.array([0.5, 0.9, 0.95])) == pytest.approx(92.5)


def test_a_db_metric_is_averaged_in_linear_scale():
    c = fs.Claim("p", "", "", "", "s", ("a", "b"), "mse_db", "dB", 2)
    assert c.value(np.array([5.0, 0.0, -10.0])) == pytest.approx(10 * np.log10((1 + 0.1) / 2))
    lin = fs.Claim("p", "", "", "", "s", ("a", "b"), "mse", "dB", 2)
    assert lin.value(np.array([5.0, 1.0, 0.1])) == pytest.approx(10 * np.log10(0.55))


@pytest.mark.parametrize("claim", fs.CLAIMS, ids=lambda c: c.key)
def test_every_claim_names_algorithms_of_its_scenario(claim):
    raw = tomllib.loads((fs.SCENARIOS / f"{claim.scenario}.toml").read_text())
    labels = {a.get("label", a["name"]) for a in raw["algorithm"]}
    assert set(claim.labels()) <= labels
    assert claim.unit in ("dB", "points") and claim.source and claim.data


def test_help_states_the_rule_and_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit):
        fs.main(["--help"])
    assert "sign holds in >= 80 %" in capsys.readouterr().out.replace("\n", " ")
    assert fs.main(["--claims", "nope"]) == 2
    assert "--claims nope: unknown; accepted:" in capsys.readouterr().err
    assert fs.main(["--seeds", "1"]) == 2


@pytest.mark.parametrize("claim", [c for c in fs.CLAIMS if "peers" in c.data], ids=lambda c: c.key)
def test_a_claims_peer_count_is_its_scenarios(claim):
    table = tomllib.loads((fs.SCENARIOS / f"{claim.scenario}.toml").read_text())
    assert f"{table['topology']['peers']} peers" in claim.data
