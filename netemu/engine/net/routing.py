"""Routes through routers: which actors are neighbours, and the hops between them.

A topology node whose `role` is ``router`` (or ``switch``) runs no actor: it forwards.
Two actors are neighbours when a link joins them directly, or a path whose inner nodes
are all routers does and their roles talk to each other — client and server, server and
server, peer and peer (clients of a star behind one router do not become each other's
neighbours).  A message follows the shortest such path (fewest hops; among equals the
first found, in the order the topology lists its links), found by a bidirectional
breadth-first search over the routers that expands the cheaper side: from a server to
one of 100,000 clients behind access points it walks back from the client, not out over
every access point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["ROUTER_ROLES", "Routes", "talks_to"]

ROUTER_ROLES = frozenset({"router", "switch"})
_TALKS = {"client": ("server",), "server": ("client", "server", "peer"), "peer": ("peer", "server")}


def talks_to(a: str | None, b: str | None) -> bool:
    """Whether an actor of role `a` has an actor of role `b` for a neighbour through routers."""
    return b in _TALKS.get(a or "", ()) or (a not in _TALKS and b not in ROUTER_ROLES)


class Routes:
    """Shortest router paths over a directed topology given as successor lists."""

    def __init__(self, succ: Mapping[str, Sequence[str]], roles: Mapping[str, str | None]) -> None:
        self.routers = frozenset(n for n, r in roles.items() if r in ROUTER_ROLES)
        self._roles = roles
        routers = self.routers
        self._rsucc: dict[str, tuple[str, ...]] = {}  # node -> its router successors
        rpred: dict[str, list[str]] = {}  # node -> its router predecessors
        for u, vs in succ.items():
            rs = tuple(v for v in vs if v in routers)
            if rs:
                self._rsucc[u] = rs
            if u in routers:
                for v in vs:
                    rpred.setdefault(v, []).append(u)
        self._rpred = {v: tuple(us) for v, us in rpred.items()}
        self._succ = succ
        self._components: dict[str, dict[str | None, list[str]]] = {}  # router -> its component's actors by role

    def __bool__(self) -> bool:
        return bool(self.routers)

    def neighbours(self, name: str) -> list[str]:
        """`name`'s direct actor successors, then the actors its routers reach whose roles talk
        to its own, each once (a router network's actors are found once, by component:
        routers joined by links, taken both ways, reach each other)."""
        routers, roles = self.routers, self._roles
        out = dict.fromkeys(v for v in self._succ.get(name, ()) if v not in routers)
        role = roles.get(name)
        comps = {id(c): c for c in (self._component(r) for r in self._rsucc.get(name, ()))}  # each once, in order
        for comp in comps.values():
            for other, actors in comp.items():
                if talks_to(role, other):
                    out.update((v, None) for v in actors if v != name)
        return list(out)

    def _component(self, router: str) -> dict[str | None, list[str]]:
        """The actors the routers of `router`'s component link to, by role (made once per component)."""
        comp = self._components.get(router)
        if comp is not None:
            return comp
        comp = {}
        seen, frontier = {router}, [router]
        undirected = lambda r: (*self._rsucc.get(r, ()), *self._rpred.get(r, ()))
        while frontier:
            nxt = []
            for r in frontier:
                for v in self._succ.get(r, ()):
                    if v not in self.routers:
                        comp.setdefault(self._roles.get(v), []).append(v)
                for v in undirected(r):
                    if v in self.routers and v not in seen:
                        seen.add(v)
                        nxt.append(v)
            frontier = nxt
        for r in seen:
            self._components[r] = comp
        return comp

    def path(self, src: str, dst: str) -> tuple[str, ...] | None:
        """The nodes src, routers..., dst of the shortest router path (None: there is none); the
        network caches the hops it makes of it."""
        rsucc, rpred = self._rsucc, self._rpred
        fwd: dict[str, str | None] = dict.fromkeys(rsucc.get(src, ()))  # router -> previous router (None: src)
        bwd: dict[str, str | None] = dict.fromkeys(rpred.get(dst, ()))  # router -> next router (None: dst)
        dist_f = dict.fromkeys(fwd, 1)  # hops from src
        dist_b = dict.fromkeys(bwd, 1)  # hops to dst
        ff, fb = list(fwd), list(bwd)
        met = any(r in bwd for r in ff)  # a meeting can only be new among the nodes a step added: a path
        while True:                      # of L routers costs O(L), not a scan of every searched node per step
            if met:  # every node within the searched radii is known: the shortest meeting is among these
                meet = [r for r in fwd if r in bwd]
                best = min(meet, key=lambda r: dist_f[r] + dist_b[r])  # min keeps the first of equals
                return self._join(src, dst, best, fwd, bwd)
            if not ff or not fb:
                return None
            if sum(len(rsucc.get(r, ())) for r in ff) <= sum(len(rpred.get(r, ())) for r in fb):
                ff = self._expand(ff, rsucc, fwd, dist_f)
                met = any(r in bwd for r in ff)
            else:
                fb = self._expand(fb, rpred, bwd, dist_b)
                met = any(r in fwd for r in fb)

    @staticmethod
    def _expand(frontier: list[str], adjacent: dict, parent: dict, dist: dict) -> list[str]:
        nxt = []
        for r in frontier:
            d = dist[r] + 1
            for s in adjacent.get(r, ()):
                if s not in parent:
                    parent[s], dist[s] = r, d
                    nxt.append(s)
        return nxt

    @staticmethod
    def _join(src: str, dst: str, meet: str, fwd: dict, bwd: dict) -> tuple[str, ...]:
        head = [meet]
        r = fwd[meet]
        while r is not None:
            head.append(r)
            r = fwd[r]
        tail = []
        r = bwd[meet]
        while r is not None:
            tail.append(r)
            r = bwd[r]
        return (src, *reversed(head), *tail, dst)
