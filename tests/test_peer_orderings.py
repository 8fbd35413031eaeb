"""The orderings of thesis §3.4 (zCDP-NFL) and §6.3 (NPFL-RL) on the shipped peer
scenarios (3 Monte Carlo runs each; Figs. 6.2 and 6.3 with 10, as §6.3 averages 10
experiments).  Claims whose sign changes with the seed (Fig. 6.2's DPG, Fig. 6.3's rich
peer) are judged over 10 root seeds in tests/test_fidelity_verdicts.py.
Slow: about 20 minutes on two cores; run with -m slow."""

from pathlib import Path

import numpy as np
import pytest

from helpers import run_curves

SCENARIOS = Path(__file__).parent.parent / "scenarios"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """results(scenario, metric, labels=None, seed=None): per algorithm the metric per
    iteration, averaged over runs; `labels` keeps only those algorithms, `seed` replaces
    the root seed (independent data, graph and noise draws)."""
    cache = {}

    def get(name, metric, labels=None, seed=None, runs=None):
        key = (name, tuple(labels) if labels else None, seed, runs)
        if key not in cache:
            out = tmp_path_factory.mktemp(name) / "run"
            overrides = ([f"run.seed={seed}"] if seed else []) + ([f"run.runs={runs}"] if runs else [])
            cache[key] = run_curves(SCENARIOS / f"{name}.toml", out, labels, overrides)
        return cache[key][metric]

    return get


def final(curve: np.ndarray, last: int = 10) -> float:
    return float(np.mean(curve[-last:]))


# The (ε,δ) and P-ADMM arms run with another root seed than the zCDP-NFL arm: each variant
# has its own data, graph and noise draws, so the comparisons test the algorithms and their
# calibrations, not one set of Gaussian draws scaled by the ratio of the two σ's.
OTHER_SEED = 101


@pytest.mark.parametrize("scenario", ["zcdpnfl_fig3_1a", "zcdpnfl_fig3_2"])
def test_zcdp_nfl_beats_the_subgradient_method_and_epsilon_delta_calibration_on_nonsmooth_objectives(results, scenario):
    r = {alg: final(c) for alg, c in results(scenario, "error").items()}
    eps = final(results(scenario, "error", ["epsdelta-nfl"], OTHER_SEED)["epsdelta-nfl"])
    assert r["zcdp-nfl"] < r["zcdp-grad-nfl"] / 3  # "significantly outperforms": a factor of 3 (≥ 4.8 dB)
    assert r["zcdp-nfl"] < eps / 3


BUDGETS = ["0.0001", "0.0003", "0.001", "0.003", "0.01"]
# Every budget of Fig. 3.1b runs with its own root seeds (zCDP-NFL arm 40 + i, (ε,δ) arm
# 140 + i): on one seed the five zCDP-NFL runs would add the same Gaussian draws scaled
# by 1/√φ⁽¹⁾, and "more privacy, more error" would follow from the scaling alone.
ZCDP_SEEDS = {b: 40 + i for i, b in enumerate(BUDGETS)}
EPS_SEEDS = {b: 140 + i for i, b in enumerate(BUDGETS)}


def test_zcdp_calibration_beats_epsilon_delta_at_every_total_privacy(results):
    def last(arm, b, seed):
        return results("zcdpnfl_fig3_1b", "error", [f"{arm}-phi{b}"], seed)[f"{arm}-phi{b}"][-1]

    zcdp = [last("zcdp-nfl", b, ZCDP_SEEDS[b]) for b in BUDGETS]
    eps = [last("epsdelta-nfl", b, EPS_SEEDS[b]) for b in BUDGETS]
    for z, e in zip(zcdp, eps):
        # a factor of 3 (≥ 4.8 dB) at every budget; measured 17.9–23.2 dB (docs/fidelity.md §7)
        assert z < e / 3
    # more privacy (smaller budget), more error; measured 1.9–11.1 dB between neighbouring
    # budgets with these seeds (docs/fidelity.md §7)
    assert zcdp == sorted(zcdp, reverse=True)


def test_on_ridge_zcdp_nfl_beats_p_admm_at_every_total_privacy(results):
    r = final(results("zcdpnfl_fig3_3a", "error", ["zcdp-nfl"])["zcdp-nfl"])
    assert r < final(results("zcdpnfl_fig3_3a", "error", ["p-admm"], OTHER_SEED)["p-admm"])
    r = {alg: c[-1] for alg, c in results("zcdpnfl_fig3_3b", "error", [f"zcdp-nfl-phi{b}" for b in BUDGETS]).items()}
    p = {alg: c[-1] for alg, c in results("zcdpnfl_fig3_3b", "error", [f"p-admm-phi{b}" for b in BUDGETS], OTHER_SEED).items()}
    for phi in BUDGETS:
        assert r[f"zcdp-nfl-phi{phi}"] < p[f"p-admm-phi{phi}"]


def test_npfl_small_tau_beats_tau_0_early_large_tau_degrades_the_steady_state_and_nfl_is_worst(results):
    r = results("npflrl_fig6_1", "test_mse")
    assert r["npfl-tau0.05"][19] < r["npfl-tau0.0"][19]
    assert final(r["npfl-tau0.4"]) > final(r["npfl-tau0.05"])
    assert final(r["nfl"]) > max(final(c) for alg, c in r.items() if alg != "nfl")


def db(x: float) -> float:
    return 10 * np.log10(x)


def test_npfl_rl_with_the_actor_critic_beats_npfl_with_fixed_tau_and_beats_policy_gradient(results):
    # 10 runs, as §6.3 averages 10 experiments; measured: SAC 1.1 dB and batch SAC 1.4 dB below NPFL
    r = {alg: final(c) for alg, c in results("npflrl_fig6_2", "test_mse", seed=None, runs=10).items()}
    for alg in ("npfl-rl-sac", "npfl-brl-sac"):
        assert db(r[alg]) < db(r["npfl-tau0.05"]) - 0.5  # "better ... steady-state accuracy": a visible gap
    assert r["npfl-rl-sac"] < r["npfl-rl-dpg"]


@pytest.mark.xfail(strict=True, reason="docs/fidelity.md §9: over 10 runs the poor peer's mean tau rises and does not fall")
def test_the_data_poor_peer_raises_inter_cluster_learning_then_lowers_it(tmp_path):
    # Fig. 6.3 shows one realization; the claim is about a peer's needs, so it is checked on
    # the mean curve of 10 runs (the rich peer's tau, per run: tests/test_fidelity_verdicts.py)
    out = tmp_path / "run"
    run_curves(SCENARIOS / "npflrl_fig6_3.toml", out, ["npfl-rl-sac"], ["run.runs=10"])
    poor = per_run(out, "tau_poor", "npfl-rl-sac")
    mean_poor = poor.mean(axis=0)
    peak = int(np.argmax(mean_poor))
    assert mean_poor[peak] > mean_poor[0] + 0.02 and mean_poor[-1] < mean_poor[peak] - 0.02  # rises, then falls


def per_run(out, metric: str, algorithm: str) -> np.ndarray:
    """runs × iterations of one metric of one algorithm from a run folder."""
    import csv
    from collections import defaultdict

    by = defaultdict(dict)
    with open(out / "metrics.csv") as f:
        for r in csv.DictReader(f):
            if r["metric"] == metric and r["algorithm"] == algorithm:
                by[int(r["run"])][int(r["round"])] = float(r["value"])
    return np.array([[by[k][n] for n in sorted(by[k])] for k in sorted(by)])
