"""A small convolutional network for square grey images, in pure NumPy, over one flat θ.

`CNN(side, C, c1=8, c2=0, batchnorm=False)` reads each row of X as a side × side image
(row-major, as MNIST's IDX files and scikit-learn's digits store them) and computes

    conv 3×3 (c1 channels, zero padding 1) → [batch norm] → ReLU → max-pool 2×2
    → if c2 > 0: conv 3×3 (c2 channels) → [batch norm] → ReLU → max-pool 2×2
    → dense → softmax cross-entropy (mean over the batch).

Pooling floors odd sides (28 → 14 → 7; 7 would drop its last row and column).  A
convolution is an im2col matrix (every 3×3 patch a row, built with a strided view, no
loop over pixels) times the weight matrix, so its cost is one BLAS matmul per layer;
its input gradient (second layer only) adds the patches' gradients back in 9 shifted
slices.  Activations are kept channels-last (N, H, W, C).

It has the interface of `Softmax` and `MLP` (netemu.kernels.classifiers): `size`,
`init(rng)`, `logits(θ, X)` (evaluation mode), `loss_grad(θ, X, y)` (training mode), so
`sgd`, `accuracy`, the graph filters and the wire format use it unchanged.  θ holds, in
order: per convolution its weights ((c_in·9) × c_out, rows in (channel, row, column)
order) and either its biases or, with batch norm, its scale γ and shift β (a bias
before batch norm would be cancelled by the mean); then the dense weights and biases;
last, with batch norm, every layer's running mean and variance (zero gradient: `sgd`
updates them through `loss_grad_stats`, see netemu.kernels.classifiers.sgd).
`local_mask` marks γ, β and the running statistics (what FedBN keeps on the client).

It is smaller than the papers' networks — FedPnP's CNNmnist (Table 2: conv 8×8 stride 2,
BN, tanh, conv 4×4 stride 2, BN, tanh, FC 512→32 with BN, FC 32→10) and G-Fedfilt's (§IV-B:
32 and 64 filters 3×3 stride 2, ReLU, max-pool, FC 128, FC 10); docs/fidelity.md says what was run.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from netemu.kernels import batchnorm as bn
from netemu.kernels.classifiers import _cross_entropy

__all__ = ["CNN", "square_side"]


def square_side(d: int) -> int | None:
    """The side of a d-pixel square image, or None when d is not a perfect square."""
    side = int(np.sqrt(d)) if d > 0 else 0
    for s in (side - 1, side, side + 1):
        if s > 0 and s * s == d:
            return s
    return None


def _im2col(x: np.ndarray) -> np.ndarray:
    """(N·H·W) × (C·9): every 3×3 patch of the zero-padded (N, H, W, C) images as a row."""
    n, h, w, c = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return sliding_window_view(padded, (3, 3), axis=(1, 2)).reshape(n * h * w, c * 9)


def _col2im(dcols: np.ndarray, shape: tuple) -> np.ndarray:
    """The gradient with respect to the (N, H, W, C) input of `_im2col`'s rows' gradients."""
    n, h, w, c = shape
    d = dcols.reshape(n, h, w, c, 3, 3)
    dpad = np.zeros((n, h + 2, w + 2, c))
    for i in range(3):
        for j in range(3):
            dpad[:, i : i + h, j : j + w, :] += d[..., i, j]
    return dpad[:, 1:-1, 1:-1, :]


_CORNERS = ((0, 0), (0, 1), (1, 0), (1, 1))  # a 2×2 block's entries, in the order ties are broken


def _pool(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2×2 max-pooling of (N, H, W, C) (odd sides floored) and which corner of each block
    holds its maximum (the first of `_CORNERS` on a tie)."""
    p, q = x.shape[1] // 2, x.shape[2] // 2
    corners = [x[:, i : 2 * p : 2, j : 2 * q : 2, :] for i, j in _CORNERS]
    out = np.maximum(np.maximum(corners[0], corners[1]), np.maximum(corners[2], corners[3]))
    which = np.full(out.shape, 3, dtype=np.int8)
    for k in (2, 1, 0):
        which[corners[k] == out] = k
    return out, which


def _unpool(dout: np.ndarray, which: np.ndarray, shape: tuple) -> np.ndarray:
    """The pooling's gradient: each block's output gradient to its maximum, zero elsewhere."""
    p, q = shape[1] // 2, shape[2] // 2
    dx = np.zeros(shape)
    for k, (i, j) in enumerate(_CORNERS):
        dx[:, i : 2 * p : 2, j : 2 * q : 2, :] = np.where(which == k, dout, 0.0)
    return dx


