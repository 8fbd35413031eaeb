"""The PyTorch side: a small CNN, and its state as one flat float64 NumPy vector.

`SmallCNN(side, classes, channels, channels2=0)` is the architecture of netemu's NumPy `cnn`
task (netemu.kernels.cnn.CNN without batch norm), so the two can be compared step for step:

    conv 3×3 (`channels` filters, zero padding 1) → ReLU → max-pool 2×2
    [→ conv 3×3 (`channels2`) → ReLU → max-pool 2×2] → flatten → dense → logits

Inputs are (N, 1, side, side) images; pooling floors odd sides, as netemu's does.

The flat vector (what crosses netemu's wire, what FedAvg averages) is the module's
`state_dict()` in its order — `conv1.weight` (channels, 1, 3, 3), `conv1.bias`, [`conv2.weight`
(channels2, channels, 3, 3), `conv2.bias`], `dense.weight` (classes, features), `dense.bias` —
each tensor flattened row-major (C order), as float64.  `dense.weight`'s columns follow torch's
flatten of (channel, row, column) maps; netemu's NumPy CNN keeps (row, column, channel): the tests
map one layout onto the other.  Buffers would follow the same rule (this module has none).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["SmallCNN", "he_init", "load_vector", "to_vector", "vector_size"]


class SmallCNN(nn.Module):
    """conv 3×3 → ReLU → max-pool 2×2 [→ again with `channels2`] → dense (see the module docstring)."""

    def __init__(self, side: int, classes: int, channels: int = 8, channels2: int = 0) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels2, 3, padding=1) if channels2 else None
        s = side // 2 // 2 if channels2 else side // 2
        self.dense = nn.Linear(s * s * (channels2 or channels), classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        if self.conv2 is not None:
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.dense(torch.flatten(x, 1))


def vector_size(module: nn.Module) -> int:
    """Entries of the flat vector: every tensor of the state dict."""
    return sum(t.numel() for t in module.state_dict().values())


def to_vector(module: nn.Module) -> np.ndarray:
    """The module's state as one new float64 vector (state_dict order, each tensor row-major)."""
    return np.concatenate([t.detach().cpu().reshape(-1).to(torch.float64).numpy() for t in module.state_dict().values()])


def load_vector(module: nn.Module, vector: np.ndarray) -> None:
    """Copy a flat vector (the layout of `to_vector`) into the module's tensors, in place, cast to their dtype."""
    vector = np.asarray(vector, dtype=np.float64)
    if vector.shape != (vector_size(module),):
        raise ValueError(f"a parameter vector of {vector_size(module)} entries expected, got shape {vector.shape}")
    at = 0
    with torch.no_grad():
        for tensor in module.state_dict().values():  # the live tensors: copy_ writes into the module
            n = tensor.numel()
            tensor.copy_(torch.from_numpy(vector[at : at + n]).reshape(tensor.shape))
            at += n


def he_init(module: nn.Module, rng: np.random.Generator) -> np.ndarray:
    """Initial parameters drawn from netemu's `rng` only (torch's own generator decides nothing):
    weights N(0, 2 / fan_in) (He et al. 2015, as netemu's NumPy models), biases zero; a flat vector."""
    parts = []
    for name, tensor in module.state_dict().items():
        if name.endswith("weight"):
            fan_in = int(np.prod(tensor.shape[1:]))
            parts.append(rng.standard_normal(tensor.numel()) * np.sqrt(2.0 / fan_in))
        else:
            parts.append(np.zeros(tensor.numel()))
    return np.concatenate(parts)
