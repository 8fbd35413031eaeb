"""Data sources.  Each built-in kind is a `DataSpec`, registered through a `netemu.data`
entry point in netemu's pyproject.toml (look kinds up with `netemu.plugins.data_kind`)."""

from netemu.data.base import DataSpec
from netemu.data.classification import ClassificationData, LabelledSplit, make_classification
from netemu.data.clustered import ClusteredLinearData, ClusteredTask, DigitsData, make_clustered_linear, make_digits
from netemu.data.federated import FederatedDigits, FederatedTask, make_federated_digits
from netemu.data.online import OnlineData, OnlineRegression, make_online
from netemu.data.synthetic import LinearData, LinearTask, make_linear

LINEAR = DataSpec("linear", LinearData, make_linear, "synthetic linear regression (or binary labels), per-client sample counts")
ONLINE = DataSpec("online", OnlineData, make_online, "streaming nonlinear regression of PAO-Fed (or a CSV stream)")
CLUSTERED_LINEAR = DataSpec("clustered_linear", ClusteredLinearData, make_clustered_linear, "clustered linear tasks of PGFL / NPFL")
DIGITS = DataSpec("digits", DigitsData, make_digits, "clustered binary digit tasks of PGFL (sklearn digits or MNIST files)")
CLASSIFICATION = DataSpec("classification", ClassificationData, make_classification,
                          "a labelled set (sklearn digits, MNIST IDX, .npz, synthetic) split among clients: iid, dirichlet, shards, labels, powerlaw")
DIGITS_FL = DataSpec("digits_fl", FederatedDigits, make_federated_digits, "handwritten digits split over clients for FedPnP / G-Fedfilt")

__all__ = [
    "CLASSIFICATION", "CLUSTERED_LINEAR", "DIGITS", "DIGITS_FL", "LINEAR", "ONLINE", "ClassificationData", "ClusteredLinearData",
    "ClusteredTask", "DataSpec", "DigitsData", "FederatedDigits", "FederatedTask", "LabelledSplit", "LinearData", "LinearTask",
    "OnlineData", "OnlineRegression", "make_classification", "make_clustered_linear", "make_digits", "make_federated_digits",
    "make_linear", "make_online",
]
