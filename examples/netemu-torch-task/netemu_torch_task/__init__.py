"""A PyTorch CNN as a netemu task: the plug-in registered as `torch-cnn` (entry point group `netemu.tasks`).

A scenario names it `[task] name = "torch-cnn"` once this package is installed, or
`name = "netemu_torch_task:SPEC"` when it is merely importable.  Every algorithm that learns a task
(fedavg, fedprox, fedadam, fedbuff, fedasync-mix, overcommit, ...) then trains this module: netemu
hands it parameters as one flat float64 NumPy vector and gets one back (netemu_torch_task.model
says the order); the training runs on torch (netemu_torch_task.task).

netemu itself never imports torch, and neither does loading this plug-in: netemu reads every
installed plug-in's spec when it starts, so torch (a second or more to import) is imported only
when a scenario makes this task, or when the torch-side names below are first used.
"""

from __future__ import annotations

import importlib
from typing import Any

from netemu.engine.rng import Streams
from netemu.tasks.base import Task, TaskSpec

from netemu_torch_task.params import TorchCNNParams

__all__ = ["SPEC", "SmallCNN", "TorchCNNParams", "TorchCNNTask", "he_init", "load_vector", "make", "to_vector", "vector_size"]

_LAZY = {"SmallCNN": "model", "he_init": "model", "load_vector": "model", "to_vector": "model", "vector_size": "model",
         "TorchCNNTask": "task"}


def __getattr__(name: str) -> Any:
    """The torch-side names, imported on first use (PEP 562)."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"netemu_torch_task.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'netemu_torch_task' has no attribute {name!r}")


def make(params: TorchCNNParams, data: Any, streams: Streams) -> Task:
    """`TaskSpec.make`: the run's task over the `classification` data the scenario made (imports torch)."""
    from netemu_torch_task.task import TorchCNNTask

    return TorchCNNTask(params, data, streams)


SPEC = TaskSpec(
    "torch-cnn", TorchCNNParams, make, ("classification",),
    "PyTorch CNN: conv 3x3, ReLU, max-pool (x2 with channels2), dense, as netemu's cnn; square grey images; accuracy, loss, f1",
)
