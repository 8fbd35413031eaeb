"""System heterogeneity of edge devices and G-Fedfilt's parameter optimization
(`002_…`: eqs. 15–20, 27–34, Table III).  Pure functions; no netemu imports.

A device has a computing intensity ρ (CPU cycles per sample), a CPU frequency f (Hz), a
transmit power p (W), a channel gain ξ (dB) and an allocated bandwidth b (Hz).  A round
in which it trains α epochs on ψ = q·D samples and sends χ bits costs

    computation time  α ψ ρ / f                       (15)
    computation energy ς α ψ ρ f²                     (16)
    rate              r = b log₂(1 + ξ p / (n₀ b))    (17)
    transmission time χ / r                           (18)
    transmission energy p χ / r                       (19)

In the emulator these become the device's compute speed (f/ρ samples per second) and
its uplink bandwidth (r bits per second), so the times are measured from virtual time.

Parameter optimization: the deadline is the latency of the slowest device at the
smallest parameters, T_opt = max_k τ̃_k (27)–(28); then each device maximizes
μ₁ α/α_max + μ₂ q + μ₃ z (χ = z χ_max, so χ/χ_max = z) subject to finishing by T_opt
(31) and its energy budget (23), α_min ≤ α ≤ α_max, q_min ≤ q ≤ 1, z_min ≤ z ≤ 1 (33).
The paper relaxes the integer α (§III, before (30)).  netemu keeps it integer by default
and, for each α, solves the remaining linear program in (q, z) with scipy (HiGHS) —
exact, where the relaxation would need rounding.  With `relax_alpha` α is continuous and
the time and energy constraints are bilinear in (α, q); the optimum is still exact from
linear programs: at an optimum α or q sits at a bound (along α q = const the objective
μ₁ α/α_max + μ₂ q is convex in α, so an interior point is never the best), and with
either one fixed the problem is linear in the other two — so the integer α's programs
(α_min and α_max among them) plus two with q at q_min or 1 and α free.  The clients then train
fractional epochs (netemu.kernels.classifiers.passes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Device", "Plan", "TABLE_III", "draw_devices", "heterogeneity", "optimize", "rate"]

N0_DBM_HZ = -174.0  # noise power spectral density n₀ (Table III)
SWITCHED_CAPACITANCE = 1e-28  # ς (Table III)

#: Table III ranges (low, high) of the uniform draws; the total bandwidth is shared equally.
TABLE_III = {"rho": (1e4, 5e4), "f": (1e9, 3.5e9), "p": (0.5, 1.0), "xi_db": (1.0, 2.0)}
TOTAL_BANDWIDTH = 20e6  # β, Hz


@dataclass(frozen=True)
class Device:
    rho: float  # CPU cycles per sample
    f: float  # CPU cycles per second
    p: float  # transmit power, W
    xi_db: float  # channel gain, dB
    b: float  # allocated bandwidth, Hz

    @property
    def speed(self) -> float:
        """Samples per second: f / ρ."""
        return self.f / self.rho

    def comp_time(self, alpha: float, samples: float) -> float:
        return alpha * samples * self.rho / self.f  # (15)

    def comp_energy(self, alpha: float, samples: float) -> float:
        return SWITCHED_CAPACITANCE * alpha * samples * self.rho * self.f**2  # (16)

    def tran_time(self, bits: float) -> float:
        return bits / rate(self)  # (18)

    def tran_energy(self, bits: float) -> float:
        return self.p * self.tran_time(bits)  # (19)


def rate(d: Device) -> float:
    """Achievable OFDMA rate in bits/s (17)."""
    n0 = 10 ** (N0_DBM_HZ / 10) / 1000  # W/Hz
    return d.b * math.log2(1 + 10 ** (d.xi_db / 10) * d.p / (n0 * d.b))


def draw_devices(n: int, rng: np.random.Generator, spread: float = 1.0) -> list[Device]:
    """n devices with Table III's uniform draws, each range shrunk around its midpoint to
    `spread` of its width (1 = Table III; smaller = less heterogeneous)."""
    if not 0 <= spread <= 1:
        raise ValueError(f"spread must be in [0, 1], got {spread}")

    def draw(low: float, high: float) -> float:
        mid, half = (low + high) / 2, spread * (high - low) / 2
        return float(rng.uniform(mid - half, mid + half))

    return [Device(draw(*TABLE_III["rho"]), draw(*TABLE_III["f"]), draw(*TABLE_III["p"]), draw(*TABLE_III["xi_db"]),
                   TOTAL_BANDWIDTH / n) for _ in range(n)]


def heterogeneity(devices: list[Device]) -> float:
    """H = 1 − (1/K) Σ_k min τ̂ / τ̂_k with τ̂ the time for one sample and one bit (34)."""
    tau = np.array([d.comp_time(1, 1) + d.tran_time(1) for d in devices])
    return float(1 - np.mean(tau.min() / tau))


@dataclass(frozen=True)
class Plan:
    deadline: float  # T_opt
    alpha: tuple[float, ...]  # local epochs per device (integers unless relaxed)
    q: tuple[float, ...]  # data fraction per device
    z: tuple[float, ...]  # share of update entries sent per device


def optimize(
    devices: list[Device], samples: list[int], bits: tuple[float, float], *, weights=(0.4, 0.4, 0.2),
    alpha_range=(1, 5), q_min: float = 0.3, z_min: float = 0.1, energy_max: float = math.inf,
    relax_alpha: bool = False,
) -> Plan:
    """Problem P'' (33) per device under the deadline T_opt (28).  `bits` = (χ₀, χ₁): an
    update with share z of its entries costs χ₀ + z χ₁ bits on the wire (affine in z, as
    the emulator's partial models are), so the objective's χ/χ_max is monotone in z and
    each subproblem stays linear.  α is an integer, or continuous with `relax_alpha`
    (module docstring).  Raises ValueError if a device cannot meet its energy budget even
    at the smallest parameters."""
    from scipy.optimize import linprog

    mu1, mu2, mu3 = weights
    a_min, a_max = alpha_range
    fixed, per_share = bits
    floor = [d.comp_time(a_min, q_min * n) + d.tran_time(fixed + z_min * per_share) for d, n in zip(devices, samples)]
    T = max(floor)  # (28): the slowest device at the smallest parameters
    # subproblems with α or q given: α each integer (q free); relaxed, also q at a bound (α free)
    pinned: list[tuple[str, float]] = [("alpha", a) for a in range(a_min, a_max + 1)]
    if relax_alpha:
        pinned += [("q", q_min), ("q", 1.0)]
    alphas, qs, zs = [], [], []
    for k, (d, n) in enumerate(zip(devices, samples)):
        # time α ψ ρ/f + χ₁/r z ≤ T − χ₀/r, energy likewise ≤ E − p χ₀/r; linear in (free, z)
        b = [T * (1 + 1e-12) - d.tran_time(fixed)]
        if math.isfinite(energy_max):
            b.append(energy_max - d.tran_energy(fixed))
        best = None
        for given, v in pinned:
            a, q = (v, 1.0) if given == "alpha" else (1.0, v)  # the free one's coefficient per unit
            A = [[d.comp_time(a, q * n), d.tran_time(per_share)]]
            if math.isfinite(energy_max):
                A.append([d.comp_energy(a, q * n), d.tran_energy(per_share)])
            c, free = ([-mu2, -mu3], (q_min, 1.0)) if given == "alpha" else ([-mu1 / a_max, -mu3], (a_min, a_max))
            res = linprog(c, A_ub=A, b_ub=b, bounds=[free, (z_min, 1.0)], method="highs")
            if res.status == 0:
                alpha, share = (v, float(res.x[0])) if given == "alpha" else (float(res.x[0]), v)
                value = mu1 * alpha / a_max + mu2 * share + mu3 * res.x[1]
                if best is None or value > best[0] + 1e-12:
                    best = (value, alpha, share, float(res.x[1]))
        if best is None:
            raise ValueError(f"device {k}: no (alpha, q, z) meets the deadline {T:g} s and energy budget {energy_max:g} J")
        alphas.append(best[1])
        qs.append(best[2])
        zs.append(best[3])
    return Plan(T, tuple(alphas), tuple(qs), tuple(zs))
