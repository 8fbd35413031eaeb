"""The checks that need the scenario's topology built: connectivity, link classes and node
names the tables refer to (names, globs or ranges: `match_nodes`), roles, and each
algorithm's own requirements (graph shape, data, rounds)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Any

import networkx as nx

from netemu.algorithms.base import AlgorithmSpec, Setting
from netemu.engine.net.routing import ROUTER_ROLES
from netemu.engine.net.topology import logical
from netemu.scenario.schema import REQUIRED, Issues
from netemu.scenario.specs import task_params

__all__ = ["MAX_HOPS", "check_graph", "check_heterogeneity", "match_nodes"]

_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")


def match_nodes(pattern: str, names: list[str]) -> list[str]:
    """Nodes matching `pattern`: a name, a glob (`client-1*`) or a numeric range
    (`client-{0..63}`, both ends included), in the order of `names`.

    A range is matched, never expanded: `client-{0..99999999999}` is one regular expression
    (`_numbers`) tried on the topology's names, not 10^11 strings."""
    if _RANGE.search(pattern) is None:
        return fnmatch.filter(names, pattern)
    parts, at = [], 0
    for m in _RANGE.finditer(pattern):
        parts += [_glob(pattern[at : m.start()]), _numbers(int(m.group(1)), int(m.group(2)))]
        at = m.end()
    regex = re.compile("".join([*parts, _glob(pattern[at:])]), re.DOTALL)
    return [n for n in names if regex.fullmatch(n)]


def _numbers(lo: int, hi: int) -> str:
    """A regular expression of the integers lo..hi as `str` writes them (no leading zeros),
    a few alternatives per digit: `{0..99999999999}` is a short pattern, not 10^11 names."""
    if lo > hi:
        return "(?!)"
    parts = []
    for digits in range(len(str(lo)), len(str(hi)) + 1):
        a, b = max(lo, 10 ** (digits - 1) if digits > 1 else 0), min(hi, 10**digits - 1)
        parts += _same_length(str(a), str(b))
    return "(?:" + "|".join(parts) + ")"


def _same_length(a: str, b: str) -> list[str]:
    """Patterns of the numbers a..b, written with the same number of digits (a <= b)."""
    if len(a) == 1:
        return [f"[{a}-{b}]"]
    if a[0] == b[0]:
        return [a[0] + p for p in _same_length(a[1:], b[1:])]
    n, out, tail = len(a) - 1, [], []
    first, last = a[0], b[0]
    if a[1:] != "0" * n:  # a's block is partial
        out = [a[0] + p for p in _same_length(a[1:], "9" * n)]
        first = str(int(a[0]) + 1)
    if b[1:] != "9" * n:  # b's block is partial
        tail = [b[0] + p for p in _same_length("0" * n, b[1:])]
        last = str(int(b[0]) - 1)
    if first <= last:
        out.append(f"[{first}-{last}][0-9]{{{n}}}")
    return out + tail


def _glob(text: str) -> str:
    """The regular expression of a glob piece (fnmatch's, without its end anchor)."""
    return fnmatch.translate(text).removeprefix("(?s:").removesuffix(")\\Z") if text else ""


def _check_links(table: dict, graph: nx.DiGraph, issues: Issues) -> None:
    """A [[link]] override names a link of the built graph (physical edges: with routers, a client's
    link ends at its access point or router, not at the server); anything else would be ignored."""
    for i, ov in enumerate(table["link"]):
        if not isinstance(ov, dict):
            continue
        src, dst = ov.get("src"), ov.get("dst")
        if src not in graph or dst not in graph or graph.has_edge(src, dst):
            continue  # a missing node is reported at link[i].src / .dst
        out = [f"{src} -> {v}" for v in sorted(graph.successors(src))[:5]]
        into = [f"{u} -> {dst}" for u in sorted(graph.predecessors(dst))[:5]]
        issues.add(f"link[{i}]", f"{src} -> {dst}",
                   f"{src} -> {dst} is not a link of the topology; links from {src}: {', '.join(out) or 'none'}; "
                   f"links to {dst}: {', '.join(into) or 'none'}")


