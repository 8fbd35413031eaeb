"""Serverless rounds between graph neighbours, shared by the peer-to-peer families
(zCDP-NFL and its baselines, NPFL and NPFL-RL).

Each peer runs iterations n = 1, 2, …: it computes its new model from what it holds,
sends the model it shares to every neighbour (one message per link, `round` = n), and
then collects the neighbours' models of iteration n.

* Synchronous (`sync = true`, the default): wait until every neighbour's iteration-n
  model came or `timeout` virtual seconds passed.  A model of a later iteration (a
  neighbour can run one iteration ahead) is kept for that iteration, so that ADMM's
  steps pair models of the same iteration.  A neighbour whose model is lost or late is
  handled by `missing`: `"reuse"` takes the last model received from it for an earlier
  iteration (the initial model 0 if none),
  `"exclude"` leaves it out of this iteration's sums, as if the link were absent.
* Asynchronous (`sync = false`): no waiting.  The peer's dual step uses the models
  that have arrived when it sends, and its next primal step the latest models that
  arrived while it computed (`latest`); `missing` must be "reuse": there is no deadline
  to be late for.

Every peer starts from the common initial model 0 (the papers' initializations), which
therefore counts as received from every neighbour at iteration 0.

Dual (consensus) steps need pairs: `Exchanged.pairs` pairs each neighbour model that
arrived with the peer's own shared model *of the same iteration*, each (neighbour,
iteration) once, whenever it arrives (a late model is paired late; a lost one never).
ADMM's dual steps sum over these pairs, so that the two ends of a link add opposite
terms and Σ_k γ_k stays 0 — the invariant that makes decentralized ADMM converge to
the right point.  Pairing a neighbour's older model with one's newer model breaks it:
the fixed point moves (asynchronous peers stalled far from the solution that way).
`missing` therefore only chooses the models of the next primal step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from netemu.actors import Actor
from netemu.config import require

__all__ = ["ExchangeParams", "Exchanged", "PAIR_HORIZON", "Peer", "peer_names"]

PAIR_HORIZON = 100  # a neighbour model more than this many iterations late is not paired


@dataclass(frozen=True)
class ExchangeParams:
    sync: bool = True
    timeout: float = 30.0  # virtual seconds a synchronous peer waits for its neighbours
    missing: str = "reuse"  # "reuse" the last model of a late neighbour, or "exclude" it

    def __post_init__(self) -> None:
        require(self.timeout > 0, "timeout", "> 0 virtual seconds")
        require(self.missing in ("reuse", "exclude"), "missing", '"reuse" or "exclude"')
        require(self.sync or self.missing == "reuse", "missing", '"reuse" when sync = false (asynchronous peers have no deadline)')


@dataclass
class Exchanged:
    """One iteration's exchange: the neighbours whose models enter the next primal step
    (`used`, `models` as rows), how many were not fresh (`late`), and the dual pairs:
    `pair_names[i]`'s model `pair_theirs[i]` and the peer's own `pair_own[i]` of the same
    iteration."""

    used: list[str]
    models: np.ndarray
    late: int
    pair_names: list[str] = field(default_factory=list)
    pair_own: np.ndarray | None = None
    pair_theirs: np.ndarray | None = None


def peer_names(world, data_parts) -> list[str]:
    """The topology's peers, which must all have data; refuses topologies with servers."""
    peers = [n for n, node in world.network.nodes.items() if node.role == "peer"]
    require(bool(peers) and len(peers) == len(world.network.nodes) and set(peers) <= set(data_parts), "topology",
            "peers only (a random_peers, geometric or graph topology)")
    return peers


class Peer(Actor):
    """Base of a peer: `exchange` sends this iteration's model and returns the neighbours'."""

    def __init__(self, name: str, exchange: ExchangeParams, dim: int) -> None:
        super().__init__(name)
        self.exchange_params = exchange
        self.dim = dim
        self.heard: dict[str, dict[int, np.ndarray]] = {}  # neighbour -> {round: model} not yet superseded
        self.unpaired: dict[str, dict[int, np.ndarray]] = {}  # neighbour -> {round: model} awaiting its dual pair
        self.own: dict[int, np.ndarray] = {}  # this peer's shared models of the last PAIR_HORIZON iterations
        self.done = 0  # iterations completed (kept across a crash: stable storage)

    def start(self) -> None:
        """Call first in `run()`: the initial model 0 of every neighbour."""
        for nb in self.neighbours:
            self.heard.setdefault(nb, {0: np.zeros(self.dim)})
            self.unpaired.setdefault(nb, {})

    async def exchange(self, n: int, shared: np.ndarray) -> Exchanged:
        """Send `shared` as iteration n's model; collect the neighbours' (module docstring).

        A synchronous peer uses each neighbour's model *of iteration n*: a model of a later
        iteration (a neighbour can run one ahead) waits for its own iteration.  An
        asynchronous peer uses the latest model it has.
        """
        p = self.exchange_params
        neighbours = self.neighbours
        self.own[n] = shared
        self.broadcast("model", {"w": shared}, neighbours, round=n)
        if p.sync:
            fresh = lambda nb: n in self.heard[nb]
        else:
            fresh = lambda nb: max(self.heard[nb]) >= n
        waiting = {nb for nb in neighbours if not fresh(nb)}
        until = self.now + (p.timeout if p.sync else 0.0)
        while waiting and (msg := await self.recv("model", until=until)) is not None:
            self._keep(msg)
            if fresh(msg.src):
                waiting.discard(msg.src)
        self._drain()
        waiting = {nb for nb in waiting if not fresh(nb)}
        used, models = [], []
        for nb in neighbours:
            if nb in waiting and p.missing == "exclude":
                continue
            rounds = self.heard[nb]
            r = max(rounds) if not p.sync else max(k for k in rounds if k <= n)  # fresh, or the last received
            for old in [k for k in rounds if k < r]:
                del rounds[old]
            used.append(nb)
            models.append(rounds[r])
        return Exchanged(used, np.array(models).reshape(len(used), self.dim), len(waiting), *self._pairs(n))

    def latest(self) -> tuple[list[str], np.ndarray]:
        """Every neighbour and the latest model it has sent (asynchronous peers call this
        before their primal step, to use what arrived during their computation)."""
        self._drain()
        neighbours = self.neighbours
        return neighbours, np.array([self.heard[nb][max(self.heard[nb])] for nb in neighbours]).reshape(-1, self.dim)

    def _pairs(self, n: int) -> tuple[list[str], np.ndarray, np.ndarray]:
        names, own, theirs = [], [], []
        for nb in self.neighbours:
            waiting = self.unpaired.setdefault(nb, {})
            for m in sorted(k for k in waiting if k <= n):
                model = waiting.pop(m)
                if m in self.own:  # else more than PAIR_HORIZON iterations late: dropped
                    names.append(nb)
                    own.append(self.own[m])
                    theirs.append(model)
        self.own.pop(n - PAIR_HORIZON, None)
        shape = (len(names), self.dim)
        return names, np.array(own).reshape(shape), np.array(theirs).reshape(shape)

    def _drain(self) -> None:
        while (msg := self.inbox.take("model")) is not None:
            self._keep(msg)

    def _keep(self, msg) -> None:
        model = np.asarray(msg.payload["w"], dtype=float)
        self.heard.setdefault(msg.src, {})[msg.round] = model
        if msg.round >= 1:
            self.unpaired.setdefault(msg.src, {})[msg.round] = model
