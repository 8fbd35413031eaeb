"""What an algorithm registers: its parameters, its requirements, and how it populates a World.

Built-in families and users' plug-ins register the same way: an `AlgorithmSpec` object
named by a `netemu.algorithms` entry point (see `netemu.plugins`).  `netemu validate`
checks a scenario against the spec — parameter names and ranges, data kind, node roles
and every `Requirement` — so that a scenario validate accepts does not fail when its
world is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from netemu.engine.world import World

__all__ = ["CONNECTED_PEERS", "ONE_SERVER", "RETIRED", "SERVERS_WITH_CLIENTS", "AlgorithmSpec", "Requirement", "Setting"]


@dataclass(frozen=True)
class Setting:
    """What a requirement may look at: the run-0 topology (node attribute `role`, and
    `server` for clients of a multi-server graph), the algorithm's constructed params,
    the resolved `[data]` table and the number of rounds.  `features()`, when given, is the
    data's feature count as its files' headers state it (None when the data kind cannot
    tell before the data is built); it reads files, so call it only when needed.  `task` is
    the task's constructed params for a task-learning family (None when it has none or they
    cannot be built: their own checks report that)."""

    graph: nx.DiGraph
    params: Any
    data: dict
    rounds: int
    features: Callable[[], int | None] | None = None
    task: Any = None


@dataclass(frozen=True)
class Requirement:
    """A condition an algorithm needs of its scenario, checked by `netemu validate`.

    `holds(setting)` says whether it is met; if not, validate reports the scenario key
    `key` (e.g. "topology.kind", "run.rounds", "data.partition") with its value and
    `needs` — what would be accepted, in words."""

    needs: str
    holds: Callable[[Setting], bool]
    key: str = "topology.kind"


def _servers(g: nx.DiGraph) -> list[str]:
    return [n for n, r in g.nodes(data="role") if r == "server"]


def _linked(g: nx.DiGraph, a: str, b: str) -> bool:
    return g.has_edge(a, b) and g.has_edge(b, a)


def _one_server(s: Setting) -> bool:
    servers = _servers(s.graph)
    if len(servers) != 1:
        return False
    others = [n for n in s.graph.nodes if n != servers[0]]
    return bool(others) and all(s.graph.nodes[n].get("role") == "client" and _linked(s.graph, servers[0], n) for n in others)


def _servers_with_clients(s: Setting) -> bool:
    g, servers = s.graph, set(_servers(s.graph))
    clients = [n for n in g.nodes if n not in servers]
    return bool(servers) and bool(clients) and all(
        g.nodes[c].get("role") == "client" and g.nodes[c].get("server") in servers and _linked(g, g.nodes[c]["server"], c)
        for c in clients
    )


def _connected_peers(s: Setting) -> bool:
    g = s.graph
    return g.number_of_nodes() >= 2 and all(r == "peer" for _, r in g.nodes(data="role")) and nx.is_weakly_connected(g)


#: one server linked both ways to every other node, all of them clients (a `star`).
ONE_SERVER = Requirement("one server linked to every client and nothing else (a star topology)", _one_server)
#: servers >= 1; every other node a client whose `server` attribute names a server it is linked to.
SERVERS_WITH_CLIENTS = Requirement(
    "servers >= 1 with their own clients: every client names its server (a multi_server topology, "
    "or a graph whose clients carry a `server` attribute)", _servers_with_clients)
#: only peers (no server), connected.
CONNECTED_PEERS = Requirement("connected peers only, no server (a random_peers, geometric or graph topology)", _connected_peers)


@dataclass(frozen=True)
class AlgorithmSpec:
    """`params` is a frozen dataclass checking itself in `__post_init__`;
    `build(world, params, data, rounds)` adds the actors to `world`;
    `datasets` lists the `data.kind` values it can learn (empty: any); `roles` the
    node roles its topology must have; `requires` the other conditions validate checks;
    `defaults` overrides parameter defaults, so that one params class serves several
    named variants; `needs_data` False lets a scenario leave out `[data]` (an
    algorithm that loads its own, like a Flower app).

    `partial_work` says the family honours `[nodes] completeness` (its clients ask
    `work_fraction()` and do that fraction of their local steps); `step_cost(params, data)`,
    when given, returns (step, work): a callable doing one local step of a client on
    representative data and the work units that step counts — what `[nodes] compute =
    "measured"` times (netemu.run.calibration).  validate refuses those keys for families
    without them.

    `task` True says the family learns through a task (netemu.tasks): `build` receives the
    run's `Task` in place of the data, and partial work and measured compute come from the task;
    `tasks` lists the task names it accepts (empty: any); `task_table`, when set, says that the family
    needs a written `[task]` table (the data kind's default task would silently change its runs) and
    what to write in it.  `moved` maps parameters that left the family to where they went (e.g.
    `{"lr": "task.lr"}`), so that validate names the new key instead of calling the old one unknown."""

    name: str
    params: type
    build: Callable[[World, Any, Any, int], None]
    datasets: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    doc: str = ""
    defaults: dict = field(default_factory=dict)
    requires: tuple[Requirement, ...] = ()
    needs_data: bool = True
    partial_work: bool = False
    step_cost: Callable[[Any, Any], tuple[Callable[[], object], float]] | None = None
    task: bool = False
    tasks: tuple[str, ...] = ()
    task_table: str = ""
    moved: dict = field(default_factory=dict)

    def make_params(self, values: dict) -> Any:
        return self.params(**{**self.defaults, **values})

    def unmet(self, setting: Setting) -> list[Requirement]:
        """The requirements `setting` does not meet (a failing check counts as unmet)."""
        out = []
        for req in self.requires:
            try:
                ok = bool(req.holds(setting))
            except Exception:  # noqa: BLE001 - a check that cannot run on this setting is not met
                ok = False
            if not ok:
                out.append(req)
        return out


#: algorithm names that are no longer algorithms -> what to write instead (the unknown-name
#: error says it): the graph-filter family's FedAvg/FedProx and local-training presets are the
#: general algorithms over the same `[task]` (netemu.algorithms.fedavg)
RETIRED: dict[str, str] = {
    "graphfl-fedprox": 'use "fedprox" (mu = 0.01) or "fedavg" over the same [task]: the general FedAvg and FedProx '
                       "(the graph-filter family's deadline is their round_time)",
    "local": 'use "local-only" over the same [task]: local training without averaging',
}