def _check_nodes(table: dict, graph_nodes: list[str], graph_classes: set[str], issues: Issues, routers: frozenset[str] = frozenset()) -> None:
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
        elif crash.get("node") in routers:
            issues.add(f"nodes.crash[{i}].node", crash.get("node"), "a node that runs an actor (a router does not crash: give its links outages)")
        if crash.get("recover", -1) >= 0 and crash["recover"] <= crash.get("at", 0):
            issues.add(f"nodes.crash[{i}].recover", crash["recover"], f"after the crash time at = {crash['at']}")


def _check_requirements(table: dict, i: int, spec: AlgorithmSpec, params: Any, graph: nx.DiGraph, issues: Issues,
                        features: Callable[[], int | None] | None = None) -> None:
    """The algorithm's own requirements (graph shape, data, rounds), each at the key it concerns."""
    alg = table["algorithm"][i]
    setting = Setting(graph, params, table["data"] or {}, table["run"]["rounds"], features, task_params(table) if spec.task else None)
    for req in spec.unmet(setting):
        value: Any = table
        for part in req.key.split("."):
            value = value.get(part, REQUIRED) if isinstance(value, dict) else REQUIRED
        issues.add(req.key, value, f"algorithm[{i}] = {alg['name']!r} needs {req.needs}")


def check_graph(table: dict, graph: nx.DiGraph, specs: list[AlgorithmSpec], params: dict[int, Any], issues: Issues,
                features: Callable[[], int | None] | None = None) -> None:
    """What needs the topology: connected, link classes and node names that exist, the roles
    each algorithm needs, and its own requirements (for the entries whose params were built;
    `features()` is the data's feature count from its files, for `Setting.features`)."""
    if not nx.is_weakly_connected(graph):
        parts = sorted((sorted(c) for c in nx.weakly_connected_components(graph)), key=len)
        issues.add("topology", table["topology"], f"a connected graph; this one falls into {len(parts)} parts (smallest: {', '.join(parts[0][:5])})")
    classes = {c for _, _, c in graph.edges(data="link_class")}
    _check_nodes(table, sorted(graph.nodes), classes, issues, frozenset(n for n, r in graph.nodes(data="role") if r in ROUTER_ROLES))
    _check_links(table, graph, issues)
    if not _check_path_lengths(table, graph, issues):
        return  # the actors' neighbours through routers (`logical`) would cost as much as the paths
    graph = logical(graph)  # routers forward: the roles and shapes algorithms need are the actors'
    roles = {r for _, r in graph.nodes(data="role")}
    for i, (alg, spec) in enumerate(zip(table["algorithm"], specs)):
        need = set(spec.roles)
        if not need <= roles:
            issues.add(f"algorithm[{i}].name", alg["name"], f"a topology with nodes of role {', '.join(sorted(need))} (this one has {', '.join(sorted(roles))})")
        elif i in params:
            _check_requirements(table, i, spec, params[i], graph, issues, features)


#: the most hops (links) a message may cross between two actors: Linux's default IP TTL (64), the most
#: routers a packet from a Linux host passes.  Every hop costs the emulator work per message, so a
#: path of thousands of routers would make every message that slow.
MAX_HOPS = 64


