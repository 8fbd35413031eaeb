"""Load a TOML scenario, apply `--set` overrides, and validate everything before a run.

Every problem is collected and reported together (`ScenarioError`), each naming the
file, the dotted key, the value and what is accepted.  The result is a `Scenario`:
the resolved table (defaults filled in, written to the run folder as scenario.toml)
plus the file it came from.  The format is documented in docs/scenarios.md.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import inspect
import math
import os
import re
import tomllib
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from netemu import plugins
from netemu.algorithms.base import AlgorithmSpec, Setting
from netemu.config import ConfigError
from netemu.data.base import DataSpec
from netemu.net import links as L
from netemu.scenario.overrides import apply_overrides
from netemu.scenario.schema import (
    INT_MAX, INT_MIN, REQUIRED, ArrayOf, Custom, Field, Issue, Issues, Mapping, ScenarioError, Section, validate,
)

__all__ = ["LATENCY_MODELS", "LOSS_MODELS", "SHORTHANDS", "Scenario", "algorithm_params", "load_scenario", "match_nodes",
           "parse_scenario"]

LATENCY_MODELS = {
    "constant": L.Constant, "uniform": L.Uniform, "exponential": L.Exponential, "lognormal": L.LogNormal,
    "empirical": L.Empirical, "rounds": L.RoundDelay,
}
LOSS_MODELS = {"bernoulli": L.Bernoulli, "gilbert_elliott": L.GilbertElliott}
SEED_MAX = 2**63 - 1  # seeds feed NumPy's SeedSequence and BLAKE2 run seeds (docs/scenarios.md)
MAX_NODES = 1_000_000  # sizes refused before anything is allocated (with a memory estimate)
MAX_RUNS = 100_000
MAX_ROUNDS = 100_000_000
NODE_BYTES = 16_000  # measured: ~12 kB per node of a star world (graph, links, actor); rounded up
EDGE_BYTES = 2_000  # per directed link: its Link and the graph's edge dictionaries (order of magnitude)
GRAPH_BYTES = 1_500  # per node and Monte Carlo run: the topologies of every run are built up front
METRIC_BYTES = 300  # per recorded metric value (metrics list and metrics.csv rows)

TOPOLOGIES = {
    "star": {"clients": Field(int, REQUIRED, lambda v: v >= 1, ">= 1")},
    "multi_server": {
        "servers": Field(int, REQUIRED, lambda v: v >= 1, ">= 1"),
        "clients_per_server": Field(int, REQUIRED, lambda v: v >= 1, ">= 1"),
        "server_degree": Field(float, 3.0, lambda v: v > 0, "> 0 (average degree of the server graph)"),
    },
    "random_peers": {
        "peers": Field(int, REQUIRED, lambda v: v >= 2, ">= 2"),
        "avg_degree": Field(float, 3.0, lambda v: v > 0, "> 0"),
    },
    "geometric": {
        "positions": Field(dict, REQUIRED, accepts="(node = [x, y] pairs)"),
        "d_max": Field(float, REQUIRED, lambda v: v > 0, "> 0"),
    },
    "graphml": {"file": Field(str, REQUIRED, accepts="(path of a GraphML file, relative to the scenario)")},
}


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


def _construct(cls: type, values: dict, key: str, issues: Issues) -> None:
    """Let the class check its own ranges; report a refusal at the right dotted key."""
    try:
        cls(**values)
    except ConfigError as exc:
        issues.add(f"{key}.{exc.field}", values.get(exc.field), exc.accepts)
    except (ValueError, TypeError) as exc:
        issues.add(key, values, str(exc))


def _selects(value: Any, key: str, issues: Issues, selector: str, choices, accepts: str = "") -> bool:
    """Whether the table `value` names one of `choices` under `selector`; reports it if not."""
    if isinstance(value, dict) and isinstance(value.get(selector), str) and value[selector] in choices:
        return True
    got = value.get(selector, REQUIRED) if isinstance(value, dict) else value
    where = f"{key}.{selector}" if isinstance(value, dict) or not accepts else key
    issues.add(where, got, f"{accepts}one of {', '.join(choices)}")
    return False


def _params_table(value: dict, key: str, issues: Issues, cls: type, fixed: dict, defaults: dict | None = None) -> Any:
    """A table of `cls` parameters beside the `fixed` keys; `cls` checks its own ranges."""
    before = len(issues.items)
    resolved = validate(Section({**fixed, **_params_of(cls, defaults)}), value, key, issues)
    if isinstance(resolved, dict) and len(issues.items) == before:  # types fine: let the class check ranges
        _construct(cls, {k: v for k, v in resolved.items() if k not in fixed}, key, issues)
    return resolved


def _finite(v: Any) -> bool:
    """A number (not a bool) that is neither NaN nor infinite, and fits in 64 bits if an int."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return INT_MIN <= v <= INT_MAX if isinstance(v, int) else math.isfinite(v)


