"""A validated scenario as typed, frozen records: `Settings`, made once by `load_scenario`
(`Scenario.settings`) and read by the layers that run it instead of the nested table.

The records hold what the resolved table says, typed where netemu reads it (the run, the
output, crashes, the algorithms' labels and deadlines) and as read-only mappings where a
plug-in reads it (a latency model's parameters, an algorithm's params, a data kind's).
`network_model` is what a trace records of the random models (netemu.trace).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from netemu import plugins
from netemu.config import deadlines

__all__ = ["Algorithm", "Behaviour", "Crash", "Data", "Devices", "Links", "Nodes", "Output", "Run", "Settings", "Task", "Topology",
           "network_model", "settings", "thawed"]


def _frozen(x: Any) -> Any:
    """`x` with its tables read-only and its arrays tuples."""
    if isinstance(x, dict):
        return MappingProxyType({k: _frozen(v) for k, v in x.items()})
    if isinstance(x, list):
        return tuple(_frozen(v) for v in x)
    return x


def thawed(x: Any) -> Any:
    """`x` as plain dicts and lists again (what msgpack, TOML and a model's constructor take)."""
    if isinstance(x, Mapping):
        return {k: thawed(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return [thawed(v) for v in x]
    return x


@dataclass(frozen=True)
class Run:
    """[run]: `max_time` 0 is the automatic horizon, `until` 0 no limit."""

    name: str
    description: str
    seed: int
    rounds: int
    runs: int
    until: float
    max_time: float


@dataclass(frozen=True)
class Output:
    plots: bool
    log: bool
    trace: bool
    log_format: str = "jsonl"  # or "arrow" (netemu.logarrow)


@dataclass(frozen=True)
class Crash:
    node: str
    at: float
    recover: float | None  # None: never


@dataclass(frozen=True)
class Behaviour:
    """[nodes] or one [[nodes.group]]: a number, or a model's table, per key; `members` are
    node name patterns (empty for [nodes], which is every node's default)."""

    name: str
    members: tuple[str, ...]
    participation: float | Mapping
    speed: float | Mapping
    slowdown_sigma: float
    completeness: float | Mapping | None  # None: absent (1)

    @property
    def drawn(self) -> bool:
        """Whether speeds or participation come from a model (drawn, or derived from the data)."""
        return isinstance(self.speed, Mapping) or isinstance(self.participation, Mapping)


@dataclass(frozen=True)
class Nodes:
    default: Behaviour
    groups: tuple[Behaviour, ...]
    crashes: tuple[Crash, ...]
    compute: str  # "work" or "measured"

    @property
    def population(self) -> bool:
        """Whether a behaviour draws or derives per-node speeds or participation (a run folder's nodes.csv)."""
        return self.default.drawn or any(g.drawn for g in self.groups)


@dataclass(frozen=True)
class Links:
    """[links] by class, the shared links of [topology] (`server_link`, `access_points`) by
    key, and the [[link]] overrides; each a resolved link table."""

    classes: Mapping[str, Mapping]
    shared: Mapping[str, Mapping]
    overrides: tuple[Mapping, ...]

    def by_class(self) -> dict[str, Mapping]:
        """The link classes' tables: the classes the shared links stand for (both directions
        alike), then [links] (a [links.<class>] table wins)."""
        out: dict[str, Mapping] = {}
        for key, up, down in (("server_link", "server_uplink", "server_downlink"), ("access_points", "ap_uplink", "ap_downlink")):
            if isinstance(self.shared.get(key), Mapping):  # uneven groups (an array) give each access point's links instead
                out[up] = out[down] = MappingProxyType({k: v for k, v in self.shared[key].items() if k != "clients_per_ap"})
        return {**out, **self.classes}

    def ap_groups(self) -> tuple[Mapping, ...]:
        """The groups of `access_points = [...]`, in order (each its `clients` and link keys); () for
        `access_points = {clients_per_ap = ...}` or none."""
        groups = self.shared.get("access_points")
        return tuple(groups) if isinstance(groups, tuple) else ()

    def clients_per_ap(self) -> int | list[int]:
        """What `behind_routers` takes: clients behind each access point (0: none), or per group."""
        groups = self.ap_groups()
        if groups:
            return [g["clients"] for g in groups]
        return self.shared.get("access_points", {}).get("clients_per_ap", 0)

    def tables(self) -> list[Mapping]:
        """Every link table: the shared links' (each group's), the classes', the overrides'."""
        shared = [t for v in self.shared.values() for t in (v if isinstance(v, tuple) else (v,))]
        return [*shared, *self.classes.values(), *self.overrides]

    def outage_ends(self) -> list[float]:
        return [w[1] for t in (*self.by_class().values(), *self.ap_groups(), *self.overrides) for w in t.get("outages", ())]


@dataclass(frozen=True)
class Topology:
    """[topology]: its `kind` and the builder's parameters (without the shared links)."""

    kind: str
    params: Mapping


@dataclass(frozen=True)
class Data:
    kind: str
    params: Mapping


@dataclass(frozen=True)
class Task:
    """[task] (or, without one, the data kind's default task): its registered `name` and params."""

    name: str
    params: Mapping


@dataclass(frozen=True)
class Algorithm:
    """One [[algorithm]] entry: `params` as the table gives them, `deadlines` the finite values
    of the parameters its spec declares deadlines (netemu.config.deadline)."""

    name: str
    label: str
    params: Mapping
    deadlines: tuple[float, ...]


@dataclass(frozen=True)
class Devices:
    file: str  # "" for none
    bandwidth: bool


@dataclass(frozen=True)
class Settings:
    run: Run
    topology: Topology
    links: Links
    nodes: Nodes
    data: Data | None
    task: Task | None  # None: no algorithm learns a task, or the data kind has no default
    algorithms: tuple[Algorithm, ...]
    devices: Devices
    output: Output
    script: str  # "" for none
    network: Mapping | None  # [network]: sharing and transport (netemu.engine.net.model)

    @property
    def labels(self) -> list[str]:
        return [a.label for a in self.algorithms]


def _behaviour(t: dict) -> Behaviour:
    return Behaviour(t.get("name", ""), tuple(t.get("members", ())), _frozen(t["participation"]), _frozen(t["speed"]),
                     t["slowdown_sigma"], _frozen(t.get("completeness")))


def _algorithm(entry: dict) -> Algorithm:
    declared = deadlines(plugins.algorithm(entry["name"]).params)
    values = [entry.get(k) for k in declared]
    finite = tuple(float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v))
    return Algorithm(entry["name"], entry["label"], _frozen({k: v for k, v in entry.items() if k not in ("name", "label")}), finite)


def _task(table: dict) -> Task | None:
    from netemu.scenario.specs import task_name

    if table.get("task"):
        return Task(table["task"]["name"], _frozen({k: v for k, v in table["task"].items() if k != "name"}))
    name = task_name(table)
    learns = any(plugins.algorithm(a["name"]).task for a in table["algorithm"])
    return Task(name, MappingProxyType({})) if name is not None and learns else None


def settings(table: dict) -> Settings:
    """The typed records of a resolved, validated scenario table (netemu.scenario.load)."""
    run, nodes, topo = table["run"], table["nodes"], table["topology"]
    shared = ("server_link", "access_points")
    return Settings(
        run=Run(**run),
        topology=Topology(topo["kind"], _frozen({k: v for k, v in topo.items() if k not in ("kind", *shared)})),
        links=Links(_frozen(table["links"]), _frozen({k: topo[k] for k in shared if k in topo}), _frozen(table["link"])),
        nodes=Nodes(_behaviour(nodes), tuple(map(_behaviour, nodes["group"])),
                    tuple(Crash(c["node"], c["at"], c["recover"] if c["recover"] >= 0 else None) for c in nodes["crash"]),
                    nodes["compute"] or "work"),
        data=Data(table["data"]["kind"], _frozen({k: v for k, v in table["data"].items() if k != "kind"})) if table["data"] else None,
        task=_task(table),
        algorithms=tuple(map(_algorithm, table["algorithm"])),
        devices=Devices(table["devices"]["file"], table["devices"]["bandwidth"]),
        output=Output(**{**table["output"], "log_format": table["output"]["log_format"] or "jsonl"}),
        script=table["script"],
        network=_frozen(table["network"]),
    )


_DETERMINISTIC_LINK_KEYS = ("bandwidth", "outages", "queue_bytes", "qdisc", "clients_per_ap", "clients")  # not drawn, not in the trace: free to differ on replay


def network_model(s: Settings) -> dict:
    """The random models of a scenario whose draws a trace records (its header's `network`).

    Link latency, jitter and loss (per class and per-link overrides), and the nodes'
    participation, slowdown, speed model and completeness (with their groups).
    Deterministic parts — bandwidth, outages, queues, plain speeds, crashes, algorithms, rounds,
    the compute mode — are left out: a replay may change them (that is what a what-if
    replay is for).  A latency or speed read from a file is named by the file's name
    only, so a run folder replays on another machine.
    """
    from pathlib import PurePath

    def link(t: Mapping) -> dict:
        # duplicate and corrupt are drawn; at 0 (their default) they draw nothing, so a trace recorded
        # before they existed still matches its scenario
        out = {k: thawed(v) for k, v in t.items() if k not in _DETERMINISTIC_LINK_KEYS and not (k in ("duplicate", "corrupt") and not v)}
        latency = out.get("latency")
        if isinstance(latency, dict) and latency.get("file"):
            out["latency"] = {**latency, "file": PurePath(latency["file"]).name}
        return out

    def behaviour(b: Behaviour, group: bool) -> dict:
        # a speed model draws the population (a plain speed is deterministic: free to differ); completeness is
        # drawn below 1 (absent, or 1, draws nothing, so traces recorded before it existed still match)
        out: dict[str, Any] = {"name": b.name, "members": list(b.members)} if group else {}
        out.update(participation=thawed(b.participation), slowdown_sigma=b.slowdown_sigma)
        if isinstance(b.speed, Mapping):
            speed = thawed(b.speed)
            out["speed"] = {**speed, "file": PurePath(speed["file"]).name} if speed.get("file") else speed
        if b.completeness not in (None, 1.0):
            out["completeness"] = thawed(b.completeness)
        return out

    shared = {f"topology.{k}": [link(g) for g in t] if isinstance(t, tuple) else link(t) for k, t in sorted(s.links.shared.items())}
    return {
        "links": {cls: link(t) for cls, t in sorted(s.links.classes.items())},
        **({"shared_links": shared} if shared else {}),
        "link": [link(t) for t in s.links.overrides],
        "nodes": {**behaviour(s.nodes.default, False), "group": [behaviour(g, True) for g in s.nodes.groups]},
    }
