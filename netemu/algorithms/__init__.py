"""Algorithm families.  Each module exports its `AlgorithmSpec`s (`SPEC` or `SPECS`),
registered through `netemu.algorithms` entry points in netemu's pyproject.toml, the same
way users' plug-ins register (look algorithms up with `netemu.plugins.algorithm`)."""

from netemu.algorithms.base import AlgorithmSpec, Requirement, Setting

__all__ = ["AlgorithmSpec", "Requirement", "Setting"]