def _model(registry: dict[str, type], what: str) -> Any:
    """Checker of a `{model = "...", <params>}` link-component table.

    Parameter names come from the component's signature; its constructor checks the
    ranges (one source of truth).  An empirical latency takes `samples` inline or a
    `file` of delays (one per line, relative to the scenario; checked at load time).
    """

    def check(value: Any, key: str, issues: Issues) -> Any:
        if not _selects(value, key, issues, "model", registry, accepts=f"{what} model: "):
            return value
        model, cls = value["model"], registry[value["model"]]
        params = {k: v for k, v in value.items() if k != "model"}
        accepted = ["samples", "file"] if cls is L.Empirical else list(inspect.signature(cls).parameters)
        before = len(issues.items)
        for k, v in params.items():
            if k not in accepted:
                issues.add(f"{key}.{k}", v, f"unknown parameter of the {model} {what} model; accepted: {', '.join(accepted)}")
            elif k == "file" and not isinstance(v, str):
                issues.add(f"{key}.{k}", v, "expected a path (string)")
            elif k == "samples" and not (isinstance(v, list) and all(_finite(x) for x in v)):
                issues.add(f"{key}.{k}", v, "expected a list of finite delays in seconds")
            elif k not in ("file", "samples") and not _finite(v):
                issues.add(f"{key}.{k}", v, "expected a finite number (NaN and inf are not accepted)")
        if cls is L.Empirical and len([k for k in params if k in accepted]) != 1:
            issues.add(key, value, "an empirical latency needs exactly one of `samples` or `file`")
        if len(issues.items) == before and "file" not in params:
            try:
                cls(**params)
            except (ValueError, TypeError) as exc:
                issues.add(key, value, str(exc))
        return value

    return check


def _jitter(value: Any, key: str, issues: Issues) -> Any:
    value = validate(Section({"sigma": Field(float, REQUIRED), "correlation": Field(float, 0.0)}), value, key, issues)
    if isinstance(value, dict) and not any(i.key.startswith(key) for i in issues.items):
        _construct(L.Jitter, value, key, issues)
    return value


def _outages(value: Any, key: str, issues: Issues) -> Any:
    ok = isinstance(value, list) and all(
        isinstance(w, list) and len(w) == 2 and all(_finite(x) for x in w) and 0 <= w[0] < w[1] for w in value
    )
    if not ok:
        issues.add(key, value, "expected a list of [start, end] windows of finite times with 0 <= start < end")
    return value


LINK_FIELDS = {
    "latency": Custom(_model(LATENCY_MODELS, "latency"), {"model": "constant", "delay": 0.0}),
    "jitter": Custom(_jitter, None),
    "loss": Custom(_model(LOSS_MODELS, "loss"), None),
    "bandwidth": Field(float, 0.0, lambda v: v >= 0, ">= 0 bits/s (0 = unlimited)"),
    "outages": Custom(_outages, []),
}
BEHAVIOUR_FIELDS = {
    "participation": Field(float, 1.0, lambda v: 0 <= v <= 1, "in [0, 1]"),
    "speed": Field(float, 1.0, lambda v: v > 0, "> 0 work units per second"),
    "slowdown_sigma": Field(float, 0.0, lambda v: v >= 0, ">= 0"),
}


