"""Algorithm families.  `ALGORITHMS` maps a scenario's algorithm name to its spec."""

from netemu.algorithms import fedavg, graphfl, nfl, npfl, online_fl, pgfl
from netemu.algorithms.base import AlgorithmSpec

ALGORITHMS: dict[str, AlgorithmSpec] = {spec.name: spec for spec in (fedavg.SPEC, *online_fl.SPECS, *pgfl.SPECS, *nfl.SPECS, *npfl.SPECS, *graphfl.SPECS)}

__all__ = ["ALGORITHMS", "AlgorithmSpec"]
