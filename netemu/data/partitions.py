"""Splitting a labelled training set among clients: pure functions of the labels and a Generator.

Each returns one index array per client (rows of the training set, disjoint, every row used
at most once), as the partitioners of FLGo, Flower Datasets and LEAF do:

* `iid` — a random permutation cut into equal parts.
* `dirichlet` — label skew: for every class c, proportions p_c ~ Dir(α · 1_K) over the K
  clients, and the class's rows are cut at those proportions (Hsu, Qi, Brown 2019,
  "Measuring the effects of non-identical data distribution", §3; Flower Datasets'
  DirichletPartitioner).  Smaller α, more skew.  A client left with fewer than `min_size`
  rows makes the whole draw repeat (as those partitioners do), at most 100 times.
* `shards` — sort the rows by label, cut them into K · s shards of equal size, and give
  each client s shards at random (McMahan et al., AISTATS 2017, §3: 200 shards of 300, two
  per client).
* `labels` — each client gets `per_client` distinct labels (consecutive classes starting at
  a random one) and an equal share of the rows of each of its labels among the clients that
  hold that label.
* `powerlaw` — iid labels, sample counts proportional to (rank)^(−exponent) over a random
  ranking of the clients, each at least `min_size` (LEAF's and FedProx's power-law sizes).
"""

from __future__ import annotations

import numpy as np

__all__ = ["PARTITIONS", "dirichlet", "iid", "labels", "partition", "powerlaw", "shards"]

PARTITIONS = ("iid", "dirichlet", "shards", "labels", "powerlaw")


def iid(y: np.ndarray, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [np.sort(p) for p in np.array_split(rng.permutation(y.shape[0]), k)]


def dirichlet(y: np.ndarray, k: int, rng: np.random.Generator, alpha: float, min_size: int = 1) -> list[np.ndarray]:
    """Per class, Dir(α) proportions over the clients (module docstring); redrawn while a client has < min_size rows."""
    classes = np.unique(y)
    for _ in range(100):
        parts: list[list[np.ndarray]] = [[] for _ in range(k)]
        for c in classes:
            rows = rng.permutation(np.flatnonzero(y == c))
            p = rng.dirichlet(np.full(k, alpha))
            cuts = (np.cumsum(p)[:-1] * rows.size).astype(int)
            for client, chunk in enumerate(np.split(rows, cuts)):
                parts[client].append(chunk)
        out = [np.sort(np.concatenate(p)) for p in parts]
        if min(o.size for o in out) >= min_size:
            return out
    raise ValueError(f"Dirichlet(alpha = {alpha}) over {k} clients leaves a client with fewer than {min_size} samples "
                     "in 100 draws: raise alpha or min_size's data, or use fewer clients")


def shards(y: np.ndarray, k: int, rng: np.random.Generator, per_client: int) -> list[np.ndarray]:
    """K · per_client shards of the label-sorted rows, per_client of them to each client (McMahan et al. 2017)."""
    order = np.argsort(y, kind="stable")
    pieces = np.array_split(order, k * per_client)
    deal = rng.permutation(k * per_client).reshape(k, per_client)
    return [np.sort(np.concatenate([pieces[j] for j in row])) for row in deal]


def labels(y: np.ndarray, k: int, rng: np.random.Generator, per_client: int) -> list[np.ndarray]:
    """`per_client` consecutive classes per client from a random start; each class's rows split equally among its holders."""
    classes = np.unique(y)
    C = classes.size
    start = rng.integers(0, C, size=k)
    held = [classes[(s + np.arange(per_client)) % C] for s in start]
    holders = {c: [i for i in range(k) if c in held[i]] for c in classes}
    parts: list[list[np.ndarray]] = [[] for _ in range(k)]
    for c in classes:
        if not holders[c]:
            continue
        rows = rng.permutation(np.flatnonzero(y == c))
        for client, chunk in zip(holders[c], np.array_split(rows, len(holders[c]))):
            parts[client].append(chunk)
    return [np.sort(np.concatenate(p)) if p else np.zeros(0, dtype=np.int64) for p in parts]


def powerlaw(y: np.ndarray, k: int, rng: np.random.Generator, exponent: float, min_size: int = 1) -> list[np.ndarray]:
    """Sizes ∝ rank^(−exponent) over a random ranking, each ≥ min_size; rows iid."""
    n = y.shape[0]
    if n < k * min_size:
        raise ValueError(f"{n} samples cannot give {k} clients {min_size} each")
    weights = np.arange(1, k + 1, dtype=float) ** -exponent
    extra = np.floor(weights / weights.sum() * (n - k * min_size)).astype(int)
    sizes = min_size + extra
    sizes[0] += n - sizes.sum()  # the rounding's remainder to the largest
    sizes = sizes[rng.permutation(k)]
    cuts = np.cumsum(sizes)[:-1]
    return [np.sort(p) for p in np.split(rng.permutation(n), cuts)]


def partition(kind: str, y: np.ndarray, k: int, rng: np.random.Generator, *, alpha: float = 0.5, per_client: int = 2,
              exponent: float = 1.0, min_size: int = 1) -> list[np.ndarray]:
    """The rows of each of k clients under partition `kind` (one of PARTITIONS)."""
    if kind == "iid":
        return iid(y, k, rng)
    if kind == "dirichlet":
        return dirichlet(y, k, rng, alpha, min_size)
    if kind == "shards":
        return shards(y, k, rng, per_client)
    if kind == "labels":
        return labels(y, k, rng, per_client)
    if kind == "powerlaw":
        return powerlaw(y, k, rng, exponent, min_size)
    raise ValueError(f"partition {kind!r}: one of {', '.join(PARTITIONS)}")
