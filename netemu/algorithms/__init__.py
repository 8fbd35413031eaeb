"""Algorithm families.  `ALGORITHMS` maps a scenario's algorithm name to its spec."""

from netemu.algorithms import fedavg
from netemu.algorithms.base import AlgorithmSpec

ALGORITHMS: dict[str, AlgorithmSpec] = {spec.name: spec for spec in (fedavg.SPEC,)}

__all__ = ["ALGORITHMS", "AlgorithmSpec"]