def _topology(value: Any, key: str, issues: Issues) -> Any:
    if not _selects(value, key, issues, "kind", TOPOLOGIES):
        return value
    value = validate(Section({"kind": Field(str), **TOPOLOGIES[value["kind"]]}), value, key, issues)
    if value.get("kind") == "geometric" and isinstance(value.get("positions"), dict):
        for name, pos in value["positions"].items():
            if not (isinstance(pos, list) and len(pos) == 2 and all(_finite(x) for x in pos)):
                issues.add(f"{key}.positions.{name}", pos, "expected [x, y]: two finite numbers")
    return value


def _node_count(topo: dict) -> tuple[str, int] | None:
    """(key, number of nodes) of a topology, computed without building it."""
    kind = topo["kind"]
    if kind == "star":
        return "topology.clients", topo["clients"] + 1
    if kind == "multi_server":
        return "topology.clients_per_server", topo["servers"] * (topo["clients_per_server"] + 1)
    if kind == "random_peers":
        return "topology.peers", topo["peers"]
    if kind == "geometric":
        return "topology.positions", len(topo["positions"])
    return None


def _gb(n: float) -> str:
    return f"{n / 1e9:.3g} GB" if n >= 1e8 else f"{n / 1e6:.3g} MB"


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def memory_estimate(table: dict, nodes: int) -> int:
    """A rough upper estimate (bytes) of what a run of the scenario holds in memory:
    one World at a time, the topologies of every run, the data, every metric value."""
    run, data = table["run"], table["data"] or {}
    dim = data.get("dim", 64) if isinstance(data.get("dim", 64), int) else 64
    samples = max((v for k, v in data.items() if k in ("samples_max", "samples") and isinstance(v, int)), default=100)
    test = data.get("test_samples", 1000) if isinstance(data.get("test_samples", 1000), int) else 1000
    data_bytes = 8 * dim * (nodes * samples + test)
    topo = table["topology"]
    reporters = nodes if topo["kind"] in ("random_peers", "geometric", "graphml") else max(1, nodes // 100)
    metric_bytes = METRIC_BYTES * 3 * reporters * run["rounds"] * run["runs"] * len(table["algorithm"])
    edges = 0  # directed links beyond the star's two per client, which NODE_BYTES covers
    if topo["kind"] == "random_peers":
        edges = int(nodes * min(topo["avg_degree"], nodes))
    elif topo["kind"] == "geometric":  # the links it will have, and an n x n distance matrix while building
        edges, data_bytes = _geometric_links(topo), data_bytes + 24 * nodes * nodes
    elif topo["kind"] == "multi_server":
        edges = int(topo["servers"] * min(topo["server_degree"], topo["servers"]))
    return nodes * NODE_BYTES + edges * EDGE_BYTES * (1 + run["runs"]) + run["runs"] * nodes * GRAPH_BYTES + data_bytes + metric_bytes


def _geometric_links(topo: dict, exact_up_to: int = 20_000) -> int:
    """Directed links of a geometric topology: counted in blocks of rows (no n x n matrix)
    up to `exact_up_to` nodes; above, every pair (an upper bound)."""
    import numpy as np

    pos = np.array(list(topo["positions"].values()), dtype=float).reshape(-1, 2)
    n = len(pos)
    if n > exact_up_to:
        return n * (n - 1)
    count = 0
    for start in range(0, n, 1000):
        block = np.linalg.norm(pos[start:start + 1000, None, :] - pos[None, :, :], axis=-1) < topo["d_max"]
        count += int(block.sum()) - min(1000, n - start)  # not a node's link to itself
    return count


def _check_sizes(table: dict, issues: Issues) -> bool:
    """Refuse sizes that cannot fit before anything is allocated; True if the sizes are fine."""
    counted = _node_count(table["topology"])
    if counted is None:  # graphml: the file's size bounds the graph
        return True
    key, nodes = counted
    estimate = memory_estimate(table, nodes)
    need = f"a run would need about {_gb(estimate)} of memory"
    run = table["run"]
    ok = True
    if run["runs"] > MAX_RUNS:
        issues.add("run.runs", run["runs"], f"at most {MAX_RUNS:,} Monte Carlo runs ({need})")
        ok = False
    if run["rounds"] > MAX_ROUNDS:
        issues.add("run.rounds", run["rounds"], f"at most {MAX_ROUNDS:,} rounds ({need})")
        ok = False
    if nodes > MAX_NODES:
        issues.add(key, table["topology"].get(key.split(".")[-1]), f"at most {MAX_NODES:,} nodes in all (this topology has {nodes:,}; {need})")
        ok = False
    if not ok:
        return False
    physical = _physical_memory()
    if physical is not None and estimate > physical:
        issues.add("run", f"{nodes:,} nodes x {run['runs']:,} runs x {run['rounds']:,} rounds",
                   f"a scenario that fits in memory: it would need about {_gb(estimate)}, this machine has {_gb(physical)}")
        return False
    return True


MAX_GRAPHML_BYTES = 200_000_000


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


def _data(value: Any, key: str, issues: Issues) -> Any:
    spec = _lookup(value, key, issues, "kind", "data")
    if spec is None:
        return value
    return _params_table(value, key, issues, spec.params, {"kind": Field(str)})


def _algorithm(value: Any, key: str, issues: Issues) -> Any:
    spec = _lookup(value, key, issues, "name", "algorithm")
    if not isinstance(spec, AlgorithmSpec):
        return value
    fixed = {"name": Field(str), "label": Field(str, value["name"] if ":" not in value["name"] else spec.name)}
    return _params_table(value, key, issues, spec.params, fixed, spec.defaults)


SCHEMA = Section(
    {
        "run": Section(
            {
                "name": Field(str, ""),
                "description": Field(str, ""),
                "seed": Field(int, 0, lambda v: 0 <= v <= SEED_MAX, f"in 0 .. 2**63-1 = {SEED_MAX}"),
                "rounds": Field(int, REQUIRED, lambda v: v >= 1, f">= 1 (at most {MAX_ROUNDS:,})"),
                "runs": Field(int, 1, lambda v: v >= 1, f">= 1 Monte Carlo runs (at most {MAX_RUNS:,})"),
                "until": Field(float, 0.0, lambda v: v >= 0, ">= 0 virtual seconds (0 = no limit)"),
                "max_time": Field(float, 0.0, lambda v: v >= 0, allow_inf=True,
                                  accepts=">= 0 virtual seconds: the horizon (0 = automatic, inf = no horizon)"),
            }
        ),
        "topology": Custom(_topology),
        "links": Mapping(Section(LINK_FIELDS), doc="per link class"),
        "link": ArrayOf(Section({"src": Field(str), "dst": Field(str), **LINK_FIELDS}), doc="per-link overrides"),
        "nodes": Section(
            {
                **BEHAVIOUR_FIELDS,
                "group": ArrayOf(Section({"name": Field(str, ""), "members": Field(list), **BEHAVIOUR_FIELDS})),
                "crash": ArrayOf(
                    Section(
                        {
                            "node": Field(str),
                            "at": Field(float, REQUIRED, lambda v: v >= 0, ">= 0"),
                            "recover": Field(float, -1.0, accepts="(omit for never)"),
                        }
                    )
                ),
            }
        ),
        "data": Custom(_data, None),  # required unless every algorithm says it needs none (parse_scenario)
        "algorithm": ArrayOf(Custom(_algorithm), min_items=1),
        "script": Field(str, "", accepts="(path of a Python scenario script, relative to the scenario)"),
        "devices": Section(
            {
                "file": Field(str, "", accepts="(a netemu devices JSON file, relative to the scenario; see netemu devices import)"),
                "bandwidth": Field(bool, True, accepts="(set the clients' link bandwidth from the devices)"),
            }
        ),
        "output": Section({"plots": Field(bool, True), "log": Field(bool, True), "trace": Field(bool, True)}),
        "netemu": Section({"version": Field(str, "", accepts="(written by netemu into run folders)")}),
    }
)


#: top-level tables that stand for one more `[[algorithm]]` entry of that name: `[flower]`
#: (server_app, client_app, run_config, ...) is `[[algorithm]] name = "flower"` with the same keys.
SHORTHANDS = ("flower",)


def _shorthands(raw: dict, issues: Issues) -> tuple[dict, dict[str, str]]:
    """`raw` with each shorthand table moved into `algorithm`, and the dotted key of each
    entry it became ("algorithm[1]" -> "flower"), so that errors name what the file says."""
    found = [name for name in SHORTHANDS if name in raw]
    if not found:
        return raw, {}
    raw = dict(raw)
    entries = raw.get("algorithm", [])
    entries = list(entries) if isinstance(entries, list) else entries
    renamed = {}
    for name in found:
        table = raw.pop(name)
        if not isinstance(table, dict):
            issues.add(name, table, f"a table of the {name} algorithm's settings ([{name}])")
            continue
        if "name" in table:
            issues.add(f"{name}.name", table["name"], f"no `name` in [{name}]: it is the {name} algorithm")
            continue
        if isinstance(entries, list):
            renamed[f"algorithm[{len(entries)}]"] = name
            entries.append({"name": name, **table})
    raw["algorithm"] = entries
    return raw, renamed


def _renamed(issue: Issue, renamed: dict[str, str]) -> Issue:
    for key, name in renamed.items():
        if issue.key in (key, key + ".name"):  # the entry, or the algorithm it names
            return dataclasses.replace(issue, key=name)
        if issue.key.startswith(key + "."):
            return dataclasses.replace(issue, key=name + issue.key[len(key):])
    return issue


def algorithm_params(table: dict, i: int, spec: AlgorithmSpec, resolve) -> Any:
    """The constructed params of algorithm entry `i`, with the paths they hold (e.g. a
    Flower `app_dir`) resolved by `resolve` (relative to the scenario file): params that
    have a `with_paths(resolve)` method, like the data specs, get it called."""
    alg = table["algorithm"][i]
    params = spec.make_params({k: v for k, v in alg.items() if k not in ("name", "label")})
    return params.with_paths(resolve) if hasattr(params, "with_paths") else params


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: `table` is the resolved TOML table, `path` its source file."""

    table: dict
    path: Path

    @property
    def name(self) -> str:
        return self.table["run"]["name"] or self.path.stem

    def resolve(self, relative: str) -> Path:
        """A path written in the scenario, relative to the scenario file."""
        p = Path(relative)
        return p if p.is_absolute() else self.path.parent / p

    def code(self) -> list[tuple[str, Path]]:
        """(key, path) of the Python code shipped with the scenario that a run executes:
        its `script`, and what an algorithm's params declare by a `code()` method (e.g. a
        Flower `app_dir`).  `validate` executes none of it; `run` names it first."""
        out = [("script", self.resolve(self.table["script"]).resolve())] if self.table["script"] else []
        for i, alg in enumerate(self.table["algorithm"]):
            params = algorithm_params(self.table, i, plugins.algorithm(alg["name"]), lambda p: str(self.resolve(p)))
            out += [(f"algorithm[{i}].{key}", Path(path).resolve()) for key, path in getattr(params, "code", list)()]
        return out


_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")


def match_nodes(pattern: str, names: list[str]) -> list[str]:
    """Nodes matching `pattern`: a name, a glob (`client-1*`) or a numeric range
    (`client-{0..63}`, both ends included), in the order of `names`."""
    m = _RANGE.search(pattern)
    if m is None:
        return fnmatch.filter(names, pattern)
    lo, hi = int(m.group(1)), int(m.group(2))
    wanted = {pattern[: m.start()] + str(i) + pattern[m.end() :] for i in range(lo, hi + 1)}
    return [n for n in names if any(fnmatch.fnmatchcase(n, w) for w in wanted)]


def _link_tables(table: dict) -> list[tuple[str, dict]]:
    return [(f"links.{c}", t) for c, t in table["links"].items()] + [(f"link[{i}]", t) for i, t in enumerate(table["link"])]


def _check_nodes(table: dict, graph_nodes: list[str], graph_classes: set[str], issues: Issues) -> None:
    """Cross-checks that need the topology: link classes, node names, roles."""
    for cls in table["links"]:
        if cls not in graph_classes:
            issues.add(f"links.{cls}", "(table)", f"no link of this class in the topology; classes: {', '.join(sorted(graph_classes))}")
    for i, ov in enumerate(table["link"]):
        for end in ("src", "dst"):
            if isinstance(ov, dict) and ov.get(end) not in graph_nodes:
                issues.add(f"link[{i}].{end}", ov.get(end), "a node of the topology")
    for i, group in enumerate(table["nodes"]["group"]):
        for pattern in group.get("members", []) if isinstance(group, dict) else []:
            if not isinstance(pattern, str) or not match_nodes(pattern, graph_nodes):
                issues.add(f"nodes.group[{i}].members", pattern, "node names, globs (client-1*) or ranges (client-{0..63}) matching a node")
    for i, crash in enumerate(table["nodes"]["crash"]):
        if not isinstance(crash, dict):
            continue
        if crash.get("node") not in graph_nodes:
            issues.add(f"nodes.crash[{i}].node", crash.get("node"), "a node of the topology")
        if crash.get("recover", -1) >= 0 and crash["recover"] <= crash.get("at", 0):
            issues.add(f"nodes.crash[{i}].recover", crash["recover"], f"after the crash time at = {crash['at']}")


MAX_DATA_FILE_BYTES = 1_000_000_000  # latency samples and devices files


def _regular_file(path: Path, limit: int) -> None:
    """Refuse what is not a regular file of at most `limit` bytes (a FIFO, /dev/zero or a
    socket would block or never end) before anything reads it.  Missing files pass:
    their readers report them."""
    import stat

    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{path}: not a regular file (a device, FIFO or socket)")
    if st.st_size > limit:
        raise OSError(f"{path}: {st.st_size:,} bytes, more than the {limit:,} accepted")


def _graphml_size_ok(sc: Scenario, issues: Issues) -> bool:
    topo = sc.table["topology"]
    if topo["kind"] != "graphml":
        return True
    try:
        _regular_file(sc.resolve(topo["file"]), MAX_GRAPHML_BYTES)
    except OSError as exc:
        issues.add("topology.file", topo["file"], f"a GraphML file: {exc}")
        return False
    return True


def _check_requirements(table: dict, i: int, spec: AlgorithmSpec, params: Any, graph: nx.DiGraph, issues: Issues) -> None:
    """The algorithm's own requirements (graph shape, data, rounds), each at the key it concerns."""
    alg = table["algorithm"][i]
    setting = Setting(graph, params, table["data"] or {}, table["run"]["rounds"])
    for req in spec.unmet(setting):
        value: Any = table
        for part in req.key.split("."):
            value = value.get(part, REQUIRED) if isinstance(value, dict) else REQUIRED
        issues.add(req.key, value, f"algorithm[{i}] = {alg['name']!r} needs {req.needs}")


