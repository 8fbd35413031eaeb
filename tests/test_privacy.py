"""The privacy accountant against hand-computed values."""

import math

import numpy as np
import pytest

from netemu.privacy import (
    PrivacyLedger, dynamic_total, epsilon_from_zcdp, gaussian_sigma_epsdelta, noise_variance, zcdp_of_gaussian,
)


def test_the_gaussian_mechanism_gives_delta_squared_over_two_sigma_squared():
    # Δ = 2, σ² = 4: φ = 4 / 8 = 0.5; and back
    assert zcdp_of_gaussian(2.0, 4.0) == 0.5
    assert noise_variance(2.0, 0.5) == 4.0
    # PGFL sensitivity Δ = 2 C_k / (ρ D_k) (eq. 5.31) with C_k = 1, ρ = 3, D_k = 5: Δ = 2/15
    delta_k = 2 * 1.0 / (3 * 5)
    assert noise_variance(delta_k, 0.001) == pytest.approx((2 / 15) ** 2 / 0.002)


def test_zcdp_converts_to_epsilon_delta():
    # ρ = 0.5, δ = 1e-5: ε = 0.5 + 2 sqrt(0.5 ln 1e5) = 0.5 + 2 sqrt(5.7564627) = 0.5 + 2 (2.399263) = 5.298526
    assert epsilon_from_zcdp(0.5, 1e-5) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * 11.512925464970229), rel=1e-12)
    assert epsilon_from_zcdp(0.5, 1e-5) == pytest.approx(5.298526, abs=1e-6)
    assert epsilon_from_zcdp(0.0, 0.1) == 0.0


def test_releases_compose_additively_per_client():
    ledger = PrivacyLedger()
    for n in range(3):
        ledger.spend("a", n, 0.1)
    ledger.spend("a", 2, 0.05)  # a second release in round 2
    ledger.spend("b", 0, 0.2)
    s = ledger.summary(delta=1e-5)
    assert s["a"]["rho_total"] == pytest.approx(0.35) and s["a"]["rounds"] == 3
    assert s["b"]["epsilon"] == pytest.approx(epsilon_from_zcdp(0.2, 1e-5))


def test_a_shrinking_noise_variance_spends_more_privacy_each_round():
    # σ²_n = ζ σ²_{n-1} ⇒ φ_n = φ_1 ζ^-(n-1): the total is the thesis' Corollary formula
    phi1, zeta, T = 0.001, 0.99, 300
    by_sum = math.fsum(phi1 * zeta ** -(n - 1) for n in range(1, T + 1))
    assert dynamic_total(phi1, zeta, T) == pytest.approx(by_sum, rel=1e-12)
    # 0.001 (0.99^-300 − 1) / (0.99^-1 − 1) = 0.001 · 19.39115 / 0.01010101 = 1.91972
    assert dynamic_total(phi1, zeta, T) == pytest.approx(1.91972, abs=1e-5)
    sigma2 = noise_variance(1.0, phi1) * zeta ** np.arange(T)
    assert math.fsum(zcdp_of_gaussian(1.0, s) for s in sigma2) == pytest.approx(by_sum, rel=1e-9)


def test_the_papers_total_of_0_095_is_the_sum_of_a_decreasing_privacy_loss():
    # φ0 (1 − ζ^300)/(1 − ζ) = 0.0951: what the PGFL texts state — not what their noise schedule gives
    stated = 0.001 * (1 - 0.99**300) / (1 - 0.99)
    assert stated == pytest.approx(0.0951, abs=1e-4)
    assert dynamic_total(0.001, 0.99, 300) > 20 * stated


def test_the_classic_gaussian_mechanism_for_epsilon_delta():
    # Δ = 1, ε = 0.5, δ = 1e-5: σ = sqrt(2 ln(125000)) / 0.5 = 9.6896...
    assert gaussian_sigma_epsdelta(1.0, 0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(125000)) / 0.5)


@pytest.mark.parametrize("call", [lambda: zcdp_of_gaussian(1, 0), lambda: epsilon_from_zcdp(1, 1.5), lambda: dynamic_total(1, 1.2, 3)])
def test_bad_arguments_are_refused(call):
    with pytest.raises(ValueError):
        call()
