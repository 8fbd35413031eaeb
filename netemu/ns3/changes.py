"""What changes in the network during a run, as `engine.cc` commands: a script's link changes and node crashes.

A scenario script changes a link by setting its attributes (``link.bandwidth = 2e6``, ``link.latency =
Constant(0.05)``, ``link.loss = Bernoulli(0.01)``, ``link.add_outage(t1, t2)``) and crashes a node through
`World.crash` or the fault model (``[nodes] crashes``).  Nothing tells the network that a link changed, so
`Changes` watches the links and nodes ns-3 carries: each one's class becomes a subclass of its own (no field
more, so the swap is allowed) that notes the object when one of the attributes ns-3 knows is set, a
component is read (it may be changed in place: ``link.latency.delay = 0.05``) or an outage added.  At every
instant at which ns-3 is about to move on (`Ns3Engine`), only the noted links are compared with what ns-3
was last given: a change reaches ns-3 at the virtual instant the script made it, before any packet is sent
after it, and costs nothing while nothing changes (a scan of every link at every instant would cost
O(links) each time: a tenth of the CPU of a round of 300 clients).  A node that is down has its links down in ns-3 (`crash N`, `recover N`).

What ns-3 cannot take is refused, naming the link, the key, the value and what is accepted: a latency
that is random or differs between the two directions (one channel, one delay), jitter, a loss model
other than Bernoulli, netem's duplicate and corrupt, and a changed `queue_bytes` or `qdisc` (a device's
queue and queue disc are fixed once packets may be in them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from netemu.engine.net.links import Link
from netemu.engine.net.nodes import Node
from netemu.errors import RunStopped
from netemu.ns3.topology import NS, Ns3Unsupported, loss_rate, pair_delay, rate

__all__ = ["Changes", "Ns3Refused"]


class Ns3Refused(RunStopped):
    """A change made during the run that ns-3 cannot take: the run stops (``complete: false``), naming it."""


#: the attributes of a link whose change ns-3 must hear of (the components' private slots: their setters set them)
_LINK_KEYS = frozenset({"bandwidth", "_latency", "_jitter", "_loss", "duplicate", "corrupt", "queue_bytes", "_outages", "qdisc"})


def _reading(name: str, note: Callable[[Any], None]) -> property:
    """`Link`'s property `name`, noting the link when it is read (the component may then be changed in place)."""
    base = getattr(Link, name)

    def get(self: Link) -> Any:
        note(self)
        return base.fget(self)
    return property(get, base.fset)


def _watched_link(note: Callable[[Any], None]) -> type:
    def __setattr__(self: Link, name: str, value: Any) -> None:
        Link.__setattr__(self, name, value)
        if name in _LINK_KEYS:
            note(self)

    def add_outage(self: Link, start: float, end: float) -> None:
        Link.add_outage(self, start, end)
        note(self)
    return type("WatchedLink", (Link,), {"__slots__": (), "__module__": __name__, "__setattr__": __setattr__, "add_outage": add_outage,
                                         **{name: _reading(name, note) for name in ("latency", "jitter", "loss")}})


def _watched_node(note: Callable[[Any], None]) -> type:
    def __setattr__(self: Node, name: str, value: Any) -> None:
        Node.__setattr__(self, name, value)
        if name == "up":
            note(self)
    return type("WatchedNode", (Node,), {"__slots__": (), "__module__": __name__, "__setattr__": __setattr__})


def _signature(link: Link) -> tuple:
    """What ns-3 knows of `link`, cheaply (equal signatures: no change to send).  It reads the link's own
    components without the properties: the setup read each through them, so each link owns its own (a script
    changing one changes that link only)."""
    latency, loss, outages = link._latency, link._loss, link._outages
    return (link.bandwidth, latency, getattr(latency, "delay", None), link._jitter, loss, getattr(loss, "p", None), link.duplicate,
            link.corrupt, link.queue_bytes, len(outages) if outages else 0, link.qdisc)


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
        #: the pair each watched link belongs to; the links and nodes noted since the last look
        self._pair_of = {link: i for i, (_, _, ab, ba) in enumerate(self._pairs) for link in (ab, ba)}
        self._noted_links: set[Link] = set()
        self._noted_nodes: set[str] = set()  # by name: a node (a dataclass) is not hashable
        links_class, nodes_class = _watched_link(self._noted_links.add), _watched_node(lambda node: self._noted_nodes.add(node.name))
        for link in self._pair_of:
            link.__class__ = links_class
        for node in nodes.values():
            node.__class__ = nodes_class

    def start(self) -> list[str]:
        """Take the links as ns-3's setup has them now; the commands for the nodes down now."""
        self._seen = [(_signature(ab), _signature(ba)) for _, _, ab, ba in self._pairs]
        for u, v, ab, ba in self._pairs:
            self._outages[(u, v)], self._outages[(v, u)] = set(ab.outages), set(ba.outages)
        self._down = set()
        self._noted_links.clear()
        self._noted_nodes.clear()
        return self._nodes_now(self._nodes.values())

    def now(self, t: float) -> list[str]:
        """The commands that give ns-3 what changed since the last call (or `start`), seen at virtual time `t`;
        `Ns3Refused` for a change it cannot take."""
        try:
            return self._now()
        except Ns3Unsupported as exc:
            raise Ns3Refused(f"a change made during the run (seen at virtual time {t:g}) cannot reach ns-3: {exc}") from None

    def _now(self) -> list[str]:
        out: list[str] = []
        if self._noted_links:
            seen, pairs = self._seen, sorted({self._pair_of[link] for link in self._noted_links})  # in the links' order
            self._noted_links.clear()
            for i in pairs:
                u, v, ab, ba = self._pairs[i]
                sab, sba = _signature(ab), _signature(ba)
                old = seen[i]
                if old[0] != sab or old[1] != sba:
                    out += self._link(u, v, ab, ba, old)
                    seen[i] = (sab, sba)
        if self._noted_nodes:
            noted = self._noted_nodes
            out += self._nodes_now([node for name, node in self._nodes.items() if name in noted])  # in the nodes' order
            noted.clear()
        return out

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
            if link.qdisc != was[10]:
                raise Ns3Unsupported(f'link {x}->{y}: qdisc changed during the run ({was[10]} -> {link.qdisc}); engine = "ns3" '
                                     "accepts queue disciplines set before the run only (a device keeps its queue disc)")
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

    def _nodes_now(self, nodes: Any) -> list[str]:
        out, down, index = [], self._down, self._index
        for node in nodes:
            name = node.name
            if node.up == (name in down):
                if node.up:
                    down.discard(name)
                    out.append(f"recover {index[name]}")
                else:
                    down.add(name)
                    out.append(f"crash {index[name]}")
        return out
