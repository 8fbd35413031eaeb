"""G-Fedfilt's system model (eqs. 15–20, 34) and parameter optimization (P'', eqs. 27–33),
alone and in the emulator."""

import math

import numpy as np
import pytest

from netemu.system import Device, draw_devices, heterogeneity, optimize, rate


def test_the_device_model_against_worked_numbers():
    d = Device(rho=2e4, f=2e9, p=1.0, xi_db=0.0, b=1e6)
    # n0 = -174 dBm/Hz = 10^-20.4 W/Hz; SNR = 1 W / (n0 · 1 MHz) = 10^14.4
    assert rate(d) == pytest.approx(1e6 * math.log2(1 + 10**14.4))
    assert d.comp_time(3, 450) == pytest.approx(3 * 450 * 2e4 / 2e9)  # (15): 13.5 ms
    assert d.comp_energy(3, 450) == pytest.approx(1e-28 * 3 * 450 * 2e4 * 4e18)  # (16)
    assert d.tran_energy(1e5) == pytest.approx(d.tran_time(1e5))  # (19) with p = 1 W
    assert d.speed == 1e5


def test_heterogeneity_is_zero_for_identical_devices_and_grows_with_the_spread():
    rng = lambda: np.random.default_rng(1)
    assert heterogeneity(draw_devices(10, rng(), 0.0)) == pytest.approx(0.0, abs=1e-12)
    levels = [heterogeneity(draw_devices(20, rng(), s)) for s in (0.2, 0.6, 1.0)]
    assert levels == sorted(levels) and 0 < levels[0] and levels[-1] < 1


def test_the_optimized_plan_meets_the_deadline_that_the_slowest_device_sets():
    devices = draw_devices(20, np.random.default_rng(2))
    samples, bits = [450] * 20, (2000.0, 60000.0)
    plan = optimize(devices, samples, bits, q_min=0.3, z_min=0.1, alpha_range=(1, 5))
    latency = [d.comp_time(a, q * n) + d.tran_time(bits[0] + z * bits[1])
               for d, n, a, q, z in zip(devices, samples, plan.alpha, plan.q, plan.z)]
    assert max(latency) <= plan.deadline * (1 + 1e-9)
    slowest = max(d.comp_time(1, 0.3 * n) + d.tran_time(bits[0] + 0.1 * bits[1]) for d, n in zip(devices, samples))
    assert plan.deadline == pytest.approx(slowest)  # (28)
    assert all(1 <= a <= 5 for a in plan.alpha) and all(0.3 - 1e-9 <= q <= 1 for q in plan.q) and all(0.1 - 1e-9 <= z <= 1 for z in plan.z)
    assert np.mean(latency) > 0.9 * plan.deadline  # devices use the slack: they finish together


def test_an_energy_budget_binds_or_is_infeasible():
    devices = draw_devices(5, np.random.default_rng(3))
    free = optimize(devices, [450] * 5, (2000.0, 60000.0))
    energy = lambda plan: [d.comp_energy(a, q * 450) + d.tran_energy(2000 + z * 60000)
                           for d, a, q, z in zip(devices, plan.alpha, plan.q, plan.z)]
    budget = 0.5 * max(energy(free))
    tight = optimize(devices, [450] * 5, (2000.0, 60000.0), energy_max=budget)
    assert max(energy(tight)) <= budget * (1 + 1e-9)
    with pytest.raises(ValueError, match="energy budget"):
        optimize(devices, [450] * 5, (2000.0, 60000.0), energy_max=1e-12)


def test_in_the_emulator_the_optimized_schedule_cuts_latency_and_desynchronization():
    from test_graphfl import setup

    runs = {}
    for label, extra in (("before", {}), ("after", {"optimize": True})):
        world, _, _ = setup("g-fedfilt", graph="statistics", system="table3", epochs=3, **extra)
        world.run()
        runs[label] = {m: np.mean([v for a, _, _, name, v in world.metrics if name == m and a == "server"])
                       for m in ("latency_s", "desync_s", "late")}
    assert runs["after"]["late"] == 0
    assert runs["after"]["latency_s"] < 0.5 * runs["before"]["latency_s"]
    assert runs["after"]["desync_s"] < 0.2 * runs["before"]["desync_s"]


def _objective(plan, weights=(0.4, 0.4, 0.2), a_max=5):
    return np.array([weights[0] * a / a_max + weights[1] * q + weights[2] * z for a, q, z in zip(plan.alpha, plan.q, plan.z)])


@pytest.mark.parametrize("energy", [False, True])
def test_the_relaxed_alpha_is_the_optimum_over_a_fine_grid_of_alpha(energy):
    """P'' with a continuous α: the linear programs of `relax_alpha` against a brute
    force over 401 values of α (each with its exact (q, z) program), devices one by one."""
    from scipy.optimize import linprog

    devices, samples, bits = draw_devices(4, np.random.default_rng(5)), [450] * 4, (2000.0, 6000.0)  # small updates: α > 1 pays
    budget = 0.5 * max(d.comp_energy(5, 450) + d.tran_energy(8000.0) for d in devices) if energy else math.inf
    relaxed = optimize(devices, samples, bits, relax_alpha=True, energy_max=budget)
    integer = optimize(devices, samples, bits, energy_max=budget)
    assert relaxed.deadline == integer.deadline
    assert np.all(_objective(relaxed) >= _objective(integer) - 1e-12)
    assert any(a != round(a) for a in relaxed.alpha)  # the relaxation is used, not rounded away
    for k, d in enumerate(devices):
        best = -np.inf
        for a in np.linspace(1, 5, 401):
            A = [[d.comp_time(a, 450), d.tran_time(bits[1])]]
            b = [relaxed.deadline * (1 + 1e-12) - d.tran_time(bits[0])]
            if energy:
                A.append([d.comp_energy(a, 450), d.tran_energy(bits[1])])
                b.append(budget - d.tran_energy(bits[0]))
            res = linprog([-0.4, -0.2], A_ub=A, b_ub=b, bounds=[(0.3, 1), (0.1, 1)], method="highs")
            if res.status == 0:
                best = max(best, 0.4 * a / 5 + 0.4 * res.x[0] + 0.2 * res.x[1])
        assert best - 1e-9 <= _objective(relaxed)[k] <= best + 5e-3  # no grid point is better; the grid (step 0.01) comes close
        time = d.comp_time(relaxed.alpha[k], relaxed.q[k] * 450) + d.tran_time(bits[0] + relaxed.z[k] * bits[1])
        assert time <= relaxed.deadline * (1 + 1e-9)
