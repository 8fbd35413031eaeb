"""A small declarative schema for scenario files, reporting every problem at once.

A spec is a `Section` (fixed keys), a `Mapping` (free keys, one spec for every value),
an `ArrayOf` tables, a `Field` (a typed value with default and range check) or a
`Custom` function.  `validate` returns the resolved value (defaults filled in) and
appends an `Issue` — file, dotted key, value, what is accepted — for each problem.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netemu.errors import InputError

__all__ = ["REQUIRED", "ArrayOf", "Custom", "Field", "Issue", "Mapping", "ScenarioError", "Section", "validate"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Issue:
    file: str
    key: str
    value: Any
    accepts: str

    def __str__(self) -> str:
        shown = "(missing)" if self.value is REQUIRED else _short(self.value)
        return f"{self.file}: {self.key if len(self.key) <= 200 else self.key[:200] + '...'} = {shown}: {self.accepts}"


def _short(value: Any, limit: int = 200) -> str:
    """repr(value), cut to `limit` characters: a hostile value must not flood the terminal."""
    try:
        text = repr(value)
    except RecursionError:
        return "(nested too deep to show)"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class ScenarioError(InputError):
    """One or more problems in a scenario; `issues` lists them all."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        n = len(issues)  # one problem is one line; several are listed under a header
        super().__init__(str(issues[0]) if n == 1 else f"{n} problems in the scenario:\n" + "\n".join(f"  {i}" for i in issues))


INT_MAX = 2**63 - 1  # TOML integers are 64-bit; larger ones overflow NumPy later
INT_MIN = -(2**63)

_TYPE_NAMES = {bool: "true/false", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a table"}


@dataclass(frozen=True)
class Field:
    types: type | tuple[type, ...]
    default: Any = REQUIRED
    check: Callable[[Any], bool] | None = None
    accepts: str = ""
    doc: str = ""
    allow_inf: bool = False  # only keys that document inf (e.g. "inf = no horizon") accept it; NaN never

    def type_ok(self, value: Any) -> bool:
        types = self.types if isinstance(self.types, tuple) else (self.types,)
        if isinstance(value, bool):
            return bool in types
        if isinstance(value, int) and float in types:
            return True
        return isinstance(value, types)

    def describe(self) -> str:
        types = self.types if isinstance(self.types, tuple) else (self.types,)
        kind = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
        return f"{kind}{' ' + self.accepts if self.accepts else ''}"


@dataclass(frozen=True)
class Section:
    fields: dict[str, Any]
    doc: str = ""
    optional: bool = True  # a missing section is resolved from its defaults


@dataclass(frozen=True)
class Mapping:
    """A table whose keys are free (e.g. link classes); every value follows `value`."""

    value: Any
    doc: str = ""


@dataclass(frozen=True)
class ArrayOf:
    item: Any
    min_items: int = 0
    doc: str = ""


@dataclass(frozen=True)
class Custom:
    """`fn(value, key, issues) -> resolved` for values whose shape depends on content."""

    fn: Callable[[Any, str, Issues], Any]
    default: Any = REQUIRED


@dataclass
class Issues:
    file: str
    items: list[Issue] = field(default_factory=list)

    def add(self, key: str, value: Any, accepts: str) -> None:
        self.items.append(Issue(self.file, key, value, accepts))


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def validate(spec: Any, value: Any, key: str, issues: Issues) -> Any:
    if isinstance(spec, Field):
        if value is REQUIRED:
            if spec.default is REQUIRED:
                issues.add(key, value, f"required: {spec.describe()}")
            return spec.default
        if not spec.type_ok(value):
            issues.add(key, value, f"expected {spec.describe()}")
            return value
        if isinstance(value, int) and not isinstance(value, bool) and not INT_MIN <= value <= INT_MAX:
            issues.add(key, value, f"expected {spec.describe()} (a 64-bit integer: {INT_MIN} .. {INT_MAX})")
            return value
        if spec.types is float and isinstance(value, int):
            value = float(value)
        if isinstance(value, float) and (math.isnan(value) or (math.isinf(value) and not spec.allow_inf)):
            issues.add(key, value, f"expected {spec.describe()} (a finite number; NaN and inf are not accepted)")
            return value
        if spec.check is not None and not spec.check(value):
            issues.add(key, value, f"expected {spec.describe()}")
        return value
    if isinstance(spec, Custom):
        if value is REQUIRED:
            if spec.default is REQUIRED:
                issues.add(key, value, "required")
            return spec.default
        return spec.fn(value, key, issues)
    if isinstance(spec, Section):
        if value is REQUIRED:
            value = {}
        if not isinstance(value, dict):
            issues.add(key, value, "expected a table")
            return value
        for k in value:
            if k not in spec.fields:
                issues.add(_join(key, k), value[k], f"unknown key; accepted keys here: {', '.join(spec.fields)}")
        return {k: validate(s, value.get(k, REQUIRED), _join(key, k), issues) for k, s in spec.fields.items()}
    if isinstance(spec, Mapping):
        if value is REQUIRED:
            return {}
        if not isinstance(value, dict):
            issues.add(key, value, "expected a table")
            return value
        return {k: validate(spec.value, v, _join(key, k), issues) for k, v in value.items()}
    if isinstance(spec, ArrayOf):
        if value is REQUIRED:
            value = []
        if not isinstance(value, list):
            issues.add(key, value, "expected an array of tables ([[...]])")
            return value
        if len(value) < spec.min_items:
            issues.add(key, value, f"expected at least {spec.min_items} entr{'y' if spec.min_items == 1 else 'ies'}")
        return [validate(spec.item, v, f"{key}[{i}]", issues) for i, v in enumerate(value)]
    raise TypeError(f"not a schema spec: {spec!r}")
