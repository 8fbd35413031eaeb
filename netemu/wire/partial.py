"""PartialModel: the entries of a model vector that actually cross a link."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PartialModel"]


def _index_dtype(dim: int) -> type:
    return np.uint32 if dim < 2**32 else np.uint64


@dataclass(frozen=True, eq=False)
class PartialModel:
    """`values[j]` is entry `indices[j]` of a vector of length `dim`.

    Only `indices` and `values` are encoded on the wire, so a message carrying
    m of d entries costs O(m) bytes, as in partial-sharing FL (PAO-Fed, PSO-Fed).
    """

    dim: int
    indices: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        idx = np.asarray(self.indices)
        val = np.asarray(self.values)
        if idx.ndim != 1 or val.ndim != 1 or idx.shape != val.shape:
            raise ValueError(f"PartialModel needs 1-d indices and values of equal length, got {idx.shape} and {val.shape}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.dim):
            raise ValueError(f"PartialModel indices must lie in [0, {self.dim}), got range [{idx.min()}, {idx.max()}]")
        object.__setattr__(self, "indices", idx.astype(_index_dtype(self.dim), copy=False))
        object.__setattr__(self, "values", val)

    @classmethod
    def take(cls, vector: np.ndarray, indices: np.ndarray) -> PartialModel:
        """The entries `indices` of a dense 1-d `vector`.

        NumPy's indexing has already checked the indices, so the constructor's
        checks are skipped (this is on the path of every partial message).
        """
        dim = vector.shape[0]
        values = vector[indices]  # IndexError for indices outside the vector
        pm = object.__new__(cls)
        object.__setattr__(pm, "dim", dim)
        object.__setattr__(pm, "indices", (np.asarray(indices) % dim).astype(_index_dtype(dim), copy=False))
        object.__setattr__(pm, "values", values)
        return pm

    @classmethod
    def from_wire(cls, dim: int, indices: np.ndarray, values: np.ndarray) -> PartialModel:
        """The constructor's checks and result for arrays just decoded from a message (1-d
        or not, integer `indices`), with fewer NumPy calls: unsigned indices need only
        their maximum checked, and indices already of the index dtype are kept as they
        are.  A decode of every partial message goes through here (issue 15)."""
        if indices.ndim != 1 or values.ndim != 1 or indices.shape != values.shape:
            raise ValueError(f"PartialModel needs 1-d indices and values of equal length, got {indices.shape} and {values.shape}")
        if indices.size:
            high = indices.max()
            if high >= dim or (indices.dtype.kind != "u" and indices.min() < 0):
                raise ValueError(f"PartialModel indices must lie in [0, {dim}), got range [{indices.min()}, {high}]")
        dtype = _index_dtype(dim)
        pm = object.__new__(cls)
        object.__setattr__(pm, "dim", dim)
        object.__setattr__(pm, "indices", indices if indices.dtype == dtype else indices.astype(dtype))
        object.__setattr__(pm, "values", values)
        return pm

    def to_dense(self, fill: float = 0.0) -> np.ndarray:
        out = np.full(self.dim, fill, dtype=self.values.dtype)
        out[self.indices] = self.values
        return out

    def apply_to(self, vector: np.ndarray) -> np.ndarray:
        """Overwrite the shared entries of `vector` in place and return it."""
        vector[self.indices] = self.values
        return vector

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PartialModel)
            and self.dim == other.dim
            and np.array_equal(self.indices, other.indices)
            and self.values.dtype == other.values.dtype
            and np.array_equal(self.values, other.values, equal_nan=self.values.dtype.kind in "fc")
        )

    def __repr__(self) -> str:
        return f"PartialModel(dim={self.dim}, m={self.indices.size}, dtype={self.values.dtype})"
