"""One registry of algorithms, data kinds, link models and topologies, loaded from Python entry points.

Built-in ones and users' packages register the same way, in their pyproject.toml:

    [project.entry-points."netemu.algorithms"]
    fedasync = "netemu_fedasync:SPEC"          # an AlgorithmSpec, or a list of them

    [project.entry-points."netemu.data"]
    mydata = "mypackage.data:SPEC"              # a DataSpec

    [project.entry-points."netemu.tasks"]
    mytask = "mypackage.task:SPEC"              # a TaskSpec (model, local training, evaluation)

    [project.entry-points."netemu.links"]
    spiky = "mypackage.links:Spiky"             # a Latency or Loss subclass, named by the entry point,
    mylinks = "mypackage.links:MODELS"          # or a dict of them by name

    [project.entry-points."netemu.topologies"]
    ring = "mypackage.topo:RING"                # a TopologySpec, or a list of them

A scenario names any of them by its registered name, or directly as
`"package.module:attribute"` (an importable object; no installation needed).  A plug-in
that fails to load does not stop netemu: it is reported (entry point and exception) by
`netemu algorithms` and in the error of any scenario that names an unknown one.
The registry is read once per process (`registry()`); `refresh()` reads it again.  A built-in
name is looked up among netemu's own entry points alone (`builtin()`, `registered`): every other
installed distribution's metadata is read only for a name that is not built in, or a listing.
netemu's own entry points are read from its source tree's pyproject.toml when it runs from
one (an editable install whose metadata predates the tree, or PYTHONPATH pointing at a
checkout), else from the installed metadata like any plug-in's.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netemu.algorithms.base import RETIRED, AlgorithmSpec
from netemu.data.base import DataSpec
from netemu.errors import InputError
from netemu.engine.net.impairments import Latency, Loss
from netemu.tasks.base import TaskSpec

if TYPE_CHECKING:
    import networkx as nx

    from netemu.engine.rng import Streams
    from netemu.scenario.schema import Issues

__all__ = [
    "ALGORITHM_GROUP", "DATA_GROUP", "LINK_GROUP", "TASK_GROUP", "TOPOLOGY_GROUP", "PluginError", "Registry", "TopologySpec", "algorithm",
    "builtin", "data_kind", "latency_model", "loss_model", "refresh", "registered", "registry", "resolve", "task", "topology",
]

ALGORITHM_GROUP = "netemu.algorithms"
DATA_GROUP = "netemu.data"
TASK_GROUP = "netemu.tasks"
LINK_GROUP = "netemu.links"
TOPOLOGY_GROUP = "netemu.topologies"


@dataclass(frozen=True)
class TopologySpec:
    """A topology builder: `[topology] kind = name` and its other keys.

    `fields`: each accepted key's schema spec (netemu.scenario.schema.Field: type, default,
    range); `build(params, streams)`: the graph (networkx DiGraph, nodes with a `role`, edges
    with a `link_class`; netemu.engine.net.topology has helpers), from the validated keys and the
    run's streams (take randomness from `streams.generator(...)`, so that a run's topology is
    its seed's).  `paths`: keys that are files, handed to `build` resolved against the
    scenario's folder.  `check(params, key, issues)`: checks beyond each field's own, run
    when every field is fine (report with `issues.add(dotted key, value, what is accepted)`).
    """

    name: str
    fields: Mapping[str, Any]
    build: Callable[[dict, Streams], nx.DiGraph]
    doc: str = ""
    paths: tuple[str, ...] = ()
    check: Callable[[dict, str, Issues], None] | None = None


class PluginError(InputError):
    """A plug-in that cannot be loaded or used, or a name that resolves to nothing usable."""


@dataclass(frozen=True)
class Registry:
    """Algorithms, data kinds, latency and loss models (classes) and topologies by name, where
    each came from (`origin[(what, name)]`: the entry point), and the plug-ins that failed to
    load (`broken`: one line each)."""

    algorithms: dict[str, AlgorithmSpec] = field(default_factory=dict)
    data: dict[str, DataSpec] = field(default_factory=dict)
    tasks: dict[str, TaskSpec] = field(default_factory=dict)
    latency: dict[str, type[Latency]] = field(default_factory=dict)
    loss: dict[str, type[Loss]] = field(default_factory=dict)
    topologies: dict[str, TopologySpec] = field(default_factory=dict)
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    broken: list[str] = field(default_factory=list)

    def names(self, what: str) -> dict[str, Any]:
        """The table of `what`: "algorithm", "data", "task", "latency", "loss" or "topology"."""
        tables: dict[str, dict[str, Any]] = {"algorithm": self.algorithms, "data": self.data, "task": self.tasks, "latency": self.latency,
                                             "loss": self.loss, "topology": self.topologies}
        return tables[what]

    def unknown(self, what: str, name: str) -> str:
        """What is accepted in place of an unknown name (and which plug-ins failed to load); a
        retired algorithm name says what replaced it (`netemu.algorithms.base.RETIRED`)."""
        if what == "algorithm" and name in RETIRED and name not in self.names(what):
            return RETIRED[name]
        accepts = f"one of {', '.join(self.names(what))}, or \"package.module:attribute\""
        if self.broken:
            accepts += "; plug-ins that failed to load: " + "; ".join(self.broken)
        return accepts


_KIND_NAMES = {Latency: "netemu.engine.net.impairments.Latency", Loss: "netemu.engine.net.impairments.Loss"}


def _check(obj: Any, kind: type, where: str) -> None:
    """That `obj` is a `kind` (a spec), or for Latency and Loss a subclass of it."""
    spec: Any = obj
    if kind in _KIND_NAMES:
        if not (isinstance(obj, type) and issubclass(obj, kind)):
            raise PluginError(f"{where}: expected a subclass of {_KIND_NAMES[kind]}, got {_described(obj)}")
        return
    if not isinstance(obj, kind):
        raise PluginError(f"{where}: expected a {kind.__name__} (or a list of them), got {type(obj).__name__}")
    if kind is TopologySpec:
        if not (isinstance(spec.fields, Mapping) and callable(spec.build)):
            raise PluginError(f"{where}: topology {spec.name!r} needs a mapping of its fields and a callable build(params, streams)")
        return
    if not (isinstance(spec.params, type) and dataclasses.is_dataclass(spec.params)):
        raise PluginError(f"{where}: {spec.name!r}.params must be a dataclass of its parameters, got {spec.params!r}")


def _described(obj: Any) -> str:
    return f"the class {obj.__name__}" if isinstance(obj, type) else type(obj).__name__


def _components(obj: Any, name: str, where: str) -> list[tuple[str, str, type]]:
    """(what, name, class) of a netemu.links entry point: a Latency or Loss subclass named by
    the entry point, or a dict of them by name."""
    items = obj.items() if isinstance(obj, dict) else [(name, obj)]
    out: list[tuple[str, str, type]] = []
    for key, cls in items:
        if isinstance(cls, type) and issubclass(cls, Latency):
            out.append(("latency model", str(key), cls))
        elif isinstance(cls, type) and issubclass(cls, Loss):
            out.append(("loss model", str(key), cls))
        else:
            raise PluginError(f"{where}: expected a subclass of {_KIND_NAMES[Latency]} or {_KIND_NAMES[Loss]} "
                              f"(or a dict of them by name), got {_described(cls)}" + (f" for {key!r}" if isinstance(obj, dict) else ""))
    return out


def _specs(obj: Any, kind: type, where: str) -> list:
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    for item in items:
        _check(item, kind, where)
    return items


def _add(reg: Registry, what: str, names: dict, specs: Iterable, where: str) -> None:
    for spec in specs:
        _add_named(reg, what, names, spec.name, spec, where)


def _add_named(reg: Registry, what: str, names: dict, name: str, obj: Any, where: str) -> None:
    if name in names:
        reg.broken.append(f"{where}: {what} {name!r} is already registered by {reg.origin[(what, name)]}")
        return
    names[name] = obj
    reg.origin[(what, name)] = where


def _load(ep: EntryPoint) -> Any:
    try:
        return ep.load()
    except Exception as exc:  # noqa: BLE001 - any failure of a plug-in's import is reported, not raised
        raise PluginError(f"entry point {ep.name} = {ep.value!r} ({ep.group}): {type(exc).__name__}: {exc}") from None


def _own_declared() -> dict[str, list[EntryPoint]] | None:
    """netemu's own entry points by group, as the pyproject.toml of the source tree this
    package is imported from declares them (None when it is not imported from one)."""
    path = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        project = tomllib.loads(path.read_text())["project"]
    except (OSError, KeyError, TypeError, ValueError):  # no source tree (an installed wheel), or not ours
        return None
    if not isinstance(project, dict) or project.get("name") != "netemu":
        return None
    groups = project.get("entry-points", {})
    return {group: [EntryPoint(name, value, group) for name, value in eps.items()] for group, eps in groups.items()}


def _builtin_first(ep: EntryPoint) -> tuple[bool, str]:
    """The order entry points are loaded in: netemu's own first (so no plug-in takes a built-in name), then by name."""
    return not ep.value.startswith("netemu."), ep.name


