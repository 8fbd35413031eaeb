"""Graph filters on stacked client models (FedPnP, G-Fedfilt).

All functions are pure.  The K clients are the nodes of a weighted graph with adjacency
A and Laplacian L = D − A = V Λ Vᵀ (eigenvalues ascending; λ₁ = 0 with a constant
eigenvector on a connected graph).  A filter H = V h(Λ) Vᵀ acts on the K × B matrix of
stacked models (or updates), one row per client:

* soft: h(λ) = 1 / (1 + β₁λ + β₂λ²) (FedPnP eq. 12; G-Fedfilt eq. 13 is β₂ = 0, β₁ = μ_s);
* hard: h(λ_i) = 1 for the τ smallest graph frequencies, else 0 (FedPnP eq. 16).

`weighted_filter` applies H diag(ζ) (FedPnP eq. 13, G-Fedfilt eq. 12) normalized per
row: Ψ_k = Σ_j H_kj ζ_j Ω_j / Σ_j H_kj ζ_j.  The printed H diag(ζ) Ω with ζ summing to 1
shrinks every model by about K (its limit β → ∞ is (1/K) Σ_j ζ_j Ω_j, because
H → 11ᵀ/K); with the row normalization β → ∞ gives the ζ-weighted FedAvg model exactly
and β = 0 gives each client its own model (local training) — the limits both papers
state.  The hard filter is a projection and is applied unweighted, Ψ = H Ω: τ = 1 is the
plain mean (FedAvg with equal weights), τ = K the identity.

`paper_filter` is the printed alternative, G-Fedfilt eqs. (12) and (43)–(46) taken
literally: the eigenvector of λ = 0 is the vector of ones (not 1/√K), so
H_paper = H + (1 − 1/K) 11ᵀ and Ĝ = H_paper diag(κ) G.  With κ = ζ its limit μ_s → ∞ is
the ζ-weighted mean (eq. 46), but μ_s = 0 gives G/K + (1 − 1/K)·mean, not local
training: the personal part of every update is scaled by about 1/K.

A disconnected graph has one zero eigenvalue per connected component; H → the projection
on the component indicators as β → ∞, so the row-normalized filter averages each
component on its own.  `components` counts them and `join_components` connects them
with weak edges (G-Fedfilt assumes a connected graph; graphfl.py's `disconnected`).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "components",
    "hard_filter",
    "join_components",
    "laplacian",
    "paper_filter",
    "position_graph",
    "soft_filter",
    "spectrum",
    "statistics",
    "statistics_graph",
    "weighted_filter",
]


def laplacian(A: np.ndarray) -> np.ndarray:
    return np.diag(A.sum(axis=1)) - A


def spectrum(L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(λ ascending, V) of the Laplacian, computed once per graph (G-Fedfilt Algorithm 1, line 5)."""
    lam, V = np.linalg.eigh(L)
    return np.maximum(lam, 0.0), V  # round-off below zero


def soft_filter(spec: tuple[np.ndarray, np.ndarray], beta1: float, beta2: float = 0.0) -> np.ndarray:
    """H = V diag(1/(1 + β₁λ + β₂λ²)) Vᵀ (FedPnP eq. 12)."""
    lam, V = spec
    return (V * (1.0 / (1.0 + beta1 * lam + beta2 * lam**2))) @ V.T


def hard_filter(spec: tuple[np.ndarray, np.ndarray], tau: int) -> np.ndarray:
    """H = V_τ V_τᵀ, the projection on the τ smallest graph frequencies (FedPnP eq. 16)."""
    V = spec[1][:, :tau]
    return V @ V.T


def weighted_filter(H: np.ndarray, weights: np.ndarray, stack: np.ndarray) -> np.ndarray:
    """Row-normalized H diag(weights) stack (module docstring)."""
    HW = H * weights[None, :]
    return (HW @ stack) / HW.sum(axis=1, keepdims=True)


def paper_filter(H: np.ndarray, weights: np.ndarray, stack: np.ndarray) -> np.ndarray:
    """G-Fedfilt's printed H diag(κ) G with a constant DC eigenvector of ones (eqs. 12,
    43–46): H diag(κ) stack + (1 − 1/K)(κᵀ stack), κ = `weights` (module docstring)."""
    K = len(weights)
    return H @ (weights[:, None] * stack) + (1.0 - 1.0 / K) * (weights @ stack)[None, :]