@dataclass(frozen=True)
class CNN:
    side: int  # images are side × side, rows of X of side² pixels
    C: int  # classes
    c1: int = 8  # channels of the first convolution
    c2: int = 0  # channels of the second (0: one convolution)
    batchnorm: bool = False

    def __post_init__(self) -> None:
        if self.side < (4 if self.c2 else 2) or self.C < 1 or self.c1 < 1 or self.c2 < 0:
            raise ValueError(f"CNN: side {self.side} (>= 2, >= 4 with a second convolution), classes {self.C} (>= 1), "
                             f"channels {self.c1} (>= 1) and {self.c2} (>= 0)")

    @property
    def d(self) -> int:
        return self.side * self.side

    @cached_property
    def _convs(self) -> tuple[tuple[int, int], ...]:
        """(c_in, c_out) of each convolution."""
        return ((1, self.c1), (self.c1, self.c2)) if self.c2 else ((1, self.c1),)

    @cached_property
    def _features(self) -> int:
        s = self.side
        for _ in self._convs:
            s //= 2
        return s * s * self._convs[-1][1]

    @cached_property
    def _layout(self) -> dict[str, tuple[int, tuple[int, ...]]]:
        """name -> (offset in θ, shape)."""
        shapes: list[tuple[str, tuple[int, ...]]] = []
        for i, (cin, cout) in enumerate(self._convs):
            shapes.append((f"W{i}", (cin * 9, cout)))
            shapes += [(f"g{i}", (cout,)), (f"beta{i}", (cout,))] if self.batchnorm else [(f"b{i}", (cout,))]
        shapes += [("Wd", (self._features, self.C)), ("bd", (self.C,))]
        if self.batchnorm:
            shapes += [(f"run{i}", (2 * cout,)) for i, (_, cout) in enumerate(self._convs)]
        out, at = {}, 0
        for name, shape in shapes:
            out[name] = (at, shape)
            at += int(np.prod(shape))
        return out

    @property
    def size(self) -> int:
        at, shape = list(self._layout.values())[-1]
        return at + int(np.prod(shape))

    @cached_property
    def running(self) -> slice | None:
        """Where the running statistics sit in θ (the last entries), or None without batch norm."""
        return slice(self._layout["run0"][0], self.size) if self.batchnorm else None

    @cached_property
    def local_mask(self) -> np.ndarray | None:
        """True for the batch-norm entries (γ, β, running statistics), or None without batch norm."""
        if not self.batchnorm:
            return None
        mask = np.zeros(self.size, dtype=bool)
        for name, (at, shape) in self._layout.items():
            if name[0] in "gr" or name.startswith("beta"):
                mask[at : at + int(np.prod(shape))] = True
        return mask

    def _part(self, theta: np.ndarray, name: str) -> np.ndarray:
        at, shape = self._layout[name]
        return theta[at : at + int(np.prod(shape))].reshape(shape)

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """He-initialized weights, zero biases and shifts, unit scales, running mean 0 and variance 1."""
        theta = np.zeros(self.size)
        for name, (at, shape) in self._layout.items():
            view = theta[at : at + int(np.prod(shape))]
            if name[0] == "W":
                view[:] = rng.standard_normal(view.size) * np.sqrt(2.0 / shape[0])
            elif name[0] == "g":
                view[:] = 1.0
            elif name.startswith("run"):
                view[view.size // 2 :] = 1.0
        return theta

    def _forward(self, theta: np.ndarray, X: np.ndarray, train: bool):
        n, s = X.shape[0], self.side
        x = X.reshape(n, s, s, 1)
        caches, stats = [], []
        for i, (_, cout) in enumerate(self._convs):
            cols = _im2col(x)
            z = cols @ self._part(theta, f"W{i}")
            norm = None
            if not self.batchnorm:
                z += self._part(theta, f"b{i}")
            elif train:
                z, norm, batch = bn.train(z, self._part(theta, f"g{i}"), self._part(theta, f"beta{i}"))
                stats.append(batch)
            else:
                run = self._part(theta, f"run{i}")
                z = bn.evaluate(z, self._part(theta, f"g{i}"), self._part(theta, f"beta{i}"), run[:cout], run[cout:])
            a = np.maximum(z, 0.0).reshape(n, s, s, cout)
            if train:
                pooled, idx = _pool(a)
                caches.append((x.shape, cols, norm, z > 0, a.shape, idx))
            else:  # evaluation needs no arg-max
                q = s // 2
                pooled = np.maximum(np.maximum(a[:, 0 : 2 * q : 2, 0 : 2 * q : 2], a[:, 0 : 2 * q : 2, 1 : 2 * q : 2]),
                                    np.maximum(a[:, 1 : 2 * q : 2, 0 : 2 * q : 2], a[:, 1 : 2 * q : 2, 1 : 2 * q : 2]))
            x, s = pooled, s // 2
        feats = x.reshape(n, -1)
        return feats @ self._part(theta, "Wd") + self._part(theta, "bd"), feats, caches, stats

    def logits(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Evaluation mode: batch norm with the running statistics."""
        return self._forward(theta, X, train=False)[0]

    def loss_grad_stats(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Training mode: loss, gradient (zero on the running statistics) and the batch's
        statistics in the running statistics' layout (empty without batch norm)."""
        logits, feats, caches, stats = self._forward(theta, X, train=True)
        loss, g = _cross_entropy(logits, y)
        grad = np.zeros(self.size)

        def put(name: str, value: np.ndarray) -> None:
            at, _ = self._layout[name]
            grad[at : at + value.size] = value.ravel()

        put("Wd", feats.T @ g)
        put("bd", g.sum(axis=0))
        dx = (g @ self._part(theta, "Wd").T).reshape(caches[-1][4][0], -1)
        for i in reversed(range(len(self._convs))):
            in_shape, cols, norm, active, a_shape, idx = caches[i]
            dz = _unpool(dx.reshape(idx.shape), idx, a_shape).reshape(-1, a_shape[3]) * active
            if norm is not None:
                dz, dgamma, dbeta = bn.backward(dz, norm)
                put(f"g{i}", dgamma)
                put(f"beta{i}", dbeta)
            else:
                put(f"b{i}", dz.sum(axis=0))
            put(f"W{i}", cols.T @ dz)
            if i > 0:
                dx = _col2im(dz @ self._part(theta, f"W{i}").T, in_shape)
        return loss, grad, (np.concatenate(stats) if stats else np.zeros(0))

    def loss_grad(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Training mode (batch norm with the batch's statistics): the loss and its gradient."""
        loss, grad, _ = self.loss_grad_stats(theta, X, y)
        return loss, grad
