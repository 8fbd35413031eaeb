"""The seeds' claims as statistics: each claim over independent root seeds, one verdict rule.

Each claim (CLAIMS) is an ordering a paper states, between algorithms of one shipped
scenario.  It is run once per root seed (`--seeds` of them, from `--first-seed`; one Monte
Carlo run each, so every seed draws its own data, graph, schedule and noise) and gives
one *margin* per seed: how far the paper's ordering holds, positive when it does (dB of
MSE/NMSD, or points of accuracy; an ordering of more than two takes its smallest step).
Per claim it prints the paper's section, the data set, the win count (seeds with margin
> 0), the mean margin with its 95 % confidence interval (Student t, n − 1 degrees of
freedom) and the verdict by one rule (RULE):

    reproduced      the sign holds in >= 80 % of the seeds (8 of 10) and the CI excludes 0
    not reproduced  the sign holds in <= 20 % of the seeds (2 of 10) and the CI excludes 0
                    on the other side
    seed-dependent  anything else

    python tools/fidelity_stats.py [--claims KEY,KEY] [--seeds 10] [--first-seed 1]
                                   [--json OUT.json] [--list]

Where a claim compares privacy budgets, each arm runs on its own root seeds (`apart`),
so an ordering is not one set of Gaussian draws scaled.  Claims on one scenario share its
runs.  Runs are deterministic: the same arguments print the same numbers.  Each claim's
CPU seconds are printed (time.process_time; a claim whose runs were made for one before
it costs nothing more).  The claims marked MNIST read real MNIST digits as IDX files from
the folder $NETEMU_MNIST (default: ../shared/data/mnist10k beside the repository) and are
skipped without it; they run on the seeds of their documented verdicts (10, or 5 or 3 where a
run is costly) unless named with --claims.  Three claims test a cause (docs/fidelity.md §10,
§11, §12): `gfedfilt-v-mu10-cnn` (a CNN instead of softmax; about 160 CPU-seconds a seed),
`fedpnp-1-fedavg-local-mnist-cnn` (the batch-norm CNN on MNIST, 30 rounds; about 24
CPU-minutes a seed) and `gfedfilt-vii-trend-relaxed` (P'' with a relaxed α).  The CNN
claims run only when named with --claims.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import tempfile
import time
import tomllib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy import stats

from netemu.run.runner import execute
from netemu.scenario.load import parse_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
#: real MNIST digits as IDX files (the claims marked MNIST run on them; skipped when absent)
MNIST = Path(os.environ.get("NETEMU_MNIST") or SCENARIOS.parent.parent / "shared" / "data" / "mnist10k")
QUIET = ["output.log=false", "output.trace=false", "output.plots=false"]
RULE = ('reproduced: the sign holds in >= 80 % of the seeds and the 95 % CI of the mean margin excludes 0; '
        'not reproduced: the sign holds in <= 20 % and the CI excludes 0 on the other side; otherwise seed-dependent')
APART = 1000  # `apart` claims: the j-th arm runs on root seed s + j * APART


@dataclass(frozen=True)
class Claim:
    """An ordering a paper states: `order` lists the scenario's algorithm labels best first.

    `metric` is read per round; a run's value is the mean of its last `last` rounds, in dB
    (`unit = "dB"`, lower is better: 10 log10 of the linear mean; a `*_db` metric is made
    linear first) or in points (`unit =
    "points"`, higher is better: 100 × the mean).  `margin` turns the values into the
    claim's margin (default: the smallest step of the ordering, positive when it holds)."""

    key: str
    source: str  # the paper's section, figure or table
    says: str  # the claim in a few words
    data: str  # the data set the scenario runs on
    scenario: str
    order: tuple[str, ...]
    metric: str
    unit: str
    last: int
    overrides: tuple[str, ...] = ()
    apart: bool = False  # each arm on its own root seeds (privacy budgets)
    margin: Callable[[dict[str, float]], float] | None = None
    extra: tuple[str, ...] = field(default=())  # labels the margin reads beyond `order`
    seeds: int | None = None  # root seeds of its documented verdict, when fewer than --seeds (costly runs)
    by_default: bool = True  # False: run only when named with --claims (too costly for the whole run)

    @property
    def on_mnist(self) -> bool:
        return self.data == REAL

    def labels(self) -> list[str]:
        return list(dict.fromkeys((*self.order, *self.extra)))

    def value(self, curve: np.ndarray) -> float:
        tail = float(np.mean(10 ** (curve[-self.last :] / 10) if self.metric.endswith("_db") else curve[-self.last :]))
        return 10 * math.log10(tail) if self.unit == "dB" else 100 * tail

    def margin_of(self, v: dict[str, float]) -> float:
        if self.margin is not None:
            return self.margin(v)
        sign = -1.0 if self.unit == "dB" else 1.0  # dB: lower is better
        return min(sign * (v[a] - v[b]) for a, b in zip(self.order, self.order[1:]))


