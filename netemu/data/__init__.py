"""Data sources.  `DATASETS` maps a scenario's `data.kind` to (params class, generator)."""

from netemu.data.synthetic import LinearData, LinearTask, make_linear

DATASETS = {"linear": (LinearData, make_linear)}

__all__ = ["DATASETS", "LinearData", "LinearTask", "make_linear"]
