"""Load a TOML scenario, apply `--set` overrides, and validate everything before a run.

Every problem is collected and reported together (`ScenarioError`), each naming the
file, the dotted key, the value and what is accepted.  The result is a `Scenario`:
the resolved table (defaults filled in, written to the run folder as scenario.toml)
plus the file it came from, and `settings`, the same parsed once into typed records
(netemu.scenario.settings) that the layers running it read.  The format is documented in docs/scenarios.md.  The checks
live beside this module: `fields` (the tables and their values; plug-in tables through
`specs`), `limits` (sizes, nesting), `files` (what the scenario names on disk), `specs`
(plug-ins and their parameters), `crosscheck` (what needs the topology, built by `graph`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netemu import plugins
from netemu.scenario.crosscheck import check_graph, check_heterogeneity, match_nodes
from netemu.scenario.fields import SCHEMA, SHORTHANDS, check_queues, renamed, shorthands
from netemu.scenario.files import check_code, check_files, graphml_size_ok, link_tables, read_toml
from netemu.scenario.limits import MAX_DEPTH, check_sizes, nesting_depth
from netemu.scenario.overrides import apply_overrides
from netemu.scenario.schema import Issue, Issues, ScenarioError, validate
from netemu.scenario.settings import Settings, settings, thawed
from netemu.scenario.specs import algorithm_params, check_algorithms, data_features, named_task

__all__ = ["SHORTHANDS", "Scenario", "load_scenario", "match_nodes", "parse_scenario"]


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: `settings` are its typed records, what every layer that runs it
    reads; `table` is the resolved TOML table they were made from, kept for what is about
    the file itself (the checks, which name its keys and values as written, and the run
    folder's scenario.toml); `path` is its source file."""

    table: dict
    path: Path
    settings: Settings

    @property
    def name(self) -> str:
        return self.settings.run.name or self.path.stem

    def resolve(self, relative: str) -> Path:
        """A path written in the scenario, relative to the scenario file."""
        return _resolve(self.path, relative)

    def algorithm_params(self, algorithm: int, resolve: Callable[[str], str] | None = None) -> Any:
        """Algorithm entry `algorithm`'s params, its spec's dataclass, with the paths they hold
        (a Flower `app_dir`) resolved by `resolve` (default: relative to the scenario file)."""
        alg = self.settings.algorithms[algorithm]
        return algorithm_params(plugins.algorithm(alg.name), thawed(alg.params), resolve or self._relative)

    def data_params(self, resolve: Callable[[str], str] | None = None) -> Any:
        """The [data] kind's params, its spec's dataclass, with the file names they hold resolved
        by `resolve` (default: relative to the scenario file); None without a [data] table."""
        data = self.settings.data
        if data is None:
            return None
        params = plugins.data_kind(data.kind).params(**thawed(data.params))
        return params.with_paths(resolve or self._relative) if hasattr(params, "with_paths") else params

    def task_params(self) -> Any:
        """The task's params, its spec's dataclass; None when no algorithm learns a task."""
        task = self.settings.task
        return None if task is None else plugins.task(task.name).params(**thawed(task.params))

    def _relative(self, path: str) -> str:
        return str(self.resolve(path))

    def code(self) -> list[tuple[str, Path]]:
        """(key, path) of the Python code shipped with the scenario that a run executes:
        its `script`, and what an algorithm's params declare by a `code()` method (e.g. a
        Flower `app_dir`).  `validate` executes none of it; `run` names it first."""
        out = [("script", self.resolve(self.settings.script).resolve())] if self.settings.script else []
        for i in range(len(self.settings.algorithms)):
            params = self.algorithm_params(i)
            out += [(f"algorithm[{i}].{key}", Path(path).resolve()) for key, path in getattr(params, "code", list)()]
        return out


def _resolve(path: Path, relative: str) -> Path:
    p = Path(relative)
    return p if p.is_absolute() else path.parent / p


def parse_scenario(raw: dict, path: Path, overrides: Sequence[str] = ()) -> Scenario:
    from netemu.scenario.graph import release, topology_for_validation  # the one place that needs graphs

    file = str(path)
    raw = apply_overrides(raw, list(overrides), file)
    if nesting_depth(raw) > MAX_DEPTH:
        raise ScenarioError([Issue(file, "(nesting)", f"more than {MAX_DEPTH} levels", f"tables and arrays nested at most {MAX_DEPTH} levels deep")])
    issues = Issues(file)
    raw, renamed_keys = shorthands(raw, issues)
    raw = named_task(raw)
    table = validate(SCHEMA, raw, "", issues)
    sc = None
    if not issues.items:
        check_queues(table, link_tables(table), issues)
    if not issues.items and check_sizes(table, issues) and graphml_size_ok(table, lambda p: _resolve(path, p), issues):
        sc = Scenario(table, path, settings(table))
        specs = [plugins.algorithm(alg["name"]) for alg in table["algorithm"]]
        params = check_algorithms(table, specs, lambda p: str(sc.resolve(p)), issues)
        check_heterogeneity(table, specs, issues)
        try:
            graph = topology_for_validation(sc)
        except (ValueError, OSError) as exc:  # InputError is a ValueError
            if table["topology"]["kind"] == "graphml":  # what is wrong is in the file
                issues.add("topology.file", table["topology"]["file"], str(exc))
            else:
                issues.add("topology", table["topology"], str(exc))
        else:
            check_graph(table, graph, specs, params, issues, features=lambda: data_features(table, lambda p: str(sc.resolve(p))))
            release(graph)
        check_files(table, sc.resolve, issues)
        if not issues.items:  # the algorithms' params construct: the code they name (a Flower app_dir) can be listed
            check_code(sc.code(), issues)
    if issues.items or sc is None:
        raise ScenarioError([renamed(issue, renamed_keys) for issue in issues.items])
    return sc


def load_scenario(path: str | Path, overrides: Sequence[str] = ()) -> Scenario:
    path = Path(path)
    return parse_scenario(read_toml(path), path, overrides)