def _table7_trend(v: dict[str, float]) -> float:
    """Table VII: the optimized schedule's accuracy cost grows with H (spread 0.2 → 1.0)."""
    cost = [v[f"g-fedfilt-spread{s}"] - v[f"g-fedfilt-opt-spread{s}"] for s in ("0.2", "0.6", "1.0")]
    return min(cost[1] - cost[0], cost[2] - cost[1])


SYNTH_PAO = "synthetic (thesis §4.4.1: RFF regression, K = 256)"
SYNTH_PGFL = "synthetic regression (thesis §5.4.1: 10 servers × 15 clients, d = 60)"
DIGITS = "scikit-learn 8×8 digits (1,797 images)"
SYNTH_NPFL = "synthetic regression (thesis §6.3: 30 peers, d = 60)"
SYNTH_NFL = "synthetic (thesis §3.4: elastic net / LAD / ridge on a peer graph)"
REAL = "real MNIST (mnist10k: 8,004 training / 1,996 test digits, 28×28)"
ON_MNIST = (f"data.source={MNIST}",)
T7 = tuple(f"g-fedfilt{o}-spread{s}" for s in ("0.2", "0.6", "1.0") for o in ("", "-opt"))

CLAIMS: tuple[Claim, ...] = (
    Claim("paofed-4.3a", "thesis §4.4.3, Fig. 4.3a", "PAO-Fed-U1 below Online-FedSGD (equal initial rate)", SYNTH_PAO,
          "paofed_fig4_3a", ("pao-fed-u1", "online-fedsgd"), "mse_db", "dB", 200),
    Claim("paofed-4.2c", "thesis §4.4.2, Fig. 4.2c", "weight decrease: PAO-Fed-C2 below C1", SYNTH_PAO,
          "paofed_fig4_2c", ("pao-fed-c2", "pao-fed-c1"), "mse_db", "dB", 200),
    Claim("paofed-4.5", "thesis §4.4.5, Fig. 4.5", "SignSGD below Online-Fed at 50 %", SYNTH_PAO,
          "paofed_fig4_5", ("signsgd", "online-fed-50pct"), "mse_db", "dB", 200),
    Claim("pgfl-5.1a", "thesis §5.4.1, Fig. 5.1a", "τ = 0.4 < τ = 0 < GFL < ClusterFL (NMSD)", SYNTH_PGFL,
          "pgfl_fig5_1a", ("pgfl-tau0.4", "pgfl-tau0", "gfl", "clusterfl"), "nmsd", "dB", 20),
    Claim("pgfl-5.1a-pgfl", "thesis §5.4.1, Fig. 5.1a", "PGFL (τ = 0) < GFL < ClusterFL (NMSD)", SYNTH_PGFL,
          "pgfl_fig5_1a", ("pgfl-tau0", "gfl", "clusterfl"), "nmsd", "dB", 20),
    Claim("pgfl-5.4a", "thesis §5.4.1, Fig. 5.4a", "more privacy, more NMSD: ζ = 0.95 below ζ = 0.995", SYNTH_PGFL,
          "pgfl_fig5_4a", ("pgfl-zeta0.95", "pgfl-zeta0.995"), "nmsd", "dB", 1, apart=True),
    Claim("pgfl-5.4a-step", "thesis §5.4.1, Fig. 5.4a", "more privacy, more NMSD at every step: ζ = 0.95 below ζ = 0.97",
          SYNTH_PGFL, "pgfl_fig5_4a", ("pgfl-zeta0.95", "pgfl-zeta0.97"), "nmsd", "dB", 1, apart=True),
    Claim("pgfl-5.4b", "thesis §5.4.1, Fig. 5.4b", "more privacy, more NMSD: φ⁽⁰⁾ = 0.01 below 0.0003", SYNTH_PGFL,
          "pgfl_fig5_4b", ("pgfl-phi0-0.01", "pgfl-phi0-0.0003"), "nmsd", "dB", 1, apart=True),
    Claim("pgfl-5.5a", "thesis §5.4.2, Fig. 5.5a", "inter-cluster learning helps single-digit pairs (τ = 0.4 > τ = 0)",
          DIGITS, "pgfl_fig5_5a", ("pgfl-tau0.4", "pgfl-tau0"), "accuracy", "points", 10),
    Claim("pgfl-5.5b", "thesis §5.4.2, Fig. 5.5b", "inter-cluster learning helps digit triplets (τ = 0.4 > τ = 0)",
          DIGITS, "pgfl_fig5_5b", ("pgfl-tau0.4", "pgfl-tau0"), "accuracy", "points", 10),
    Claim("zcdp-3.1b", "thesis §3.4.1, Fig. 3.1b", "zCDP-NFL below (ε,δ)DP-NFL at φ⁽¹⁾ = 0.001", SYNTH_NFL,
          "zcdpnfl_fig3_1b", ("zcdp-nfl-phi0.001", "epsdelta-nfl-phi0.001"), "error", "dB", 1, apart=True),
    Claim("zcdp-3.1b-budget", "thesis §3.4.1, Fig. 3.1b", "more privacy, more error: φ⁽¹⁾ = 0.001 below 0.0003",
          SYNTH_NFL, "zcdpnfl_fig3_1b", ("zcdp-nfl-phi0.001", "zcdp-nfl-phi0.0003"), "error", "dB", 1, apart=True),
    Claim("zcdp-3.3a", "thesis §3.4.3, Fig. 3.3a", "zCDP-NFL slightly below P-ADMM on ridge", SYNTH_NFL,
          "zcdpnfl_fig3_3a", ("zcdp-nfl", "p-admm"), "error", "dB", 10, apart=True),
    Claim("npflrl-6.2-sac", "thesis §6.3, Fig. 6.2", "NPFL-RL (SAC) below NPFL τ = 0.05", SYNTH_NPFL,
          "npflrl_fig6_2", ("npfl-rl-sac", "npfl-tau0.05"), "test_mse", "dB", 10),
    Claim("npflrl-6.2-dpg", "thesis §6.3, Fig. 6.2", "NPFL-RL (DPG) below NPFL τ = 0.05", SYNTH_NPFL,
          "npflrl_fig6_2", ("npfl-rl-dpg", "npfl-tau0.05"), "test_mse", "dB", 10),
    Claim("npflrl-6.2-brl-dpg", "thesis §6.3, Fig. 6.2", "NPFL-BRL (DPG) below NPFL τ = 0.05", SYNTH_NPFL,
          "npflrl_fig6_2", ("npfl-brl-dpg", "npfl-tau0.05"), "test_mse", "dB", 10),
    Claim("npflrl-6.3-rich", "thesis §6.3, Fig. 6.3", "the data-rich peer's τ (SAC) stabilizes around 0 (margin: 100 (0.01 − τ))",
          SYNTH_NPFL, "npflrl_fig6_3", ("npfl-rl-sac",), "tau_rich", "points", 1, margin=lambda v: 1.0 - v["npfl-rl-sac"]),
    Claim("gfedfilt-v-mu10", "G-Fedfilt §IV-D, Table V", "μ_s = 10 above FedAvg globally (MNIST₂; printed filter)",
          DIGITS, "gfedfilt_table4_digits2_paper", ("g-fedfilt-mu10.0", "fedavg"), "accuracy", "points", 5),
    Claim("gfedfilt-vii-trend", "G-Fedfilt §IV-D, Table VII", "the optimized schedule's accuracy cost grows with H",
          DIGITS, "gfedfilt_table7", T7[:1], "accuracy", "points", 5, margin=_table7_trend, extra=T7),
    Claim("fedpnp-1-fedavg-local", "FedPnP §4.2, Table 1", "FedAvg above local training (Dir(0.2))", DIGITS,
          "fedpnp_table1_dir02", ("fedavg", "local"), "accuracy_clients", "points", 5),
    Claim("fedpnp-1-pfedme", "FedPnP §4.2, Table 1", "FedPnP_s (β = 0.0005) above pFedMe (Dir(0.2))", DIGITS,
          "fedpnp_table1_dir02", ("fedpnp-soft-beta0.0005", "pfedme"), "accuracy_clients", "points", 5),
    Claim("fedpnp-1-perfedavg", "FedPnP §4.2, Table 1", "FedPnP_s (β = 0.0005) above Per-FedAvg (Dir(0.2))", DIGITS,
          "fedpnp_table1_dir02", ("fedpnp-soft-beta0.0005", "perfedavg"), "accuracy_clients", "points", 5),
)
# The convex-model cause of `gfedfilt-v-mu10` (docs/fidelity.md §10): the same claim with a
# non-convex model, netemu's small CNN (the task `cnn`, lr 0.1 as in fedpnp_cnn_digits).
ON_CNN = ("task.name=cnn", "task.lr=0.1")
CLAIMS += (
    Claim("gfedfilt-v-mu10-cnn", "G-Fedfilt §IV-D, Table V", "μ_s = 10 above FedAvg globally (MNIST₂; printed filter; CNN)",
          DIGITS, "gfedfilt_table4_digits2_paper", ("g-fedfilt-mu10.0", "fedavg"), "accuracy", "points", 5, ON_CNN,
          seeds=5, by_default=False),  # 151-164 CPU-s a seed
)
# The integer-α cause of `gfedfilt-vii-trend` (docs/fidelity.md §12): P'' with a relaxed
# (continuous) α, as the paper solves it, the clients training fractional epochs.
CLAIMS += (
    Claim("gfedfilt-vii-trend-relaxed", "G-Fedfilt §IV-D, Table VII", "the optimized schedule's accuracy cost grows with H (relaxed α)",
          DIGITS, "gfedfilt_table7", T7[:1], "accuracy", "points", 5, ("algorithm.opt_alpha=relaxed",),
          margin=_table7_trend, extra=T7),
)
# The same claims on the real MNIST digits (the papers' data; the 8×8 digits stand in above),
# on the seeds of their documented verdicts (fewer where a run is costly).
_TWINS = {c.key: c for c in CLAIMS}
CLAIMS += tuple(
    replace(_TWINS[key], key=f"{key}-mnist", data=REAL, overrides=ON_MNIST, seeds=seeds, by_default=by_default)
    for key, seeds, by_default in (
        ("pgfl-5.5a", None, True),  # 10 seeds: about 60 CPU-seconds
        ("gfedfilt-v-mu10", 3, True),
        ("fedpnp-1-fedavg-local", 5, True),
        ("fedpnp-1-pfedme", 5, True),
        ("fedpnp-1-perfedavg", 5, True),
    )
)
# The model cause of `fedpnp-1-fedavg-local` (docs/fidelity.md §11) on the real MNIST digits:
# netemu's batch-norm CNN (`cnn_bn`, lr 0.1 as in §11; not the paper's CNNmnist) for 30
# rounds instead of 100 (about 24 CPU-minutes a seed).
CLAIMS += (
    replace(_TWINS["fedpnp-1-fedavg-local"], key="fedpnp-1-fedavg-local-mnist-cnn", data=REAL,
            says="FedAvg above local training (Dir(0.2); cnn_bn, 30 rounds)",
            overrides=(*ON_MNIST, "task.name=cnn", "task.batchnorm=true", "task.lr=0.1", "run.rounds=30"), seeds=3, by_default=False),
)
BY_KEY = {c.key: c for c in CLAIMS}


