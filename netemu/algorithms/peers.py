"""Serverless rounds between graph neighbours, shared by the peer-to-peer families
(zCDP-NFL and its baselines, NPFL and NPFL-RL).

Each peer runs iterations n = 1, 2, …: it computes its new model from what it holds,
sends the model it shares to every neighbour (one message per link, `round` = n), and
then collects the neighbours' models of iteration n.

* Synchronous (`sync = true`, the default): wait until every neighbour's iteration-n
  model came or `timeout` virtual seconds passed.  A model of a later iteration (a
  neighbour can run one iteration ahead) is kept for that iteration.  A neighbour whose
  model is lost or late is handled by `missing`: `"reuse"` takes the last model received
  from it for an earlier iteration (the initial model 0 if none), `"exclude"` leaves it
  out of the next primal step, as if the link were absent.
* Asynchronous (`sync = false`): no waiting.  The next primal step uses the latest
  models that arrived while the peer computed (`latest`); `missing` must be "reuse":
  there is no deadline to be late for.

Every peer starts from the common initial model 0 (the papers' initializations), which
therefore counts as received from every neighbour at iteration 0.

Dual steps and their pairs.  ADMM's dual step sums, over the neighbours, the peer's own
shared model minus the neighbour's.  Decentralized ADMM converges to the right point
only if the two ends of every link add opposite terms (then Σ_k γ_k stays 0).  Hence:

1. a neighbour's model of iteration m is paired with the peer's own model *of
   iteration m* (pairing an older neighbour model with one's newer model moves the
   fixed point: asynchronous zCDP-NFL stalled at +12.5 dB that way);
2. it is paired only if it arrives before the peer sends its own model of iteration
   m + 1 — after that the pair is final, and a later arrival is not paired;
3. every model message carries the receiver's receipts (`"got": [a, bitmap]`): which of
   the receiver's iterations a − ACK_WINDOW + 1 … a arrived in time, a being the latest
   final one the receiver may still wait for.  A pair whose mirror the
   neighbour reports missing — the peer's own model was lost or late on the way — is
   retracted (its term subtracted again).  A lost or late model therefore costs both
   ends the same pair, and Σ_k γ_k returns to 0 (tested).  Only when every report
   covering an iteration is lost (ACK_WINDOW messages in a row) can the ends disagree.

In an ideal network every pair is applied in its own iteration and confirmed later, so
the peers compute exactly the textbook recursions (the differential tests).
`Exchanged.diffs` holds the iteration's terms: +(own − theirs) for new pairs and
−(own − theirs) for retracted ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netemu.engine.actors import Actor
from netemu.config import deadline, require
from netemu.coordination import gather

__all__ = ["ACK_WINDOW", "ExchangeParams", "Exchanged", "Peer", "peer_names"]

ACK_WINDOW = 16  # iterations covered by each receipt bitmap ("got")


@dataclass(frozen=True)
class ExchangeParams:
    sync: bool = True
    timeout: float = deadline(30.0)  # virtual seconds a synchronous peer waits for its neighbours
    missing: str = "reuse"  # "reuse" the last model of a late neighbour, or "exclude" it

    def __post_init__(self) -> None:
        require(self.timeout > 0, "timeout", "> 0 virtual seconds")
        require(self.missing in ("reuse", "exclude"), "missing", '"reuse" or "exclude"')
        require(self.sync or self.missing == "reuse", "missing", '"reuse" when sync = false (asynchronous peers have no deadline)')


@dataclass
class Exchanged:
    """One iteration's exchange: the neighbours whose models enter the next primal step
    (`used`, `models` as rows), how many were not fresh (`late`), and the dual terms
    `diffs` (rows; ± (own − theirs)), each from neighbour `pair_names[i]`."""

    used: list[str]
    models: np.ndarray
    late: int
    pair_names: list[str]
    diffs: np.ndarray


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
        self.sent = 0  # the last iteration whose model this peer sent
        self.done = 0  # iterations completed (kept across a crash: stable storage)
        self.heard: dict[str, dict[int, np.ndarray]] = {}  # neighbour -> {round: model} not yet superseded
        self.last: np.ndarray | None = None  # this peer's shared model of round `sent`
        self.early: dict[str, dict[int, np.ndarray]] = {}  # neighbour -> models of rounds this peer has not sent yet
        self.arrived: dict[str, set[int]] = {}  # neighbour -> rounds that arrived in time (for "got")
        self.pending: dict[str, dict[int, np.ndarray]] = {}  # neighbour -> {round: applied, unconfirmed own − theirs}
        self.reports: dict[str, list[tuple[int, int]]] = {}  # neighbour -> [(a, bitmap) of my rounds it got]
        self._new: list[tuple[str, np.ndarray]] = []  # pairs made since the last exchange

    def start(self) -> None:
        """Call first in `run()`: the initial model 0 of every neighbour."""
        for nb in self.neighbours:
            self.heard.setdefault(nb, {0: np.zeros(self.dim)})
            for table in (self.early, self.pending):
                table.setdefault(nb, {})
            self.arrived.setdefault(nb, set())
            self.reports.setdefault(nb, [])

    async def exchange(self, n: int, shared: np.ndarray) -> Exchanged:
        """Send `shared` as iteration n's model; collect the neighbours' (module docstring)."""
        p = self.exchange_params
        neighbours = self.neighbours
        self._drain()  # arrivals up to now count as in time for rounds < n (rule 2)
        self.sent, self.last = n, shared
        for nb in neighbours:  # one message per link, each with the receiver's receipts
            self.send(nb, "model", {"w": shared, "got": list(self._receipts(nb))}, round=n)
        for nb in neighbours:  # neighbours that ran ahead: their model n pairs now
            early = self.early[nb]
            if n in early:
                self._pair(nb, n, early.pop(n))
            for m in [m for m in early if m < n]:  # sent before a crash of this peer: too late
                del early[m]
        if p.sync:
            fresh = lambda nb: n in self.heard[nb]
        else:
            fresh = lambda nb: max(self.heard[nb]) >= n
        waiting = {nb for nb in neighbours if not fresh(nb)}
        await gather(self, "model", self.now + (p.timeout if p.sync else 0.0), counts=lambda m: fresh(m.src), expected=waiting,
                     on_message=self._keep)
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
        names, diffs = self._dual_terms(n)
        return Exchanged(used, np.array(models).reshape(len(used), self.dim), len(waiting), names, diffs)

    def latest(self) -> tuple[list[str], np.ndarray]:
        """Every neighbour and the latest model it has sent (asynchronous peers call this
        before their primal step, to use what arrived during their computation)."""
        self._drain()
        neighbours = self.neighbours
        return neighbours, np.array([self.heard[nb][max(self.heard[nb])] for nb in neighbours]).reshape(-1, self.dim)

    # ---------------------------------------------------------------- pairing

    def _receipts(self, nb: str) -> tuple[int, int]:
        """(a, bitmap): bit i set if nb's model of round a − i arrived in time.  Rounds up to
        `sent` − 1 are final (rule 2); a is the latest of them that nb may still await a
        report for — its own latest round this peer has heard of."""
        a = min(self.sent - 1, max(self.heard[nb]))
        arrived = self.arrived[nb]
        for m in [m for m in arrived if m <= a - ACK_WINDOW]:
            arrived.discard(m)
        return a, sum(1 << (a - m) for m in arrived if a - ACK_WINDOW < m <= a)

    def _pair(self, nb: str, m: int, theirs: np.ndarray) -> None:
        diff = self.last - theirs
        self.arrived[nb].add(m)
        self.pending[nb][m] = diff
        self._new.append((nb, diff))

    def _dual_terms(self, n: int) -> tuple[list[str], np.ndarray]:
        """New pairs, and retractions of pairs a neighbour reports it could not make."""
        terms, self._new = self._new, []
        for nb, reports in self.reports.items():
            pending = self.pending.get(nb, {})
            for a, bits in reports:
                for m in [m for m in pending if m <= a]:
                    diff = pending.pop(m)
                    if m > a - ACK_WINDOW and not bits >> (a - m) & 1:  # my model m never reached nb in time
                        terms.append((nb, -diff))
                    # m <= a − ACK_WINDOW: every report covering m was lost; the pair stays
            reports.clear()
        return [nb for nb, _ in terms], np.array([d for _, d in terms]).reshape(len(terms), self.dim)

    def _drain(self) -> None:
        while (msg := self.inbox.take("model")) is not None:
            self._keep(msg)

    def _keep(self, msg) -> None:
        nb, m = msg.src, msg.round
        model = np.asarray(msg.payload["w"], dtype=float)
        self.heard.setdefault(nb, {})[m] = model
        a, bits = msg.payload["got"]
        self.reports.setdefault(nb, []).append((int(a), int(bits)))
        if m > self.sent:  # ahead of this peer: paired when it sends its own model m
            self.early.setdefault(nb, {})[m] = model
        elif m == self.sent and m >= 1:  # in time (rule 2)
            self._pair(nb, m, model)
