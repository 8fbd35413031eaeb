"""What changes in the network during a run, as `engine.cc` commands: a script's link changes and node crashes.

A scenario script changes a link by setting its attributes (``link.bandwidth = 2e6``, ``link.latency =
Constant(0.05)``, ``link.loss = Bernoulli(0.01)``, ``link.add_outage(t1, t2)``) and crashes a node through
`World.crash` or the fault model (``[nodes] crashes``).  Nothing tells the network that a link changed, so
`Changes` compares every link with what ns-3 was last given, at every instant at which ns-3 is about to
move on (`Ns3Engine`): a change reaches ns-3 at the virtual instant the script made it, before any packet
is sent after it.  A node that is down has its links down in ns-3 (`crash N`, `recover N`).

What ns-3 cannot take is refused, naming the link, the key, the value and what is accepted: a latency
that is random or differs between the two directions (one channel, one delay), jitter, a loss model
other than Bernoulli, netem's duplicate and corrupt, and a changed `queue_bytes` (a device queue's size
is fixed once packets may be in it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from netemu.errors import RunStopped
from netemu.ns3.topology import NS, Ns3Unsupported, loss_rate, pair_delay, rate

if TYPE_CHECKING:
    from netemu.engine.net.links import Link
    from netemu.engine.net.nodes import Node

__all__ = ["Changes", "Ns3Refused"]


class Ns3Refused(RunStopped):
    """A change made during the run that ns-3 cannot take: the run stops (``complete: false``), naming it."""


def _signature(link: Link) -> tuple:
    """What ns-3 knows of `link`, cheaply: equal signatures, no change to send."""
    latency, loss = link.latency, link.loss
    return (link.bandwidth, latency, getattr(latency, "delay", None), link.jitter, loss, getattr(loss, "p", None), link.duplicate,
            link.corrupt, link.queue_bytes, len(link.outages))


class Changes:
    """The links and nodes ns-3 was given, and the commands that bring it up to date (module docstring)."""

    def __init__(self, names: Sequence[str], links: Mapping[tuple[str, str], Link], nodes: Mapping[str, Node]) -> None:
        index = {name: i for i, name in enumerate(names)}
        self._index = index
        #: each point-to-point link once, from its lower-numbered end: (u, v, u->v, v->u)
        self._pairs = [(u, v, ab, links[(v, u)]) for (u, v), ab in links.items() if index[u] < index[v] and (v, u) in links]
        self._nodes = nodes
        self._seen: list[tuple[tuple, tuple]] = []
        self._outages: dict[tuple[str, str], set[tuple[float, float]]] = {}
        self._down: set[str] = set()

    def start(self) -> list[str]:
        """Take the links as ns-3's setup has them now; the commands for the nodes down now."""
        self._seen = [(_signature(ab), _signature(ba)) for _, _, ab, ba in self._pairs]
        for u, v, ab, ba in self._pairs:
            self._outages[(u, v)], self._outages[(v, u)] = set(ab.outages), set(ba.outages)
        self._down = set()
        return self._nodes_now()

    def now(self, t: float) -> list[str]:
        """The commands that give ns-3 what changed since the last call (or `start`), seen at virtual time `t`;
        `Ns3Refused` for a change it cannot take."""
        try:
            return self._now()
        except Ns3Unsupported as exc:
            raise Ns3Refused(f"a change made during the run (seen at virtual time {t:g}) cannot reach ns-3: {exc}") from None

    def _now(self) -> list[str]:
        out: list[str] = []
        seen = self._seen
        for i, (u, v, ab, ba) in enumerate(self._pairs):
            sab, sba = _signature(ab), _signature(ba)
            old = seen[i]
            if old[0] != sab or old[1] != sba:
                out += self._link(u, v, ab, ba, old)
                seen[i] = (sab, sba)
        return out + self._nodes_now()

    def _link(self, u: str, v: str, ab: Link, ba: Link, old: tuple[tuple, tuple]) -> list[str]:
        index, out = self._index, []
        a, b = index[u], index[v]
        delay = pair_delay(u, v, ab, ba)  # refuses what one channel cannot be
        if delay != old[0][2]:
            out.append(f"delay {a} {b} {round(delay * NS)}")
        for (x, y, link), was in zip(((u, v, ab), (v, u, ba)), old):
            i, j = index[x], index[y]
            if link.queue_bytes != was[8]:
                raise Ns3Unsupported(f'link {x}->{y}: queue_bytes changed during the run ({was[8]} -> {link.queue_bytes}); engine = "ns3" '
                                     "accepts queue sizes set before the run only (a device queue keeps its size)")
            if link.bandwidth != was[0]:
                out.append(f"rate {i} {j} {rate(link)}")
            p = loss_rate(x, y, link)  # refuses a loss model other than Bernoulli
            if p != (was[5] if was[5] is not None else 0.0):
                out.append(f"loss {i} {j} {p!r}")
            sent = self._outages[(x, y)]
            for start, end in link.outages:
                if (start, end) not in sent:
                    sent.add((start, end))
                    out.append(f"outage {i} {j} {round(start * NS)} {round(end * NS) if math.isfinite(end) else -1}")
        return out

    def _nodes_now(self) -> list[str]:
        out, down, index = [], self._down, self._index
        for name, node in self._nodes.items():
            if node.up == (name in down):
                if node.up:
                    down.discard(name)
                    out.append(f"recover {index[name]}")
                else:
                    down.add(name)
                    out.append(f"crash {index[name]}")
        return out
