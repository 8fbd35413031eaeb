"""The plug-in side of a scenario: `[data]`, `[task]` and `[[algorithm]]` tables looked up in the
registry (or "package.module:attribute"), their parameters typed from the spec's params
dataclass and range-checked by constructing it, and the checks between algorithms, task and data."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any

from netemu import plugins
from netemu.algorithms.base import AlgorithmSpec
from netemu.config import ConfigError
from netemu.data.base import DataSpec
from netemu.tasks.base import TaskSpec
from netemu.scenario.schema import REQUIRED, Field, Issues, Section, validate

__all__ = ["DEFAULT_TASKS", "algorithm_params", "algorithm_table", "check_algorithms", "construct", "data_table", "named_task", "task_name", "task_params", "task_table"]

#: the task a task-learning algorithm gets when the scenario has no [task] table, by data kind
DEFAULT_TASKS = {"linear": "linear", "classification": "softmax", "digits_fl": "softmax"}


def _params_of(cls: type, defaults: dict | None = None) -> dict[str, Field]:
    """Fields of a frozen params dataclass as schema fields (type from the annotation)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        t = hints[f.name]
        args = [a for a in typing.get_args(t) if a is not type(None)]
        if type(None) in typing.get_args(t) and len(args) == 1:  # `X | None`: an X, or unset (None resolves to nothing)
            t = args[0]
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


def named(value: Any, key: str, issues: Issues, selector: str, what: str, kind: type, label: str) -> Any:
    """What the table `value` names under `selector` (e.g. ``[data] kind = "linear"``): a name
    registered as a `what` (netemu.plugins), or a "package.module:attribute" holding a `kind`.
    None if nothing, reported at the key with what is accepted (`label` says what it names)."""
    a = "an" if label[0] in "aeiou" else "a"
    if not isinstance(value, dict):
        issues.add(key, value, f"expected a table {{{selector} = ..., <parameters>}} naming {a} {label}: {plugins.registry().unknown(what, '')}")
        return None
    name = value.get(selector, REQUIRED)
    where = f"{key}.{selector}"
    if isinstance(name, str) and ":" in name:
        try:
            return plugins.resolve(name, kind)
        except plugins.PluginError as exc:
            issues.add(where, name, f"an importable \"package.module:attribute\" naming {a} {label}: {exc}")
            return None
    found = plugins.registered(what, name) if isinstance(name, str) else None
    if found is None:
        issues.add(where, name, plugins.registry().unknown(what, name if isinstance(name, str) else ""))
    return found


def data_table(value: Any, key: str, issues: Issues) -> Any:
    spec = named(value, key, issues, "kind", "data", DataSpec, "data kind")
    if spec is None:
        return value
    return _params_table(value, key, issues, spec.params, {"kind": Field(str)})


def named_task(raw: dict) -> dict:
    """`raw` with a [task] table that names no task given its data kind's default (DEFAULT_TASKS),
    so that `[task] lr = 0.1` (or `--set task.lr=0.1`) tunes the default task."""
    task, data = raw.get("task"), raw.get("data")
    if not (isinstance(task, dict) and "name" not in task and isinstance(data, dict) and isinstance(data.get("kind"), str)):
        return raw
    try:
        kind = plugins.data_kind(data["kind"]).name
    except plugins.PluginError:
        return raw  # the unknown kind is reported at data.kind
    return {**raw, "task": {"name": DEFAULT_TASKS[kind], **task}} if kind in DEFAULT_TASKS else raw


def task_table(value: Any, key: str, issues: Issues) -> Any:
    spec = named(value, key, issues, "name", "task", TaskSpec, "task")
    if spec is None:
        return value
    return _params_table(value, key, issues, spec.params, {"name": Field(str)})


def algorithm_table(value: Any, key: str, issues: Issues) -> Any:
    spec = named(value, key, issues, "name", "algorithm", AlgorithmSpec, "algorithm")
    if not isinstance(spec, AlgorithmSpec):
        return value
    moved = [k for k in value if k in spec.moved]
    for k in moved:
        issues.add(f"{key}.{k}", value[k], f"moved to {spec.moved[k]}: {spec.name}'s model and local training are the task's ([task] table)")
    value = {k: v for k, v in value.items() if k not in moved}
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
    _check_task(table, specs, issues)
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


def task_name(table: dict) -> str | None:
    """The task the scenario's task-learning algorithms learn: [task] name, or its data kind's default."""
    if table.get("task"):
        return table["task"]["name"]
    return DEFAULT_TASKS.get(plugins.data_kind(table["data"]["kind"]).name) if table.get("data") else None


def task_params(table: dict) -> Any:
    """The params of the task the scenario's task-learning algorithms learn (its `[task]` keys, or
    its data kind's default task's defaults); None when there is none or they cannot be built."""
    try:
        name = task_name(table)
        if name is None:
            return None
        return plugins.task(name).params(**{k: v for k, v in (table.get("task") or {}).items() if k != "name"})
    except (plugins.PluginError, ConfigError, TypeError, ValueError):
        return None


def _check_task(table: dict, specs: list[AlgorithmSpec], issues: Issues) -> None:
    """A task where an algorithm learns one, of a kind that learns the data; none where no algorithm does."""
    learners = [i for i, spec in enumerate(specs) if spec.task]
    for i, (alg, spec) in enumerate(zip(table["algorithm"], specs)):
        if table.get("task") and not spec.task:
            issues.add(f"algorithm[{i}].name", alg["name"], f"an algorithm that learns task {table['task']['name']!r} ({alg['name']} fixes "
                       f"its own model and training, its paper's: drop the [task] table, or compare it in a scenario of its own)")
    if not learners or table["data"] is None:
        return
    for i in learners:
        if specs[i].task_table and not table.get("task"):
            issues.add("task", REQUIRED, f"required: algorithm[{i}] = {table['algorithm'][i]['name']!r} learns the [task] "
                       f"table's model and training, and has no default one ({specs[i].task_table})")
            return
    name = task_name(table)
    kind = plugins.data_kind(table["data"]["kind"]).name
    if name is None:
        issues.add("task", REQUIRED, f"required: algorithm[{learners[0]}] = {table['algorithm'][learners[0]]['name']!r} learns a task, "
                   f"and data.kind = {kind!r} has no default one (a [task] table with a name: {', '.join(plugins.registry().tasks)})")
        return
    for i in learners:
        accepts = specs[i].tasks
        if accepts and name not in accepts:
            issues.add("task.name" if table.get("task") else "data.kind", name if table.get("task") else kind,
                       f"a task algorithm[{i}] = {table['algorithm'][i]['name']!r} accepts: {' | '.join(accepts)} "
                       f"(it cannot run task {name!r})")
    task = plugins.task(name)
    if task.datasets and kind not in task.datasets:
        issues.add("task.name" if table.get("task") else "data.kind", name if table.get("task") else kind,
                   f"a task for data.kind = {kind!r} (task {task.name!r} learns data.kind = {' | '.join(task.datasets)})")
    on = (table.get("task") or {}).get("evaluate_on", "server")
    if on != "server" and kind == "classification" and not table["data"].get("client_test"):
        issues.add("task.evaluate_on", on, '"server": the clients hold no test splits (set data.client_test > 0 for "clients" or "both")')
