"""Build Worlds from a validated Scenario: one per (Monte Carlo run, algorithm).

All algorithms of one Monte Carlo run get the same run seed, hence the same topology,
data, participation draws and link fates (common random numbers).  The run seed is
`run_seed(seed, run)`, a BLAKE2b derivation documented in docs/formats.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

from netemu.algorithms import ALGORITHMS
from netemu.data import DATASETS
from netemu.devices import attach_devices, read_devices
from netemu.log import MessageLog
from netemu.net import links as L
from netemu.net import topology as T
from netemu.net.network import Fates, NodeBehaviour, draw_now
from netemu.rng import Streams
from netemu.scenario.load import LATENCY_MODELS, LOSS_MODELS, Scenario, match_nodes
from netemu.world import World

__all__ = ["build_graph", "build_links", "build_world", "load_script", "run_seed", "topology_for_validation"]


def run_seed(seed: int, run: int) -> int:
    """The root seed of Monte Carlo run `run` (run 0 uses `seed` itself)."""
    if run == 0:
        return seed
    digest = hashlib.blake2b(f"netemu-run/{seed}/{run}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def build_graph(sc: Scenario, streams: Streams) -> nx.DiGraph:
    topo = sc.table["topology"]
    kind = topo["kind"]
    if kind == "star":
        return T.star(topo["clients"])
    if kind == "multi_server":
        n = topo["servers"]
        degree = min(topo["server_degree"], n - 1)
        return T.multi_server(T.random_connected_graph(n, degree, streams.generator("topology")), topo["clients_per_server"])
    if kind == "random_peers":
        return T.random_peers(topo["peers"], topo["avg_degree"], streams.generator("topology"))
    if kind == "geometric":
        return T.geometric(topo["positions"], topo["d_max"])
    return T.from_graphml(sc.resolve(topo["file"]))


def topology_for_validation(sc: Scenario) -> nx.DiGraph:
    return build_graph(sc, Streams(sc.table["run"]["seed"]))


def _component(table: dict | None, registry: dict, sc: Scenario) -> Any:
    if not table:
        return None
    params = {k: v for k, v in table.items() if k != "model"}
    cls = registry[table["model"]]
    if cls is L.Empirical and "file" in params:
        return L.Empirical.from_file(sc.resolve(params["file"]))
    return cls(**params)


def devices_of(sc: Scenario, graph: nx.DiGraph) -> dict[str, dict]:
    """The device of each client (i-th client, in topology order, gets device i mod n)."""
    if not sc.table["devices"]["file"]:
        return {}
    devices = read_devices(sc.resolve(sc.table["devices"]["file"]))["devices"]
    clients = [n for n, r in graph.nodes(data="role") if r == "client"]
    return {c: devices[i % len(devices)] for i, c in enumerate(clients)}


def build_links(sc: Scenario, graph: nx.DiGraph) -> dict[tuple[str, str], L.Link]:
    """A fresh Link per edge (components may carry state): its class's table, then overrides;
    with a devices file, a client's links take the device's bandwidth."""
    overrides = {(o["src"], o["dst"]): o for o in sc.table["link"]}
    devices = devices_of(sc, graph) if sc.table["devices"]["bandwidth"] else {}
    out = {}
    for u, v, cls in graph.edges(data="link_class"):
        table = {**sc.table["links"].get(cls, {}), **{k: x for k, x in overrides.get((u, v), {}).items() if k not in ("src", "dst")}}
        jitter = table.get("jitter")
        out[(u, v)] = L.Link(
            _component(table.get("latency"), LATENCY_MODELS, sc),
            jitter=L.Jitter(**jitter) if jitter else None,
            loss=_component(table.get("loss"), LOSS_MODELS, sc),
            bandwidth=next((devices[n]["bandwidth"] for n in (u, v) if "bandwidth" in devices.get(n, {})), None)
            or table.get("bandwidth")
            or None,
            outages=[tuple(w) for w in table.get("outages", [])],
            link_class=cls,
        )
    return out


def build_behaviours(sc: Scenario, graph: nx.DiGraph) -> dict[str, NodeBehaviour]:
    nodes = sc.table["nodes"]
    keys = ("participation", "speed", "slowdown_sigma")
    settings = {n: {k: nodes[k] for k in keys} for n in graph.nodes}
    for group in nodes["group"]:  # later groups win
        for pattern in group["members"]:
            for n in match_nodes(pattern, list(graph.nodes)):
                settings[n] = {k: group[k] for k in keys}
    crashes: dict[str, list] = {}
    for name, device in devices_of(sc, graph).items():  # online intervals: attach_devices in build_world
        if "speed" in device:
            settings[name]["speed"] = device["speed"]
    for c in nodes["crash"]:
        crashes.setdefault(c["node"], []).append((c["at"], c["recover"] if c["recover"] >= 0 else None))
    return {n: NodeBehaviour(**s, crashes=tuple(crashes.get(n, ()))) for n, s in settings.items()}


def load_script(path: Path) -> Callable[[World], None]:
    """The `setup(world)` function of a Python scenario script."""
    spec = importlib.util.spec_from_file_location(f"netemu_scenario_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    setup = getattr(module, "setup", None)
    if not callable(setup):
        raise ValueError(f"{path}: a scenario script must define `def setup(world):`")
    return setup


def build_data(sc: Scenario, graph: nx.DiGraph, streams: Streams) -> Any:
    params_cls, make = DATASETS[sc.table["data"]["kind"]]
    params = params_cls(**{k: v for k, v in sc.table["data"].items() if k != "kind"})
    if hasattr(params, "with_paths"):  # file names in the scenario are relative to it
        params = params.with_paths(lambda p: str(sc.resolve(p)))
    clients = [n for n, r in graph.nodes(data="role") if r != "server"]
    return make(params, clients, streams)


def build_world(
    sc: Scenario,
    algorithm: int,
    run: int,
    *,
    log: MessageLog | None = None,
    fates: Fates = draw_now,
    setup: Callable[[World], None] | None = None,
) -> World:
    """The World of Monte Carlo run `run` for algorithm entry `algorithm`, with its actors."""
    streams = Streams(run_seed(sc.table["run"]["seed"], run))
    graph = build_graph(sc, streams)
    world = World(
        graph,
        seed=streams.seed,
        links=build_links(sc, graph),
        behaviours=build_behaviours(sc, graph),
        log=log,
        fates=fates,
    )
    if sc.table["devices"]["file"]:  # offline outside each device's online intervals (periodic traces repeat)
        attach_devices(world, devices_of(sc, graph), str(sc.resolve(sc.table["devices"]["file"])))
    entry = sc.table["algorithm"][algorithm]
    spec = ALGORITHMS[entry["name"]]
    params = spec.make_params({k: v for k, v in entry.items() if k not in ("name", "label")})
    spec.build(world, params, build_data(sc, graph, streams), sc.table["run"]["rounds"])
    if setup is not None:
        setup(world)
    return world
