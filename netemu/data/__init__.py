"""Data sources.  `DATASETS` maps a scenario's `data.kind` to (params class, generator)."""

from netemu.data.online import OnlineData, OnlineRegression, make_online
from netemu.data.synthetic import LinearData, LinearTask, make_linear

DATASETS = {"linear": (LinearData, make_linear), "online": (OnlineData, make_online)}

__all__ = ["DATASETS", "LinearData", "LinearTask", "OnlineData", "OnlineRegression", "make_linear", "make_online"]
