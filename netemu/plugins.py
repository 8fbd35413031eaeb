"""One registry of algorithms and data kinds, loaded from Python entry points.

Built-in families and users' packages register the same way, in their pyproject.toml:

    [project.entry-points."netemu.algorithms"]
    fedasync = "netemu_fedasync:SPEC"          # an AlgorithmSpec, or a list of them

    [project.entry-points."netemu.data"]
    mydata = "mypackage.data:SPEC"              # a DataSpec

A scenario names an algorithm or data kind by its registered name, or directly as
`"package.module:attribute"` (an importable object; no installation needed).  A plug-in
that fails to load does not stop netemu: it is reported (entry point and exception) by
`netemu algorithms` and in the error of any scenario that names an unknown algorithm.
The registry is read once per process (`registry()`); `refresh()` reads it again.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from netemu.algorithms.base import AlgorithmSpec
from netemu.data.base import DataSpec
from netemu.errors import InputError

__all__ = [
    "ALGORITHM_GROUP", "DATA_GROUP", "PluginError", "Registry", "algorithm", "data_kind", "refresh", "registry", "resolve",
]

ALGORITHM_GROUP = "netemu.algorithms"
DATA_GROUP = "netemu.data"


class PluginError(InputError):
    """A plug-in that cannot be loaded or used, or a name that resolves to nothing usable."""


@dataclass(frozen=True)
class Registry:
    """Algorithms and data kinds by name, where each came from (`origin`: the entry point
    or "module:attribute"), and the plug-ins that failed to load (`broken`: one line each)."""

    algorithms: dict[str, AlgorithmSpec] = field(default_factory=dict)
    data: dict[str, DataSpec] = field(default_factory=dict)
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    broken: list[str] = field(default_factory=list)

    def unknown(self, what: str, name: str) -> str:
        """What is accepted in place of an unknown name (and which plug-ins failed to load)."""
        names = self.algorithms if what == "algorithm" else self.data
        accepts = f"one of {', '.join(names)}, or \"package.module:attribute\""
        if self.broken:
            accepts += "; plug-ins that failed to load: " + "; ".join(self.broken)
        return accepts


def _check(obj: Any, kind: type[AlgorithmSpec] | type[DataSpec], where: str) -> None:
    if not isinstance(obj, kind):
        raise PluginError(f"{where}: expected a {kind.__name__} (or a list of them), got {type(obj).__name__}")
    if not (isinstance(obj.params, type) and dataclasses.is_dataclass(obj.params)):
        raise PluginError(f"{where}: {obj.name!r}.params must be a dataclass of its parameters, got {obj.params!r}")


def _specs(obj: Any, kind: type, where: str) -> list:
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    for item in items:
        _check(item, kind, where)
    return items


def _add(reg: Registry, what: str, names: dict, specs: Iterable, where: str) -> None:
    for spec in specs:
        if spec.name in names:
            reg.broken.append(f"{where}: {what} {spec.name!r} is already registered by {reg.origin[(what, spec.name)]}")
            continue
        names[spec.name] = spec
        reg.origin[(what, spec.name)] = where


def _load(ep: EntryPoint) -> Any:
    try:
        return ep.load()
    except Exception as exc:  # noqa: BLE001 - any failure of a plug-in's import is reported, not raised
        raise PluginError(f"entry point {ep.name} = {ep.value!r} ({ep.group}): {type(exc).__name__}: {exc}") from None


@functools.cache
def registry() -> Registry:
    """Every algorithm and data kind registered by installed packages (netemu's own included)."""
    reg = Registry()
    for group, what, kind, names in ((ALGORITHM_GROUP, "algorithm", AlgorithmSpec, reg.algorithms),
                                     (DATA_GROUP, "data kind", DataSpec, reg.data)):
        for ep in sorted(entry_points(group=group), key=lambda e: (not e.value.startswith("netemu."), e.name)):
            where = f"entry point {ep.name} = {ep.value!r} ({group})"
            try:
                _add(reg, what, names, _specs(_load(ep), kind, where), where)
            except PluginError as exc:
                reg.broken.append(str(exc))
        if not any(w == what and "= 'netemu." in origin for (w, _), origin in reg.origin.items()):
            reg.broken.append(f"netemu's own {group} entry points are not installed: reinstall netemu (pip install -e .)")
    return reg


def refresh() -> Registry:
    """Read the entry points again (after installing a plug-in into a running process)."""
    registry.cache_clear()
    return registry()


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


def algorithm(name: str) -> AlgorithmSpec:
    """The algorithm registered as `name`, or named by `"package.module:attribute"`."""
    if ":" in name:
        return resolve(name, AlgorithmSpec)
    reg = registry()
    if name not in reg.algorithms:
        raise PluginError(f"unknown algorithm {name!r}: {reg.unknown('algorithm', name)}")
    return reg.algorithms[name]


def data_kind(name: str) -> DataSpec:
    """The data kind registered as `name`, or named by `"package.module:attribute"`."""
    if ":" in name:
        return resolve(name, DataSpec)
    reg = registry()
    if name not in reg.data:
        raise PluginError(f"unknown data kind {name!r}: {reg.unknown('data', name)}")
    return reg.data[name]
