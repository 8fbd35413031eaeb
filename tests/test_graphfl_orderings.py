"""The orderings of FedPnP (Table 1, with its baselines pFedMe and Per-FedAvg) and
G-Fedfilt (Tables IV–V, VII, Fig. 8) on the shipped scenarios (2 Monte Carlo runs each).
The claims judged over 10 root seeds (FedAvg against local training, FedPnP against
pFedMe and Per-FedAvg, mu_s = 10 against FedAvg, Table VII's H trend) are in
tests/test_fidelity_verdicts.py.  Slow: about 10 minutes on two cores; run with -m slow."""

from pathlib import Path

import numpy as np
import pytest

from helpers import run_curves

SCENARIOS = Path(__file__).parent.parent / "scenarios"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def final(tmp_path_factory):
    """final(scenario, metric) -> {algorithm: mean of its last 5 rounds (averaged over runs)}."""
    cache = {}

    def get(name, metric):
        if name not in cache:
            cache[name] = run_curves(SCENARIOS / f"{name}.toml", tmp_path_factory.mktemp(name) / "run")
        return {alg: float(np.mean(c[-5:])) for alg, c in cache[name][metric].items()}

    return get


def test_fedpnp_soft_beats_fedavg_fedprox_and_the_hard_denoiser_on_dir_0_2(final):
    r = final("fedpnp_table1_dir02", "accuracy_clients")
    for soft in ("fedpnp-soft-beta0.005", "fedpnp-soft-beta0.0005"):
        assert r[soft] > max(r["fedavg"], r["fedprox"], r["fedpnp-hard-tau2"])


def test_g_fedfilt_trades_generalization_for_personalization(final):
    local, glob = final("gfedfilt_table4_digits2", "accuracy_clients"), final("gfedfilt_table4_digits2", "accuracy")
    assert local["g-fedfilt-mu0.1"] > local["fedavg"] and glob["g-fedfilt-mu0.1"] < glob["fedavg"]
    mus = ["g-fedfilt-mu0.1", "g-fedfilt-mu10.0", "g-fedfilt-mu100.0"]
    assert [local[m] for m in mus] == sorted((local[m] for m in mus), reverse=True)  # less personal as mu_s grows
    # and more general from mu_s = 0.1 to 10; Table V does not rise further (mu_s = 100: 74.95 < 78.45)
    assert glob["g-fedfilt-mu0.1"] < glob["g-fedfilt-mu10.0"]


def test_rooms_that_share_labels_help_g_fedfilt(final):
    s1, s2 = final("gfedfilt_fig8_setup1", "accuracy_clients"), final("gfedfilt_fig8_setup2", "accuracy_clients")
    assert s1["g-fedfilt-mu10"] > s2["g-fedfilt-mu10"]
    assert s1["g-fedfilt-mu10"] > s1["fedavg"] and s2["g-fedfilt-mu10"] > s2["fedavg"]


def test_the_optimized_schedule_cuts_desynchronization_and_latency_at_a_small_accuracy_cost(final):
    # The desynchronization and latency checks test the plan, not the paper's claim: the
    # optimizer solves P'' with the same compute and rate model the emulation then runs,
    # so they check that the emulated round realizes the plan (each device's α, q, z).
    # The accuracy cost is an outcome of the training and could differ.
    for spread in ("0.2", "0.6", "1.0"):
        before, after = f"g-fedfilt-spread{spread}", f"g-fedfilt-opt-spread{spread}"
        assert final("gfedfilt_table7", "desync_s")[after] < 0.05 * final("gfedfilt_table7", "desync_s")[before]
        assert final("gfedfilt_table7", "latency_s")[after] < 0.5 * final("gfedfilt_table7", "latency_s")[before]
        acc = final("gfedfilt_table7", "accuracy")
        assert acc[before] - 0.06 < acc[after] < acc[before]


# FedPnP Table 1 (MNIST): FedPnP_s (beta = 0.0005) above Per-FedAvg by 0.88 (Dir(0.2)) and
# 0.69 points (Dir(0.5)), above pFedMe by 0.60 and 0.28 points.
@pytest.mark.parametrize("scenario, margin", [("fedpnp_table1_dir02", 0.0088), ("fedpnp_table1_dir05", 0.0069)])
def test_fedpnp_soft_beats_per_fedavg_by_the_papers_margin(final, scenario, margin):
    r = final(scenario, "accuracy_clients")
    assert r["fedpnp-soft-beta0.0005"] > r["perfedavg"] + margin


def test_at_the_printed_filter_scale_mu_s_personalizes_as_much_as_in_table_v(final):
    # Table V (MNIST_2): mu_s = 0.1 is 27 points below FedAvg globally, mu_s = 10 within 3
    # points of it.  Measured with the printed filter: -42.8 and -2.6 points (netemu's
    # row-normalized filter: -71.9 and -34.8).
    glob = final("gfedfilt_table4_digits2_paper", "accuracy")
    assert glob["g-fedfilt-mu0.1"] < glob["fedavg"] - 0.2
    assert glob["g-fedfilt-mu10.0"] > glob["fedavg"] - 0.05
    mus = ["g-fedfilt-mu0.1", "g-fedfilt-mu1.0", "g-fedfilt-mu10.0"]  # Table V rises to mu_s = 10, then falls
    assert [glob[m] for m in mus] == sorted(glob[m] for m in mus)