class Runs:
    """One Monte Carlo run per (scenario, root seed), of every algorithm the selected claims
    read from it (each algorithm's result does not depend on which others run beside it),
    kept so that claims on one scenario share their runs."""

    def __init__(self, claims: list[Claim]) -> None:
        self.wanted: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
        for c in claims:
            if not c.apart:
                self.wanted[c.scenario, c.overrides] += [x for x in c.labels() if x not in self.wanted[c.scenario, c.overrides]]
        self.cache: dict[tuple, dict[str, dict[str, np.ndarray]]] = {}

    def curves(self, claim: Claim, labels: list[str], seed: int) -> dict[str, np.ndarray]:
        """Per label, the claim's metric per round, of one run at root seed `seed`."""
        labels = labels if claim.apart else self.wanted[claim.scenario, claim.overrides] or labels
        key = (claim.scenario, tuple(labels), seed, claim.overrides)
        if key not in self.cache:
            self.cache[key] = run(claim.scenario, labels, seed, claim.overrides)
        return dict(self.cache[key].get(claim.metric, {}))

    def margins(self, claim: Claim, seeds: list[int]) -> list[float]:
        """The claim's margin at each root seed."""
        out = []
        for s in seeds:
            if claim.apart:
                curves = {}
                for j, label in enumerate(claim.labels()):
                    curves.update(self.curves(claim, [label], s + j * APART))
            else:
                curves = self.curves(claim, claim.labels(), s)
            out.append(claim.margin_of({k: claim.value(c) for k, c in curves.items()}))
        return out


