"""The keyed draws of a network's nodes: participation, compute time, completeness.

A mixin of `netemu.engine.net.network.Network`: each draw is keyed by (node, round[, index]) in
its own stream and passes through the network's fates hook, so the trace records it and a
replay returns it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from netemu.engine.net.fates import Fates, fates_many
from netemu.engine.net.nodes import Node
from netemu.engine.rng import KeyedDraws

__all__ = ["NodeDraws"]


class NodeDraws:
    """Participation, compute time and completeness of the nodes (see the module docstring)."""

    nodes: dict[str, Node]
    fates: Fates
    work_seconds: float
    _participation_draws: KeyedDraws
    _compute_draws: KeyedDraws
    _completeness_draws: KeyedDraws

    def _node(self, name: str) -> Node:
        raise NotImplementedError

    def participates(self, name: str, round: int) -> bool:
        """Bernoulli(participation) draw of node `name` in `round`, keyed by (node, round)."""
        p = self._node(name).participation
        if p >= 1 or p <= 0:
            return p >= 1
        return self.fates(("participation", name, round), lambda: self._participation_draws.uniform(name, round) < p)

    def participations(self, names: Sequence[str], round: int) -> np.ndarray:
        """`participates(name, round)` for every name, as one bool array: the same keyed
        draws and trace entries, in the same order, made in one vectorized call
        (`KeyedDraws.uniforms`) and passed to the fates hook as one batch (`fates_many`)."""
        nodes = self.nodes
        try:
            probs = np.array([nodes[name].participation for name in names], dtype=np.float64)
        except KeyError:
            for name in names:
                self._node(name)  # raises the error that names the unknown node
            raise
        out = probs >= 1
        todo = np.flatnonzero((probs > 0) & (probs < 1))
        if not todo.size:
            return out
        drawn, p, draws = [names[i] for i in todo.tolist()], probs[todo], self._participation_draws

        def draw(index: np.ndarray) -> np.ndarray:
            return draws.uniforms([(drawn[i], round) for i in index.tolist()]) < p[index]

        out[todo] = fates_many(self.fates, "participation", drawn, round, draw)
        return out

    def compute_time(self, name: str, work: float, round: int, index: int) -> float:
        """Virtual seconds node `name` needs for `work` units (its `index`-th compute in `round`)."""
        node = self._node(name)
        duration = work / node.speed if self.work_seconds == 1.0 else self.work_seconds * work / node.speed
        if node.slowdown_sigma > 0:
            sigma = node.slowdown_sigma
            draws = self._compute_draws
            factor = self.fates(("compute", name, round, index), lambda: math.exp(sigma * draws.normal(name, round, index)))
            duration *= factor
        return duration

    def work_fraction(self, name: str, round: int) -> float:
        """The fraction of its local work node `name` completes in `round` (its completeness:
        uniform in [low, high], keyed by (node, round) in the stream ``completeness``, a fate
        the trace records; 1 when the node always completes all of it)."""
        low, high = self._node(name).completeness
        if low >= high:
            return low
        draws = self._completeness_draws
        return self.fates(("completeness", name, round), lambda: low + (high - low) * draws.uniform(name, round))