def parse_scenario(raw: dict, path: Path, overrides: Sequence[str] = ()) -> Scenario:
    from netemu.scenario.build import topology_for_validation  # the one place that needs graphs

    file = str(path)
    raw = apply_overrides(raw, list(overrides), file)
    if nesting_depth(raw) > MAX_DEPTH:
        raise ScenarioError([Issue(file, "(nesting)", f"more than {MAX_DEPTH} levels", f"tables and arrays nested at most {MAX_DEPTH} levels deep")])
    issues = Issues(file)
    raw, renamed = _shorthands(raw, issues)
    table = validate(SCHEMA, raw, "", issues)
    if not issues.items and _check_sizes(table, issues) and _graphml_size_ok(Scenario(table, path), issues):
        sc = Scenario(table, path)
        specs = [plugins.algorithm(alg["name"]) for alg in table["algorithm"]]
        params: dict[int, Any] = {}
        for i, (alg, spec) in enumerate(zip(table["algorithm"], specs)):
            try:  # the checks that need the scenario's paths (a Flower app_dir relative to the file)
                params[i] = algorithm_params(table, i, spec, lambda p: str(sc.resolve(p)))
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
        try:
            graph = topology_for_validation(sc)
        except (ValueError, OSError) as exc:  # InputError is a ValueError
            issues.add("topology", table["topology"], str(exc))
        else:
            if not nx.is_weakly_connected(graph):
                parts = sorted((sorted(c) for c in nx.weakly_connected_components(graph)), key=len)
                issues.add("topology", table["topology"], f"a connected graph; this one falls into {len(parts)} parts (smallest: {', '.join(parts[0][:5])})")
            classes = {c for _, _, c in graph.edges(data="link_class")}
            _check_nodes(table, sorted(graph.nodes), classes, issues)
            roles = {r for _, r in graph.nodes(data="role")}
            for i, (alg, spec) in enumerate(zip(table["algorithm"], specs)):
                need = set(spec.roles)
                if not need <= roles:
                    issues.add(f"algorithm[{i}].name", alg["name"], f"a topology with nodes of role {', '.join(sorted(need))} (this one has {', '.join(sorted(roles))})")
                elif i in params:
                    _check_requirements(table, i, spec, params[i], graph, issues)
        for where, link in _link_tables(table):
            latency = link.get("latency") or {}
            if latency.get("model") == "empirical" and "file" in latency:
                try:
                    _regular_file(sc.resolve(latency["file"]), MAX_DATA_FILE_BYTES)
                    L.Empirical.from_file(sc.resolve(latency["file"]))
                except (OSError, ValueError) as exc:
                    issues.add(f"{where}.latency.file", latency["file"], f"a readable file of delays (one per line): {exc}")
        if table["devices"]["file"]:
            from netemu.devices import DeviceError, read_devices

            try:
                _regular_file(sc.resolve(table["devices"]["file"]), MAX_DATA_FILE_BYTES)
                read_devices(sc.resolve(table["devices"]["file"]))
            except (DeviceError, OSError) as exc:
                issues.add("devices.file", table["devices"]["file"], str(exc))
        source = (table["data"] or {}).get("source", "sklearn")
        if kind is not None and table["data"]["kind"] in ("digits", "digits_fl") and source != "sklearn" and not sc.resolve(source).exists():
            issues.add("data.source", source, '"sklearn", or an existing .npz file or folder of MNIST IDX files (relative to the scenario)')
        if table["script"] and not sc.resolve(table["script"]).is_file():
            issues.add("script", table["script"], "an existing Python file (relative to the scenario)")
    if issues.items:
        raise ScenarioError([_renamed(issue, renamed) for issue in issues.items])
    return Scenario(table, path)


