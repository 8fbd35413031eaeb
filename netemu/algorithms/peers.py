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
* Asynchronous (`sync = false`): no waiting — the peer takes whatever has arrived by
  the time it finishes its computation and uses each neighbour's latest model
  (`missing` must be "reuse": there is no deadline to be late for).

Every peer starts from the common initial model 0 (the papers' initializations), which
therefore counts as received from every neighbour at iteration 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netemu.actors import Actor
from netemu.config import require

__all__ = ["ExchangeParams", "Peer"]


@dataclass(frozen=True)
class ExchangeParams:
    sync: bool = True
    timeout: float = 30.0  # virtual seconds a synchronous peer waits for its neighbours
    missing: str = "reuse"  # "reuse" the last model of a late neighbour, or "exclude" it

    def __post_init__(self) -> None:
        require(self.timeout > 0, "timeout", "> 0 virtual seconds")
        require(self.missing in ("reuse", "exclude"), "missing", '"reuse" or "exclude"')
        require(self.sync or self.missing == "reuse", "missing", '"reuse" when sync = false (asynchronous peers have no deadline)')


class Peer(Actor):
    """Base of a peer: `exchange` sends this iteration's model and returns the neighbours'."""

    def __init__(self, name: str, exchange: ExchangeParams, dim: int) -> None:
        super().__init__(name)
        self.exchange_params = exchange
        self.dim = dim
        self.heard: dict[str, dict[int, np.ndarray]] = {}  # neighbour -> {round: model} not yet superseded
        self.done = 0  # iterations completed (kept across a crash: stable storage)

    def start(self) -> None:
        """Call first in `run()`: the initial model 0 of every neighbour."""
        for nb in self.neighbours:
            self.heard.setdefault(nb, {0: np.zeros(self.dim)})

    async def exchange(self, n: int, shared: np.ndarray) -> tuple[list[str], np.ndarray, int]:
        """Send `shared` as iteration n's model; returns the neighbours used this iteration,
        their models (rows, in that order) and how many were not fresh.

        A synchronous peer uses each neighbour's model *of iteration n*: a model of a later
        iteration (a neighbour can run one ahead) waits for its own iteration.  An
        asynchronous peer uses the latest model it has.
        """
        p = self.exchange_params
        neighbours = self.neighbours
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
        while (msg := self.inbox.take("model")) is not None:  # also what else has arrived
            self._keep(msg)
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
        return used, np.array(models).reshape(len(used), self.dim), len(waiting)

    def _keep(self, msg) -> None:
        self.heard.setdefault(msg.src, {})[msg.round] = np.asarray(msg.payload["w"], dtype=float)
