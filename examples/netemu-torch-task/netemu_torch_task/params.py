"""The `[task]` keys of `torch-cnn` (no torch import: netemu reads them when it loads its plug-ins)."""

from __future__ import annotations

from dataclasses import dataclass

from netemu.config import require
from netemu.tasks.supervised import CNNParams

__all__ = ["TorchCNNParams"]


@dataclass(frozen=True)
class TorchCNNParams(CNNParams):
    """The `cnn` task's keys (netemu.tasks.supervised.CNNParams: lr, batch, epochs, steps,
    work_per_sample, metrics, evaluate_on, evaluate_every, channels, channels2), meaning the same
    (but `batchnorm` and `lr_decay`, which it leaves unset),
    and the dtype torch computes in: "float32" (torch's usual) or "float64" (step-for-step equal to
    netemu's NumPy `cnn` to rounding)."""

    dtype: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.dtype in ("float32", "float64"), "dtype", '"float32" or "float64"')
        require(not self.batchnorm, "batchnorm", "false: torch-cnn has no batch-norm layers")
        require(self.lr_decay is None, "lr_decay", "unset: torch-cnn keeps its step size")