def _check_path_lengths(table: dict, graph: nx.DiGraph, issues: Issues) -> bool:
    """Refuse a topology whose actors are more than MAX_HOPS links apart through routers (False then).
    The longest router path between two routers that have actors attached is found by a double sweep
    of breadth-first searches per router component: exact on chains and trees (the shapes that make
    long paths), a lower bound on meshes.  Linear in the topology's size."""
    routers = {n for n, r in graph.nodes(data="role") if r in ROUTER_ROLES}
    if len(routers) < MAX_HOPS - 1:  # no router path can be long enough
        return True
    fabric: dict[str, list[str]] = {r: [] for r in routers}  # routers joined by links, taken both ways
    edge = set()  # routers an actor is linked to
    for u, v in graph.edges():
        if u in routers and v in routers:
            fabric[u].append(v)
            fabric[v].append(u)
        elif u in routers or v in routers:
            edge.add(u if u in routers else v)
    seen: set[str] = set()
    for start in sorted(edge):
        if start in seen:
            continue
        far, _, component = _farthest(fabric, start, edge)
        seen |= component
        other, hops, _ = _farthest(fabric, far, edge)
        if hops + 2 > MAX_HOPS:  # + the links from an actor to the first router and from the last one to an actor
            where = "topology.file" if table["topology"].get("kind") == "graphml" else "topology"
            issues.add(where, table["topology"].get("file") or table["topology"],
                       f"actors at most {MAX_HOPS} hops apart (Linux's default IP TTL); the routers {far} and {other} "
                       f"are {hops} hops apart, so a message between their actors would cross {hops + 2} links")
            return False
    return True


def _farthest(fabric: dict[str, list[str]], source: str, targets: set[str]) -> tuple[str, int, set[str]]:
    """The router of `targets` farthest from `source` (the first found of equals), its distance, and
    every router reached (the component), by one breadth-first search."""
    best, dist, depth = source, 0, 0
    reached, frontier = {source}, [source]
    while frontier:
        depth += 1
        nxt = []
        for r in frontier:
            for w in fabric[r]:
                if w not in reached:
                    reached.add(w)
                    nxt.append(w)
                    if w in targets and depth > dist:
                        best, dist = w, depth
        frontier = nxt
    return best, dist, reached


def _families_with(attr: str) -> str:
    from netemu import plugins

    reg = plugins.registry()
    names = sorted(n for n, spec in reg.names("algorithm").items() if getattr(spec, attr, None))
    return ", ".join(names) or "none"


#: built-in data kinds whose clients hold no class labels (a plug-in kind is checked when its data is built)
_UNLABELLED = ("clustered_linear", "online")


def _labelled(data: dict | None) -> bool:
    """Whether a [data] table may give class labels per client."""
    if data is None:
        return False
    kind = data.get("kind")
    return not (kind in _UNLABELLED or (kind == "linear" and data.get("labels", "real") != "binary"))


def check_heterogeneity(table: dict, specs: list[AlgorithmSpec], issues: Issues) -> None:
    """The [nodes] keys an algorithm family must support: partial work (`completeness` below 1
    needs `AlgorithmSpec.partial_work`), measured compute (`compute = "measured"` needs
    `AlgorithmSpec.step_cost`); and participation by data size needs a [data] table."""
    nodes = table["nodes"]
    tables = [("nodes", nodes), *((f"nodes.group[{i}]", g) for i, g in enumerate(nodes["group"]) if isinstance(g, dict))]
    for where, t in tables:
        c = t.get("completeness")
        if c is not None and c != 1.0:
            for i, (alg, spec) in enumerate(zip(table["algorithm"], specs)):
                if not spec.partial_work:
                    issues.add(f"{where}.completeness", c, f"1 for algorithm[{i}] = {alg['name']!r}, which does its whole local work "
                               f"every round; partial work is honoured by: {_families_with('partial_work')}")
        p = t.get("participation")
        if isinstance(p, dict) and p.get("model") == "data_size" and table["data"] is None:
            issues.add(f"{where}.participation", p, "a [data] table: model = \"data_size\" reads each client's sample count from it")
        if isinstance(p, dict) and p.get("model") == "label" and not _labelled(table["data"]):
            issues.add(f"{where}.participation", p, "a [data] kind with class labels per client (digits, digits_fl, linear with "
                       "labels = \"binary\"): model = \"label\" reads each client's labels from it")
    if nodes.get("compute") == "measured":
        for i, (alg, spec) in enumerate(zip(table["algorithm"], specs)):
            if spec.step_cost is None:
                issues.add("nodes.compute", "measured", f"\"work\" for algorithm[{i}] = {alg['name']!r}: it has no local step to time "
                           f"(AlgorithmSpec.step_cost); \"measured\" is supported by: {_families_with('step_cost')}")