def components(A: np.ndarray) -> np.ndarray:
    """Connected-component label of every node (0, 1, … in order of first node)."""
    K = len(A)
    label = -np.ones(K, dtype=int)
    c = 0
    for start in range(K):
        if label[start] >= 0:
            continue
        label[start], stack = c, [start]
        while stack:
            i = stack.pop()
            for j in np.flatnonzero(A[i] > 0):
                if label[j] < 0:
                    label[j] = c
                    stack.append(int(j))
        c += 1
    return label


def join_components(A: np.ndarray, weight: float) -> np.ndarray:
    """A with an edge of `weight` between every two nodes of different components: the
    graph becomes connected, so the low-pass limit is the mean over all nodes, while
    nodes of one component stay as they were."""
    label = components(A)
    return np.where(label[:, None] != label[None, :], weight, A)


def statistics(X: np.ndarray) -> np.ndarray:
    """The four per-feature statistics of a client's inputs (FedPnP eq. 27): mean,
    variance, skewness, kurtosis (a constant feature gets skewness 0 and kurtosis 0)."""
    mean = X.mean(axis=0)
    centred = X - mean
    var = np.mean(centred**2, axis=0)
    safe = np.where(var > 0, var, 1.0)
    skew = np.where(var > 0, np.mean(centred**3, axis=0) / safe**1.5, 0.0)
    kurt = np.where(var > 0, np.mean(centred**4, axis=0) / safe**2, 0.0)
    return np.stack([mean, var, skew, kurt])


def statistics_graph(stats: list[np.ndarray]) -> np.ndarray:
    """Client similarity from their statistics.  FedPnP eq. (28) defines
    d_ij = (1/4) Σ_k ‖s_k^i − s_k^j‖, which is a distance (0 for identical data) although
    the text calls it the weight; netemu turns it into a similarity,
    A_ij = exp(−d_ij / median_{i≠j} d), A_ii = 0."""
    d = _distances(np.stack(stats))  # K × 4 × features -> K × K
    off = d[~np.eye(len(stats), dtype=bool)]
    scale = float(np.median(off)) if off.size and np.median(off) > 0 else 1.0
    A = np.exp(-d / scale)
    np.fill_diagonal(A, 0.0)
    return A


_BLOCK_BYTES = 8 * 2**20  # the differences of one block of client pairs; with the norms, temporaries stay < 16 MiB


def _distances(S: np.ndarray, block_bytes: int = _BLOCK_BYTES) -> np.ndarray:
    """d_ij = mean_k ‖S_ik − S_jk‖ (FedPnP eq. 28) for the K × 4 × features statistics `S`,
    a block of pairs at a time: the K × K × 4 × features differences at once would be about
    8 MB per client at 2,000 clients.  Each entry is computed by exactly the operations of
    ``np.mean(np.linalg.norm(S[:, None] - S[None, :], axis=-1), axis=-1)`` — the same
    differences, squares, sum over the features of one contiguous row (the same order),
    square root and mean over the four statistics — so the result is the same bit for bit."""
    K = len(S)
    per_pair = max(S[0].size * S.itemsize, 1)
    pairs = max(block_bytes // per_pair, 1)
    cols = min(K, pairs)  # a whole row of pairs when it fits, else part of one
    rows = max(pairs // K, 1) if cols == K else 1
    d: np.ndarray | None = None
    for i in range(0, K, rows):
        for j in range(0, K, cols):
            x = S[i : i + rows, None] - S[None, j : j + cols]
            if not issubclass(x.dtype.type, np.inexact):  # as np.linalg.norm does
                x = x.astype(float)
            np.multiply(x, x, out=x)  # norm's (x.conj() * x).real for a real x
            norms = np.add.reduce(x, axis=-1)
            np.sqrt(norms, out=norms)
            block = np.mean(norms, axis=-1)
            if d is None:
                d = np.empty((K, K), dtype=block.dtype)
            d[i : i + rows, j : j + cols] = block
            del x  # before the next block is allocated
    return d if d is not None else np.empty((0, 0))


def position_graph(positions: np.ndarray, d_max: float) -> np.ndarray:
    """A_ij = 1[‖p_i − p_j‖ < d_max], i ≠ j (G-Fedfilt eq. 1)."""
    dist = np.linalg.norm(positions[:, None, :] - positions[None, :, :], axis=-1)
    A = (dist < d_max).astype(float)
    np.fill_diagonal(A, 0.0)
    return A
