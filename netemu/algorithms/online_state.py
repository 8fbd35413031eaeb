"""The online family's shared parts: its parameters (`OnlineFLParams`) and the state the
actors of one run share (`OnlineState`: data stream, RFF map, the clients' models as one
K × d array, and the steps computed for the clients a model is sent to).  The actors are
in `netemu.algorithms.online_fl`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from netemu.config import deadline, require
from netemu.kernels.online import rff, rff_features, selection_shift
from netemu.wire.partial import PartialModel

if TYPE_CHECKING:  # the data layer sits below the algorithms: types only
    from netemu.data.online import OnlineRegression
    from netemu.engine.world import World

__all__ = ["OnlineFLParams", "OnlineState"]


@dataclass(frozen=True)
class OnlineFLParams:
    mu: float = 0.4  # client step size μ (LMS)
    m: int = 4  # entries per partial message
    sharing: str = "partial"  # "partial" | "full"
    coordinated: bool = False
    version: int = 1  # 0: S = M_n; 1, 2: S = M_{n+1}; 2: weight decrease
    decay: float = 0.2  # a in α_l = a^l (version 2)
    l_max: int = 10  # updates delayed more than l_max iterations are discarded
    select: float = 1.0  # the server keeps each available client with this probability
    local_learning: bool = True  # autonomous updates (4.11) of clients that take no part
    server_full: bool = False  # M = I: the server shares its whole model (Fig. 4.6a)
    uplink: str = "model"  # "model" | "sign" (stochastic-sign SGD)
    server_lr: float = 0.002  # server step of the sign uplink
    overlap: str = "client"  # most recent update wins per "client" or across "all" clients
    send_indices: bool = False  # False: scheduled sharing, only values travel (both ends know M, S)
    aggregation: str = "delay_groups"  # eqs. (4.13)-(4.14), or "pooled": eq. (6) over all arrived updates
    rff_dim: int = 200
    kernel_width: float = 1.0
    iteration_time: float = deadline(1.0)

    def __post_init__(self) -> None:
        require(self.mu > 0, "mu", "> 0")
        require(1 <= self.m <= self.rff_dim, "m", f"between 1 and rff_dim = {self.rff_dim}")
        require(self.sharing in ("partial", "full"), "sharing", '"partial" or "full"')
        require(self.version in (0, 1, 2), "version", "0, 1 or 2")
        require(0 <= self.decay <= 1, "decay", "in [0, 1]")
        require(self.l_max >= 0, "l_max", ">= 0")
        require(0 < self.select <= 1, "select", "in (0, 1]")
        require(self.uplink in ("model", "sign"), "uplink", '"model" or "sign"')
        require(self.server_lr > 0, "server_lr", "> 0")
        require(self.overlap in ("client", "all"), "overlap", '"client" or "all"')
        require(self.aggregation in ("delay_groups", "pooled"), "aggregation", '"delay_groups" or "pooled"')
        require(self.rff_dim >= 1 and self.kernel_width > 0, "kernel_width", "> 0 (and rff_dim >= 1)")
        require(self.iteration_time > 0, "iteration_time", "> 0")

    def alphas(self) -> np.ndarray:
        """α_0 … α_{l_max} of eq. (4.14)."""
        ls = np.arange(self.l_max + 1)
        return self.decay**ls if self.version == 2 else np.ones(ls.size)

    @property
    def partial_down(self) -> bool:
        return self.sharing == "partial" and not self.server_full and self.uplink == "model"


class OnlineState:
    """What the actors of one run share: the data stream, the RFF map, and the clients'
    models as one K × d array (each client works on its own row: the struct-of-arrays
    state of the clients, never read by the server)."""

    def __init__(self, world: World, p: OnlineFLParams, data: OnlineRegression) -> None:
        self.p, self.data, self.stream = p, data, data.stream()
        self.clients = list(data.clients)
        self.index = {c: k for k, c in enumerate(self.clients)}
        input_dim = data.inputs[0].shape[1] if data.inputs else data.test[0].shape[1]
        self.omega, self.phase = rff(input_dim, p.rff_dim, p.kernel_width, world.streams.generator("rff"))
        self.W = np.zeros((len(self.clients), p.rff_dim))
        self.took_part = np.full(len(self.clients), -1)  # iteration of each client's last update
        self.test_Z = rff_features(data.test[0], self.omega, self.phase)
        self.test_y = data.test[1]
        self.partial_down = p.partial_down
        self._selections: dict[int, np.ndarray] = {}  # M_k^(n) by its shift modulo d (read-only)
        self._all = np.arange(p.rff_dim)  # S_k for full sharing (read-only)
        self._all.setflags(write=False)
        self._first = np.arange(p.m)  # M_1^(0)'s indices

    def features(self, n: int, ks: np.ndarray, *, by_row: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """RFF features z and outputs y of the samples clients `ks` receive at iteration n
        (`by_row`: each row bit for bit that client's `feature`, see `rff_features`)."""
        X, y = self.stream.samples(n, ks)
        return rff_features(X, self.omega, self.phase, by_row=by_row), y

    def announce(self, n: int, ks: list[int], w: np.ndarray) -> list:
        """The payload each client of `ks` is sent at iteration n with the server model `w`:
        M_k⁽ⁿ⁾w as values (one vectorized gather) or a PartialModel, or all of w."""
        if not ks:
            return []
        if self.partial_down and not self.p.send_indices:
            return list(w[self.selection_rows(n, np.array(ks))])  # row i: M_k⁽ⁿ⁾w for client ks[i], as `share` takes it
        if self.partial_down:
            return [self.share(w, self.selected(n, k)) for k in ks]
        return [w] * len(ks)

    def feature(self, n: int, k: int) -> tuple[np.ndarray, float]:
        """RFF features z and output y of the sample client k receives at iteration n (its
        own 1 × L product: for the 16 or so clients a model reaches per iteration, cheaper
        than one stacked call for every client with data)."""
        x, y = self.stream.sample(n, k)
        return rff_features(x, self.omega, self.phase)[0], y

    def selection_rows(self, n: int | np.ndarray, ks: np.ndarray) -> np.ndarray:
        """Row i: the indices of M_{ks[i]}⁽ⁿ⁾, as `selected(n, ks[i])` (eq. 4.5); `n` may also be
        an array, one iteration per client."""
        p = self.p
        shifts = p.m * (n + ks) if not p.coordinated else np.broadcast_to(p.m * n, ks.shape)  # `selection_shift` of each client
        return (self._first + (shifts % p.rff_dim)[:, None]) % p.rff_dim

    def selected(self, n: int, k: int) -> np.ndarray:
        """M_k⁽ⁿ⁾'s indices, `selection(d, m, n, k, coordinated)` (eq. 4.5).  There are only d
        distinct shifts, so each index array is made once and shared, read-only."""
        p = self.p
        shift = selection_shift(p.m, n, k, p.coordinated) % p.rff_dim
        indices = self._selections.get(shift)
        if indices is None:
            indices = self._selections[shift] = (np.arange(p.m) + shift) % p.rff_dim  # as `selection` makes it
            indices.setflags(write=False)
        return indices

    def share(self, vector: np.ndarray, indices: np.ndarray):
        """The entries `indices` of `vector` as they travel: values only (the receiver
        knows the schedule), or a PartialModel carrying its indices (`send_indices`)."""
        if self.p.send_indices and indices.size < vector.size:
            return PartialModel.take(vector, indices)
        return vector[indices]

    def sent_rows(self, ns: np.ndarray, ks: np.ndarray) -> np.ndarray:
        """Row i: the indices of S_{ks[i]}⁽ⁿˢ⁽ⁱ⁾⁾ of partial sharing, as `sent_indices(ns[i], ks[i])` (eq. 4.6)."""
        return self.selection_rows(ns if self.p.version == 0 else ns + 1, ks)

    def sent_indices(self, n: int, k: int) -> np.ndarray:
        """S_k⁽ⁿ⁾: M_k⁽ⁿ⁾ for version 0, M_k⁽ⁿ⁺¹⁾ otherwise (eq. 4.6)."""
        p = self.p
        if p.sharing == "full":
            return self._all
        return self.selected(n if p.version == 0 else n + 1, k)