def _installed_own() -> dict[str, list[EntryPoint]]:
    """netemu's own entry points by group, from the installed distribution's metadata (the one
    `entry_points()` would take: the first on sys.path)."""
    try:
        eps = distribution("netemu").entry_points
    except PackageNotFoundError:
        return {}
    groups: dict[str, list[EntryPoint]] = {}
    for ep in eps:
        groups.setdefault(ep.group, []).append(ep)
    return groups


def _entry_points(declared: dict[str, list[EntryPoint]] | None) -> dict[str, list[EntryPoint]]:
    """Every group's entry points, netemu's own first (a plug-in cannot take a built-in name):
    one scan of the installed distributions for all groups, each distribution's name read once."""
    found = entry_points()
    names: dict[int, str] = {}  # id(dist) -> its name (dist.name parses its METADATA on every call)

    def own(ep: EntryPoint) -> bool:
        dist = getattr(ep, "dist", None)
        if dist is None:
            return ep.value.startswith("netemu.")
        if id(dist) not in names:
            names[id(dist)] = dist.name
        return names[id(dist)] == "netemu"

    out = {}
    for group in _GROUPS:
        eps = list(found.select(group=group))
        if declared is not None:
            eps = [ep for ep in eps if not own(ep)] + declared.get(group, [])
        out[group] = sorted(eps, key=_builtin_first)
    return out


