"""Data sources.  `DATASETS` maps a scenario's `data.kind` to (params class, generator)."""

from netemu.data.federated import FederatedDigits, FederatedTask, make_federated_digits
from netemu.data.clustered import ClusteredLinearData, ClusteredTask, DigitsData, make_clustered_linear, make_digits
from netemu.data.online import OnlineData, OnlineRegression, make_online
from netemu.data.synthetic import LinearData, LinearTask, make_linear

DATASETS = {
    "linear": (LinearData, make_linear),
    "online": (OnlineData, make_online),
    "clustered_linear": (ClusteredLinearData, make_clustered_linear),
    "digits": (DigitsData, make_digits),
    "digits_fl": (FederatedDigits, make_federated_digits),
}

__all__ = [
    "DATASETS", "ClusteredLinearData", "FederatedDigits", "FederatedTask", "make_federated_digits", "ClusteredTask", "DigitsData", "LinearData", "LinearTask", "OnlineData",
    "OnlineRegression", "make_clustered_linear", "make_digits", "make_linear", "make_online",
]
