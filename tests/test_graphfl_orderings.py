"""The orderings of FedPnP (Table 1, Fig. 4) and G-Fedfilt (Tables IV–V, Fig. 8) on the
shipped scenarios (2 Monte Carlo runs each).  Slow: about 10 minutes on two cores; run
with -m slow."""

import csv
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from netemu.runner import execute
from netemu.scenario import load_scenario

SCENARIOS = Path(__file__).parent.parent / "scenarios"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def final(tmp_path_factory):
    """final(scenario, metric) -> {algorithm: mean over runs of the mean of the last 5 rounds}."""
    cache = {}

    def get(name, metric):
        if name not in cache:
            out = tmp_path_factory.mktemp(name) / "run"
            sc = load_scenario(SCENARIOS / f"{name}.toml", ["output.log=false", "output.trace=false", "output.plots=false"])
            execute(sc, out, quiet=True)
            by = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
            with open(out / "metrics.csv") as f:
                for r in csv.DictReader(f):
                    by[r["metric"]][r["algorithm"]][int(r["round"])].append(float(r["value"]))
            cache[name] = {m: {alg: float(np.mean([np.mean(v[n]) for n in sorted(v)[-5:]])) for alg, v in algs.items()}
                           for m, algs in by.items()}
        return cache[name][metric]

    return get


def test_fedpnp_soft_beats_fedavg_fedprox_and_the_hard_denoiser_on_dir_0_2(final):
    r = final("fedpnp_table1_dir02", "accuracy_local")
    for soft in ("fedpnp-soft-beta0.005", "fedpnp-soft-beta0.0005"):
        assert r[soft] > max(r["fedavg"], r["fedprox"], r["fedpnp-hard-tau2"])


def test_g_fedfilt_trades_generalization_for_personalization(final):
    local, glob = final("gfedfilt_table4_digits2", "accuracy_local"), final("gfedfilt_table4_digits2", "accuracy_global")
    assert local["g-fedfilt-mu0.1"] > local["fedavg"] and glob["g-fedfilt-mu0.1"] < glob["fedavg"]
    mus = ["g-fedfilt-mu0.1", "g-fedfilt-mu10.0", "g-fedfilt-mu100.0"]
    assert [local[m] for m in mus] == sorted((local[m] for m in mus), reverse=True)  # less personal as mu_s grows
    assert [glob[m] for m in mus] == sorted(glob[m] for m in mus)  # and more general


def test_rooms_that_share_labels_help_g_fedfilt(final):
    s1, s2 = final("gfedfilt_fig8_setup1", "accuracy_local"), final("gfedfilt_fig8_setup2", "accuracy_local")
    assert s1["g-fedfilt-mu10"] > s2["g-fedfilt-mu10"]
    assert s1["g-fedfilt-mu10"] > s1["fedavg"] and s2["g-fedfilt-mu10"] > s2["fedavg"]