def run(scenario: str, labels: list[str], seed: int, overrides: tuple[str, ...]) -> dict[str, dict[str, np.ndarray]]:
    """One Monte Carlo run of `labels` of a shipped scenario at root seed `seed`: per
    metric and label, the metric per round."""
    path = SCENARIOS / f"{scenario}.toml"
    raw = tomllib.loads(path.read_text())
    raw["algorithm"] = [a for a in raw["algorithm"] if a.get("label", a["name"]) in labels]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        execute(parse_scenario(raw, path, [*QUIET, "run.runs=1", f"run.seed={seed}", *overrides]), out, quiet=True)
        by: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
        with open(out / "metrics.csv") as f:
            for r in csv.DictReader(f):
                by[r["metric"]][r["algorithm"]][int(r["round"])] = float(r["value"])
    return {m: {alg: np.array([v[n] for n in sorted(v)]) for alg, v in algs.items()} for m, algs in by.items()}


def margins(claim: Claim, seeds: list[int]) -> list[float]:
    """The claim's margin at each root seed (its own runs)."""
    return Runs([claim]).margins(claim, seeds)


@dataclass(frozen=True)
class Summary:
    wins: int
    n: int
    mean: float
    low: float
    high: float
    verdict: str


def summarize(m: list[float]) -> Summary:
    """Win count, mean margin with its 95 % t interval, and the verdict by RULE."""
    x = np.asarray(m, dtype=float)
    n, wins, mean = x.size, int(np.sum(x > 0)), float(np.mean(x))
    half = float(stats.t.ppf(0.975, n - 1) * np.std(x, ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    low, high = mean - half, mean + half
    if wins >= 0.8 * n and low > 0:
        verdict = "reproduced"
    elif wins <= 0.2 * n and high < 0:
        verdict = "not reproduced"
    else:
        verdict = "seed-dependent"
    return Summary(wins, n, mean, low, high, verdict)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="Verdict rule: " + RULE,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--claims", default="", help="comma-separated claim keys (default: all; --list shows them)")
    ap.add_argument("--seeds", type=int, default=10, help="independent root seeds per claim (default 10)")
    ap.add_argument("--first-seed", type=int, default=1, help="the first root seed (default 1)")
    ap.add_argument("--json", type=Path, help="also write the per-seed margins and summaries here")
    ap.add_argument("--list", action="store_true", help="list the claims and exit")
    a = ap.parse_args(argv)
    if a.list:
        for c in CLAIMS:
            print(f"{c.key:24} {c.source:28} {c.says}")
        return 0
    keys = [k for k in a.claims.split(",") if k] or [c.key for c in CLAIMS if c.by_default]
    unknown = [k for k in keys if k not in BY_KEY]
    if unknown:
        print(f"fidelity_stats: --claims {','.join(unknown)}: unknown; accepted: {', '.join(BY_KEY)}", file=sys.stderr)
        return 2
    if a.seeds < 2:
        print(f"fidelity_stats: --seeds {a.seeds}: accepted: 2 or more (a confidence interval needs two)", file=sys.stderr)
        return 2
    seeds = list(range(a.first_seed, a.first_seed + a.seeds))
    report = {}
    runs = Runs([BY_KEY[k] for k in keys])
    for k in keys:
        c = BY_KEY[k]
        if c.on_mnist and not MNIST.is_dir():
            print(f"{c.key}: skipped: no MNIST IDX files at {MNIST}", flush=True)
            continue
        t0 = time.process_time()
        m = runs.margins(c, seeds[:c.seeds] if c.seeds and not a.claims else seeds)
        cpu = time.process_time() - t0
        s = summarize(m)
        unit = "dB" if c.unit == "dB" else "points"
        print(f"{c.key}: {c.source}; {c.says}; data: {c.data}\n"
              f"  wins {s.wins} of {s.n}; mean margin {s.mean:+.2f} {unit} (95 % CI {s.low:+.2f} … {s.high:+.2f}); "
              f"{s.verdict}; per seed {' '.join(f'{x:+.2f}' for x in m)}; {cpu:.0f} CPU s", flush=True)
        report[k] = {"source": c.source, "says": c.says, "data": c.data, "seeds": seeds, "margins": m,
                     "unit": unit, "cpu_s": cpu, **s.__dict__}
    if a.json:
        a.json.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