_SPEC_GROUPS: tuple[tuple[str, str, type, str], ...] = (
    (ALGORITHM_GROUP, "algorithm", AlgorithmSpec, "algorithms"), (DATA_GROUP, "data kind", DataSpec, "data"),
    (TASK_GROUP, "task", TaskSpec, "tasks"),
    (TOPOLOGY_GROUP, "topology", TopologySpec, "topologies"),
)


_GROUPS = (ALGORITHM_GROUP, DATA_GROUP, TASK_GROUP, LINK_GROUP, TOPOLOGY_GROUP)


@functools.cache
def registry() -> Registry:
    """Every algorithm, data kind, link model and topology registered by installed packages
    (netemu's own included)."""
    return _read(_entry_points(_own_declared()), complain=True)


@functools.cache
def builtin() -> Registry:
    """netemu's own algorithms, data kinds, link models and topologies alone, as `registry()` has
    them (they are loaded first there, so no plug-in takes their names), read without scanning
    every installed distribution's metadata for entry points: ~0.1 s of CPU at every `netemu run`."""
    declared = _own_declared()
    own = declared if declared is not None else _installed_own()
    return _read({group: sorted(own.get(group, []), key=_builtin_first) for group in _GROUPS},
                 complain=False)


def _read(groups: dict[str, list[EntryPoint]], *, complain: bool) -> Registry:
    """A registry of the entry points `groups`, in their order; `complain`: a group without one
    of netemu's own is reported as a broken install."""
    reg = Registry()
    for group in _GROUPS:
        own = False
        for ep in groups[group]:
            where = f"entry point {ep.name} = {ep.value!r} ({group})"
            before = len(reg.origin)
            try:
                obj = _load(ep)
                if group == LINK_GROUP:
                    for what, name, cls in _components(obj, ep.name, where):
                        _add_named(reg, what, reg.latency if what == "latency model" else reg.loss, name, cls, where)
                else:
                    _, what, kind, table = next(g for g in _SPEC_GROUPS if g[0] == group)
                    _add(reg, what, getattr(reg, table), _specs(obj, kind, where), where)
            except PluginError as exc:
                reg.broken.append(str(exc))
            own = own or (ep.value.startswith("netemu.") and len(reg.origin) > before)
        if complain and not own:
            reg.broken.append(f"netemu's own {group} entry points are not installed: reinstall netemu (pip install -e .)")
    return reg


def refresh() -> Registry:
    """Read the entry points again (after installing a plug-in into a running process)."""
    registry.cache_clear()
    builtin.cache_clear()
    return registry()


def registered(what: str, name: str) -> Any:
    """What is registered as `name` in the table `what` ("algorithm", "data", "task", "latency",
    "loss" or "topology"), None if nothing: a built-in from `builtin()`, anything else from `registry()`."""
    own = builtin().names(what)
    if name in own:
        return own[name]
    return registry().names(what).get(name)


def resolve(reference: str, kind: type) -> Any:
    """The object named by `"package.module:attribute"` (dotted attributes allowed), checked to be a `kind`."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise PluginError(f"{reference!r}: expected \"package.module:attribute\"")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # noqa: BLE001 - the user's module may fail in any way
        raise PluginError(f"{reference!r} cannot be loaded: {type(exc).__name__}: {exc}") from None
    _check(obj, kind, repr(reference))
    return obj


def _named(what: str, name: str, kind: type, label: str) -> Any:
    """The `what` ("algorithm", "data", ...) registered as `name`, or named by "package.module:attribute"."""
    if ":" in name:
        return resolve(name, kind)
    found = registered(what, name)
    if found is None:
        raise PluginError(f"unknown {label} {name!r}: {registry().unknown(what, name)}")
    return found


def algorithm(name: str) -> AlgorithmSpec:
    """The algorithm registered as `name`, or named by `"package.module:attribute"`."""
    return _named("algorithm", name, AlgorithmSpec, "algorithm")


def data_kind(name: str) -> DataSpec:
    """The data kind registered as `name`, or named by `"package.module:attribute"`."""
    return _named("data", name, DataSpec, "data kind")


def task(name: str) -> TaskSpec:
    """The task registered as `name`, or named by `"package.module:attribute"`."""
    return _named("task", name, TaskSpec, "task")


def latency_model(name: str) -> type[Latency]:
    """The latency model (a Latency subclass) registered as `name`, or named by `"package.module:attribute"`."""
    return _named("latency", name, Latency, "latency model")


def loss_model(name: str) -> type[Loss]:
    """The loss model (a Loss subclass) registered as `name`, or named by `"package.module:attribute"`."""
    return _named("loss", name, Loss, "loss model")


def topology(name: str) -> TopologySpec:
    """The topology registered as `name`, or named by `"package.module:attribute"`."""
    return _named("topology", name, TopologySpec, "topology")
