"""Command-line overrides of scenario values: `--set key.path=value`."""

from __future__ import annotations

import sys
import tomllib
from typing import Any

from netemu.errors import InputError
from netemu.scenario.schema import REQUIRED, Issues, ScenarioError

__all__ = ["apply_overrides", "parse_value", "too_many_digits"]


def too_many_digits() -> str:
    """What is accepted of an integer longer than Python converts (tomllib raises a bare ValueError)."""
    return f"integers of at most {sys.get_int_max_str_digits()} digits (Python's limit, sys.get_int_max_str_digits)"


def parse_value(text: str) -> Any:
    """A command-line value in TOML syntax; a bare word is a string.  An integer of more digits
    than Python converts is an InputError (a string in its place would hide the cause)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):  # nested too deep: kept as a string, refused by the schema
        return text
    except ValueError:  # int() beyond sys.get_int_max_str_digits
        shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text):,} characters)"
        raise InputError(f"{shown}: expected {too_many_digits()}") from None


def apply_overrides(table: dict, overrides: list[str], file: str) -> dict:
    """Apply `key.path=value` overrides (value in TOML syntax; bare words are strings).

    `algorithm.X=v` sets X in every algorithm entry; `algorithm.LABEL.X=v` in the entry
    whose label (or name) is LABEL.
    """
    issues = Issues(f"{file} (--set)")
    for item in overrides:
        if "=" not in item:
            issues.add(item, REQUIRED, "expected KEY=VALUE, e.g. run.rounds=200")
            continue
        path, _, text = item.partition("=")
        try:
            keys, value = path.strip().split("."), parse_value(text.strip())
        except InputError:
            issues.add(path, text.strip(), f"expected {too_many_digits()}")
            continue
        if keys[0] == "algorithm":
            entries = table.setdefault("algorithm", [])
            if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
                issues.add(path, value, "algorithm overrides need [[algorithm]] entries (an array of tables)")
                continue
            labels = [e.get("label", e.get("name")) for e in entries]
            if len(keys) == 3:
                if keys[1] not in labels:
                    issues.add(path, value, f"no algorithm labelled {keys[1]!r}; labels: {', '.join(map(str, labels))}")
                    continue
                entries = [entries[labels.index(keys[1])]]
                keys = keys[:1] + keys[2:]
            if len(keys) != 2:
                issues.add(path, value, "expected algorithm.PARAM or algorithm.LABEL.PARAM")
                continue
            for e in entries:
                e[keys[1]] = value
            continue
        if not all(keys):
            issues.add(path, value, "expected a dotted key such as run.rounds")
            continue
        node = table
        for k in keys[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                issues.add(path, value, f"{k} is not a table")
                break
        else:
            node[keys[-1]] = value
    if issues.items:
        raise ScenarioError(issues.items)
    return table
