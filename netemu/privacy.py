"""Privacy accounting for algorithms that perturb what clients share (zCDP).

One module for every family that adds DP noise (thesis §2.4, Chapters 3 and 5):

* Gaussian mechanism: a release with l2-sensitivity Δ and noise variance σ² is
  φ-zCDP with φ = Δ² / (2σ²) (thesis eq. 3.13, eq. 5.32; Bun & Steinke 2016, Prop. 1.6).
* Composition: φ adds up over releases (Theorem 2.3; eq. 5.33), also when a release
  depends on earlier ones (Theorem 2.4).
* Conversion: φ-zCDP implies (ε, δ)-DP with ε = φ + 2 sqrt(φ ln(1/δ)) for every δ in (0, 1)
  (Bun & Steinke 2016, Prop. 1.3; the thesis' Corollary of Theorem I).
* (ε, δ)-DP calibration of the classic Gaussian mechanism, σ = Δ sqrt(2 ln(1.25/δ)) / ε
  (Dwork & Roth, Theorem A.1; valid for ε < 1), with additive composition of ε and δ
  (Theorem 2.2) — for the (ε, δ)DP-NFL baseline.

Dynamic zCDP with a shrinking noise variance σ²_n = ζ σ²_{n−1} (eqs. 3.9 and 5.11)
makes each release *less* private: φ_n = φ_1 ζ^{−(n−1)}, and the total over T
releases is φ_1 (1 − ζ^T) / (ζ^{T−1} − ζ^T) (the thesis' Corollary).  The PGFL texts
state that φ₀ = 0.001 and ζ = 0.99 give a total of 0.095 after 300 iterations; that
number is φ₀ (1 − ζ^300) / (1 − ζ), the sum of a *decreasing* φ, which contradicts the
stated noise schedule.  This accountant follows the mathematics: the same schedule
gives φ_total = 0.001 · (ζ^−300 − 1) / (ζ^−1 − 1) ≈ 1.92 (see tests/test_privacy.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

__all__ = [
    "PrivacyLedger",
    "dynamic_total",
    "epsilon_from_zcdp",
    "gaussian_sigma_epsdelta",
    "noise_variance",
    "zcdp_of_gaussian",
]


def _check_positive(**values: float) -> None:
    for name, v in values.items():
        if not v > 0:
            raise ValueError(f"{name} must be > 0, got {v}")


def zcdp_of_gaussian(sensitivity: float, variance: float) -> float:
    """φ of one Gaussian release: Δ² / (2σ²) (eq. 3.13 / 5.32 solved for φ)."""
    _check_positive(sensitivity=sensitivity, variance=variance)
    return sensitivity**2 / (2 * variance)


def noise_variance(sensitivity: float, rho: float) -> float:
    """σ² that makes one release ρ-zCDP: Δ² / (2ρ) (eq. 3.13 / 5.32)."""
    _check_positive(sensitivity=sensitivity, rho=rho)
    return sensitivity**2 / (2 * rho)


def epsilon_from_zcdp(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP: ρ + 2 sqrt(ρ ln(1/δ))."""
    if rho < 0 or not 0 < delta < 1:
        raise ValueError(f"need rho >= 0 and delta in (0, 1), got rho={rho}, delta={delta}")
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


def gaussian_sigma_epsdelta(sensitivity: float, epsilon: float, delta: float) -> float:
    """Standard deviation of the classic (ε, δ)-DP Gaussian mechanism: Δ sqrt(2 ln(1.25/δ)) / ε."""
    _check_positive(sensitivity=sensitivity, epsilon=epsilon)
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def dynamic_total(rho_first: float, zeta: float, releases: int) -> float:
    """Total φ of `releases` releases when the noise variance shrinks by ζ each time:
    Σ_{n=1}^{T} φ_1 ζ^{−(n−1)} = φ_1 (1 − ζ^T) / (ζ^{T−1} − ζ^T) (the thesis' Corollary)."""
    _check_positive(rho_first=rho_first)
    if not 0 < zeta <= 1:
        raise ValueError(f"zeta must be in (0, 1], got {zeta}")
    if zeta == 1:
        return rho_first * releases
    return rho_first * (1 - zeta**releases) / (zeta ** (releases - 1) - zeta**releases)


@dataclass
class PrivacyLedger:
    """Per-client record of the zCDP spent in each round; totals compose additively."""

    spent: dict[str, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))

    def spend(self, client: str, round: int, rho: float) -> None:
        """Record a ρ-zCDP release of `client` in `round` (several releases in a round add up)."""
        if rho < 0:
            raise ValueError(f"{client}: a release cannot spend negative privacy ({rho})")
        per_round = self.spent[client]
        per_round[round] = per_round.get(round, 0.0) + rho

    def total(self, client: str) -> float:
        return math.fsum(self.spent.get(client, {}).values())

    def releases(self) -> list[tuple[str, int, float, float]]:
        """(client, round, ρ spent in the round, ρ spent so far) for every round with a release."""
        out = []
        for c, per_round in sorted(self.spent.items()):
            so_far = []
            for rnd, rho in sorted(per_round.items()):
                so_far.append(rho)
                out.append((c, rnd, rho, math.fsum(so_far)))
        return out

    def summary(self, delta: float = 1e-5) -> dict[str, dict]:
        """Per client: total ρ, the (ε, δ) it implies, and the number of rounds with releases."""
        return {
            c: {"rho_total": self.total(c), "epsilon": epsilon_from_zcdp(self.total(c), delta), "delta": delta,
                "rounds": len(rounds)}
            for c, rounds in sorted(self.spent.items())
        }
