"""The plug-in side of a scenario: `[data]` and `[[algorithm]]` tables looked up in the
registry (or "package.module:attribute"), their parameters typed from the spec's params
dataclass and range-checked by constructing it, and the checks between algorithms and data."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any

from netemu import plugins
from netemu.algorithms.base import AlgorithmSpec
from netemu.config import ConfigError
from netemu.data.base import DataSpec
from netemu.scenario.schema import REQUIRED, Field, Issues, Section, validate

__all__ = ["algorithm_params", "algorithm_table", "check_algorithms", "construct", "data_table"]


def _params_of(cls: type, defaults: dict | None = None) -> dict[str, Field]:
    """Fields of a frozen params dataclass as schema fields (type from the annotation)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        t = hints[f.name]
        types = t if t in (bool, int, float, str) else (list, dict, str, float, int)
        default = (defaults or {}).get(f.name, f.default)
        factory: Any = f.default_factory
        if default is dataclasses.MISSING and factory is not dataclasses.MISSING:  # e.g. field(default_factory=dict)
            default = factory()
        out[f.name] = Field(types, default if default is not dataclasses.MISSING else REQUIRED)
    return out


def construct(cls: type, values: dict, key: str, issues: Issues) -> None:
    """Let the class check its own ranges; report a refusal at the right dotted key."""
    try:
        cls(**values)
    except ConfigError as exc:
        issues.add(f"{key}.{exc.field}", values.get(exc.field), exc.accepts)
    except (ValueError, TypeError) as exc:
        issues.add(key, values, str(exc))


def _params_table(value: dict, key: str, issues: Issues, cls: type, fixed: dict, defaults: dict | None = None) -> Any:
    """A table of `cls` parameters beside the `fixed` keys; `cls` checks its own ranges."""
    before = len(issues.items)
    resolved = validate(Section({**fixed, **_params_of(cls, defaults)}), value, key, issues)
    if isinstance(resolved, dict) and len(issues.items) == before:  # types fine: let the class check ranges
        construct(cls, {k: v for k, v in resolved.items() if k not in fixed}, key, issues)
    return resolved


def _lookup(value: Any, key: str, issues: Issues, selector: str, what: str) -> Any:
    """The spec a `name` / `kind` names (registered, or "package.module:attribute"); reports it if none."""
    reg = plugins.registry()
    if not isinstance(value, dict) or not isinstance(value.get(selector), str):
        got = value.get(selector, REQUIRED) if isinstance(value, dict) else value
        issues.add(f"{key}.{selector}" if isinstance(value, dict) else key, got, reg.unknown(what, ""))
        return None
    name = value[selector]
    kind = AlgorithmSpec if what == "algorithm" else DataSpec
    if ":" in name:
        try:
            return plugins.resolve(name, kind)
        except plugins.PluginError as exc:
            issues.add(f"{key}.{selector}", name, f"an importable \"package.module:attribute\" naming a {kind.__name__}: {exc}")
            return None
    specs = reg.algorithms if what == "algorithm" else reg.data
    if name not in specs:
        issues.add(f"{key}.{selector}", name, reg.unknown(what, name))
        return None
    return specs[name]


def data_table(value: Any, key: str, issues: Issues) -> Any:
    spec = _lookup(value, key, issues, "kind", "data")
    if spec is None:
        return value
    return _params_table(value, key, issues, spec.params, {"kind": Field(str)})


def algorithm_table(value: Any, key: str, issues: Issues) -> Any:
    spec = _lookup(value, key, issues, "name", "algorithm")
    if not isinstance(spec, AlgorithmSpec):
        return value
    fixed = {"name": Field(str), "label": Field(str, value["name"] if ":" not in value["name"] else spec.name)}
    return _params_table(value, key, issues, spec.params, fixed, spec.defaults)


def algorithm_params(spec: AlgorithmSpec, values: dict, resolve: Callable[[str], str]) -> Any:
    """`spec`'s params constructed from an entry's `values` (without `name` and `label`), with
    the paths they hold (e.g. a Flower `app_dir`) resolved by `resolve` (relative to the
    scenario file): params that have a `with_paths(resolve)` method, like the data specs, get it called."""
    params = spec.make_params(values)
    return params.with_paths(resolve) if hasattr(params, "with_paths") else params


def check_algorithms(table: dict, specs: list[AlgorithmSpec], resolve: Callable[[str], str], issues: Issues) -> dict[int, Any]:
    """The checks between the algorithms, their plug-in specs and the data: each entry's params
    constructed (with paths `resolve`d, e.g. a Flower app_dir), data present where an algorithm
    learns it and of a kind it learns, labels unique.  Returns the params that could be built."""
    params: dict[int, Any] = {}
    for i, (alg, spec) in enumerate(zip(table["algorithm"], specs)):
        try:  # the checks that need the scenario's paths (a Flower app_dir relative to the file)
            params[i] = algorithm_params(spec, {k: v for k, v in alg.items() if k not in ("name", "label")}, resolve)
        except ConfigError as exc:
            issues.add(f"algorithm[{i}].{exc.field}", alg.get(exc.field), exc.accepts)
    if table["data"] is None:
        for i, (alg, spec) in enumerate(zip(table["algorithm"], specs)):
            if spec.needs_data:
                issues.add("data", REQUIRED, f"required: algorithm[{i}] = {alg['name']!r} learns the scenario's data "
                           "(a [data] table with a kind)")
                break
    kind = plugins.data_kind(table["data"]["kind"]).name if table["data"] else None  # a "module:attribute" kind goes by its spec's name
    for i, (alg, spec) in enumerate(zip(table["algorithm"], specs)):
        if kind is not None and spec.datasets and kind not in spec.datasets:
            issues.add(f"algorithm[{i}].name", alg["name"], f"an algorithm for data.kind = {table['data']['kind']!r} "
                       f"({alg['name']} learns data.kind = {' | '.join(spec.datasets)})")
    labels = [a["label"] for a in table["algorithm"]]
    for label in {x for x in labels if labels.count(x) > 1}:
        issues.add("algorithm", label, "unique labels: give compared variants a distinct `label`")
    return params


def data_features(table: dict, resolve: Callable[[str], str]) -> int | None:
    """The data's feature count from its files' headers, when its kind's params can say
    (a `features()` method, paths resolved by `resolve`); None when they cannot, when there
    is no [data] table, or when the table or a file is bad (their own checks report that)."""
    data = table["data"]
    if not data:
        return None
    try:
        params = plugins.data_kind(data["kind"]).params(**{k: v for k, v in data.items() if k != "kind"})
        if hasattr(params, "with_paths"):
            params = params.with_paths(resolve)
        return params.features() if hasattr(params, "features") else None
    except (ValueError, OSError, TypeError):
        return None