MAX_SCENARIO_BYTES = 50_000_000
MAX_DEPTH = 32  # no scenario key nests deeper than ~5; a deeper file is hostile (and would exhaust the stack)


def nesting_depth(value: Any) -> int:
    """How deep tables and arrays nest in `value` (iteratively: a hostile file cannot exhaust the stack)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_DEPTH:
            return d
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return deepest


def load_scenario(path: str | Path, overrides: Sequence[str] = ()) -> Scenario:
    path = Path(path)
    try:
        if path.is_dir():
            raise ScenarioError([Issue(str(path), "(file)", "a directory", "a scenario TOML file")])
        _regular_file(path, MAX_SCENARIO_BYTES)
        raw = tomllib.loads(path.read_bytes().decode("utf-8"))
    except RecursionError:
        raise ScenarioError([Issue(str(path), "(syntax)", "(nesting)", f"TOML nested at most {MAX_DEPTH} levels deep")]) from None
    except FileNotFoundError:
        raise ScenarioError([Issue(str(path), "(file)", str(path), "an existing scenario file")]) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError([Issue(str(path), "(encoding)", f"byte 0x{exc.object[exc.start]:02x} at offset {exc.start}",
                                   "a UTF-8 text file (TOML)")]) from None
    except OSError as exc:
        raise ScenarioError([Issue(str(path), "(file)", str(path), f"a readable scenario file ({exc.strerror or exc})")]) from None
    except MemoryError:
        raise ScenarioError([Issue(str(path), "(file)", str(path), "a scenario file that fits in memory")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError([Issue(str(path), "(syntax)", str(exc), "valid TOML")]) from None
    return parse_scenario(raw, path, overrides)
