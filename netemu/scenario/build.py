"""Build Worlds from a validated Scenario: one per (Monte Carlo run, algorithm).

All algorithms of one Monte Carlo run get the same run seed, hence the same topology,
data, participation draws and link fates (common random numbers).  The run seed is
`run_seed(seed, run)`, a BLAKE2b derivation documented in docs/formats.md.
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from netemu import plugins
from netemu.config import ConfigError
from netemu.data.base import part_sizes
from netemu.devices import attach_devices, read_devices
from netemu.errors import InputError
from netemu.log import MessageLog
from netemu.engine.net import links as L
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel
from netemu.engine.net.heterogeneity import participation_by_label, participation_by_size, speed_model
from netemu.engine.net.network import Fates, NodeBehaviour, draw_now
from netemu.engine.net.routing import ROUTER_ROLES
from netemu.engine.rng import Streams
from netemu.scenario.files import MAX_DATA_FILE_BYTES, regular_file
from netemu.scenario.graph import build_graph, release
from netemu.scenario.load import Scenario, match_nodes
from netemu.scenario.settings import Algorithm, thawed
from netemu.engine.world import World, fewer_collections

__all__ = [
    "DAY", "ScriptError", "build_links", "build_task", "build_world", "learning", "load_script", "run_horizon", "run_seed", "script_hash",
]

DAY = 86400.0  # virtual seconds; the automatic horizon allows one per round


def run_seed(seed: int, run: int) -> int:
    """The root seed of Monte Carlo run `run` (run 0 uses `seed` itself)."""
    if run == 0:
        return seed
    digest = hashlib.blake2b(f"netemu-run/{seed}/{run}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def _component(table: dict | None, model: Callable[[str], type], sc: Scenario) -> Any:
    """The link component a `{model = ..., <params>}` table describes (`model`: its registry lookup)."""
    if not table:
        return None
    params = {k: v for k, v in table.items() if k != "model"}
    cls = model(table["model"])
    if cls is L.Empirical and "file" in params:
        return L.Empirical.from_file(sc.resolve(params["file"]))
    return cls(**params)


def devices_of(sc: Scenario, graph: nx.DiGraph) -> dict[str, dict]:
    """The device of each client (i-th client, in topology order, gets device i mod n)."""
    if not sc.settings.devices.file:
        return {}
    devices = read_devices(sc.resolve(sc.settings.devices.file))["devices"]
    clients = [n for n, r in graph.nodes(data="role") if r == "client"]
    return {c: devices[i % len(devices)] for i, c in enumerate(clients)}


def build_links(sc: Scenario, graph: nx.DiGraph) -> dict[tuple[str, str], L.Link]:
    """A Link per edge: its class's table, then overrides; with a devices file, a client's
    links take the device's bandwidth.  The links of a class without overrides share one
    set of components (`Link(shared=True)`: each link copies a stateful one before its
    first draw), so a million links do not hold a million copies of the same models; what
    a class's table says is read once per class, not once per link."""
    overrides = {(o["src"], o["dst"]): thawed(o) for o in sc.settings.links.overrides}
    devices = devices_of(sc, graph) if sc.settings.devices.bandwidth else {}
    classes = {cls: thawed(t) for cls, t in sc.settings.links.by_class().items()}
    groups = [{k: x for k, x in thawed(g).items() if k != "clients"} for g in sc.settings.links.ap_groups()]
    by_class: dict[Hashable, L.Link] = {}  # a class's template link, or (class, j)'s for the links of uneven access point j
    out = {}
    for u, v, cls in graph.edges(data="link_class"):
        override = overrides.get((u, v)) if overrides else None
        key: Hashable = cls
        if groups and cls in ("ap_uplink", "ap_downlink"):  # an uneven access point: its group's keys over its class's
            key = (cls, T.access_point_index(u if cls == "ap_uplink" else v))
        template = by_class.get(key) if override is None else None
        if template is None:
            base = classes.get(cls, {})
            if isinstance(key, tuple):
                base = {**base, **groups[key[1]]}
            if override is not None:
                base = {**base, **{k: x for k, x in override.items() if k not in ("src", "dst")}}
            latency, jitter, loss, bandwidth, outages, queue_bytes, duplicate, corrupt = _link_spec(sc, base)
            template = L.Link(latency, jitter=jitter, loss=loss, bandwidth=bandwidth, outages=outages, link_class=cls, shared=True,
                              queue_bytes=queue_bytes, duplicate=duplicate, corrupt=corrupt, qdisc=base.get("qdisc"))
            if override is None:
                by_class[key] = template
        bandwidth = None
        if devices:
            bandwidth = next((devices[n]["bandwidth"] for n in (u, v) if "bandwidth" in devices.get(n, {})), None) or None
        # every link its own twin of its class's template (an overridden link's template is its own: used once)
        out[(u, v)] = template.twin(bandwidth) if override is None or bandwidth is not None else template
    return out


def _link_spec(sc: Scenario, table: dict) -> tuple:
    """(latency, jitter, loss, bandwidth, outages, queue_bytes, duplicate, corrupt) of a link class's (or an overridden link's) table."""
    jitter = table.get("jitter")
    return (_component(table.get("latency"), plugins.latency_model, sc), L.Jitter(**jitter) if jitter else None,
            _component(table.get("loss"), plugins.loss_model, sc), table.get("bandwidth") or None,
            [tuple(w) for w in table.get("outages", [])], table.get("queue_bytes") or None, table.get("duplicate", 0.0),
            table.get("corrupt", 0.0))


def build_behaviours(sc: Scenario, graph: nx.DiGraph, streams: Streams | None = None, data: Any = None) -> dict[str, NodeBehaviour]:
    """Each node's behaviour: [nodes], then its groups (later groups win), then its device's speed.

    A speed model draws each node's speed once, from the keyed stream ``speeds`` at the node's
    name (`streams`: the run's; run 0's when not given), so every algorithm of a run meets the
    same population; a participation model reads each client's sample count from `data`."""
    nodes = sc.settings.nodes
    tables = [nodes.default, *nodes.groups]
    source = dict.fromkeys(graph.nodes, 0)  # node -> index in `tables` of the behaviour that sets its own
    for i, group in enumerate(nodes.groups, 1):  # later groups win
        for pattern in group.members:
            for n in match_nodes(pattern, list(graph.nodes)):
                source[n] = i
    device_speed = {name: d["speed"] for name, d in devices_of(sc, graph).items() if "speed" in d}  # online intervals: attach_devices
    crashes: dict[str, list] = {}
    for c in nodes.crashes:
        crashes.setdefault(c.node, []).append((c.at, c.recover))
    speed_draws = None
    models: dict[int, Any] = {}  # table index -> its speed model or participation map, made once
    probs: dict[int, dict[str, float]] = {}
    alike: dict[tuple, NodeBehaviour] = {}  # nodes with the same settings share one (frozen) behaviour
    # table index -> the behaviour of its nodes that have no device speed and no crash, when the table
    # draws nothing per node: what the loop below would make for each again (most of a large population)
    plain: dict[int, NodeBehaviour] = {}
    out = {}
    for n, i in source.items():
        b = plain.get(i)
        if b is not None and n not in device_speed and n not in crashes:
            out[n] = b
            continue
        t = tables[i]
        speed, participation, completeness = t.speed, t.participation, t.completeness
        if isinstance(speed, Mapping):
            if i not in models:
                models[i] = _speed_model(sc, thawed(speed), "nodes" if i == 0 else f"nodes.group[{i - 1}]")
            if speed_draws is None:
                speed_draws = (streams or Streams(sc.settings.run.seed)).keyed("speeds")
            speed = models[i].draw(speed_draws.uniform(n))
        if n in device_speed:
            speed = device_speed[n]
        if isinstance(participation, Mapping):
            if i not in probs:
                probs[i] = _participation(sc, data, thawed(participation), "nodes" if i == 0 else f"nodes.group[{i - 1}]")
            participation = probs[i].get(n, 1.0)  # a node without data (a server) always takes part
        fraction = ((1.0, 1.0) if completeness is None else (completeness, completeness) if not isinstance(completeness, Mapping)
                    else (completeness["low"], completeness.get("high", 1.0)))
        crash = tuple(crashes.get(n, ()))
        s = {"participation": participation, "speed": speed, "slowdown_sigma": t.slowdown_sigma}
        key = (*((type(v), v) for v in s.values()), crash, fraction)
        b = alike.get(key)
        if b is None:
            b = alike[key] = NodeBehaviour(**s, crashes=crash, completeness=fraction)
        if not (crash or n in device_speed or isinstance(t.speed, Mapping) or isinstance(t.participation, Mapping)):
            plain[i] = b
        out[n] = b
    return out


def _speed_model(sc: Scenario, table: dict, where: str) -> Any:
    """The speed model of a `speed = {model = ...}` table; an empirical file is read bounded (`regular_file`)."""
    if table["model"] == "empirical" and "file" in table:
        path = sc.resolve(table["file"])
        try:
            regular_file(path, MAX_DATA_FILE_BYTES)
            return speed_model(table, sc.resolve)
        except (OSError, ValueError) as exc:
            raise InputError(f"{sc.path}: {where}.speed.file = {table['file']!r}: a readable file of speeds (one per line): {exc}") from None
    return speed_model(table)


def _participation(sc: Scenario, data: Any, table: dict, where: str) -> dict[str, float]:
    """Each client's participation probability under a `participation = {model = ...}` table."""
    if table["model"] == "data_size":
        return participation_by_size(sample_counts(sc, data), table["low"], table["high"])
    labels, classes = client_labels(sc, data)
    label = table.get("label")
    if label is not None and label >= classes:
        raise InputError(f"{sc.path}: {where}.participation.label = {label}: a class of the data, 0 .. {classes - 1}")
    return participation_by_label(labels, classes, table["low"], table["high"], label)


#: the built-in data kinds whose clients hold class labels (participation by label)
LABELLED_KINDS = ("digits", "digits_fl", "linear with labels = \"binary\"")


def client_labels(sc: Scenario, data: Any) -> tuple[dict[str, Any], int]:
    """Each client's training labels (integers 0 .. classes − 1) and the number of classes:
    `digits_fl` (its `classes`), `digits` (binary tasks: 2), `linear` with binary labels (2).
    An InputError for data without class labels per client."""
    kind, params = (sc.settings.data.kind, sc.settings.data.params) if sc.settings.data else (None, {})
    parts = getattr(data, "parts", None)
    classes = getattr(data, "classes", None)
    if classes is None and (getattr(data, "loss", None) == "logistic" or (kind == "linear" and params.get("labels") == "binary")):
        classes = 2
    if not isinstance(parts, dict) or not isinstance(classes, int):
        raise InputError(f"{sc.path}: nodes.participation: model = \"label\" needs each client's class labels, from a data kind "
                         f"with labels per client ({', '.join(LABELLED_KINDS)}); data.kind = {kind!r} has none")
    return {name: np.asarray(part[1]).astype(np.int64) for name, part in parts.items()}, classes


def sample_counts(sc: Scenario, data: Any) -> dict[str, int]:
    """Each client's number of training samples, from the data kind's partition (`data.parts`:
    client -> (X, y)); an InputError when the data has no partition to read them from."""
    parts = getattr(data, "parts", None)
    if not isinstance(parts, Mapping):
        kind = sc.settings.data.kind if sc.settings.data else None
        raise InputError(f"{sc.path}: nodes.participation: model = \"data_size\" needs each client's sample count, from a data kind "
                         f"that partitions samples among clients (linear, clustered, federated); data.kind = {kind!r} has none")
    return dict(zip(parts, part_sizes(parts, parts), strict=True))


def run_horizon(sc: Scenario) -> float:
    """The virtual time at which a run is stopped as "horizon reached": `run.max_time`, or
    (max_time = 0) per round one virtual day, or twice the algorithms' longest deadline
    (a parameter its spec declares one, netemu.config.deadline) when that is longer, after
    the last scheduled event of the scenario (crash, recovery, outage end, `until`, the
    devices' horizon).  It stops runs whose actors only wait on timers that lead nowhere."""
    s = sc.settings
    if s.run.max_time > 0:
        return s.run.max_time
    times = [s.run.until, *(c.at for c in s.nodes.crashes), *(c.recover for c in s.nodes.crashes if c.recover is not None), *s.links.outage_ends()]
    if s.devices.file:
        times.append(read_devices(sc.resolve(s.devices.file))["horizon"])
    deadlines = [d for a in s.algorithms for d in a.deadlines]
    return max(times) + max(DAY, 2 * max(deadlines, default=0.0)) * s.run.rounds


class ScriptError(InputError):
    """A scenario script that cannot be loaded or whose setup() raised: file, line, error."""


def script_hash(path: Path) -> str:
    """The BLAKE2b hash (16 bytes, hex) of a script file, or of a folder's Python files (their
    relative paths and bytes, in sorted order), printed before the code is executed."""
    path = Path(path)
    h = hashlib.blake2b(digest_size=16)
    if not path.is_dir():
        h.update(path.read_bytes())
        return h.hexdigest()
    for f in sorted(path.rglob("*.py")):
        h.update(str(f.relative_to(path)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _where(exc: BaseException, path: Path) -> str:
    """`file:line` of the innermost frame of `exc` in the script `path` (or just the file)."""
    target = str(Path(path).resolve())
    if isinstance(exc, SyntaxError) and exc.filename and str(Path(exc.filename).resolve()) == target:
        return f"{path}:{exc.lineno}"
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if str(Path(f.filename).resolve()) == target]
    return f"{path}:{lines[-1]}" if lines else str(path)


def load_script(path: Path) -> Callable[[World], None]:
    """The `setup(world)` function of a Python scenario script (this executes the script).

    The script's source is compiled here and executed in a fresh module: no bytecode cache is
    read (a stale `__pycache__/*.pyc` beside the script would run instead of the hashed source
    netemu announced, `script_hash`) and none is written."""
    import types

    try:
        try:
            source = Path(path).read_bytes()
        except OSError as exc:
            raise ScriptError(f"{path}: cannot read the scenario script: {exc.strerror or exc}") from None
        module = types.ModuleType(f"netemu_scenario_{Path(path).stem}")
        module.__file__ = str(path)
        code = compile(source, str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # the user's script, announced with its hash by `netemu run`
    except ScriptError:
        raise
    except SystemExit as exc:
        raise ScriptError(f"{_where(exc, path)}: the scenario script called sys.exit({exc.code!r})") from None
    except Exception as exc:  # noqa: BLE001 - any error in user code is reported with its place
        raise ScriptError(f"{_where(exc, path)}: the scenario script raised {type(exc).__name__}: {exc}") from None
    setup = getattr(module, "setup", None)
    if not callable(setup):
        raise ScriptError(f"{path}: a scenario script must define `def setup(world):`")

    def checked_setup(world: World) -> None:
        try:
            setup(world)
        except SystemExit as exc:
            raise ScriptError(f"{_where(exc, path)}: setup(world) called sys.exit({exc.code!r})") from None
        except Exception as exc:  # noqa: BLE001 - user code: report its file and line
            raise ScriptError(f"{_where(exc, path)}: setup(world) raised {type(exc).__name__}: {exc}") from None

    return checked_setup


def build_data(sc: Scenario, graph: nx.DiGraph, streams: Streams) -> Any:
    """The scenario's data (None without a [data] table: its algorithms need none)."""
    if sc.settings.data is None:
        return None
    clients = [n for n, r in graph.nodes(data="role") if r != "server" and r not in ROUTER_ROLES]
    return plugins.data_kind(sc.settings.data.kind).make(sc.data_params(), clients, streams)


def build_task(sc: Scenario, data: Any, streams: Streams) -> Any:
    """The run's task (netemu.tasks) over its `data`, for the algorithms that learn one."""
    task = sc.settings.task
    if task is None:
        raise InputError(f"{sc.path}: task: required for an algorithm that learns a task (a [task] table with a name)")
    try:
        return plugins.task(task.name).make(sc.task_params(), data, streams)
    except ConfigError as exc:
        raise InputError(f"{sc.path}: task.{exc.field} ({task.name}): {exc.accepts}") from None


def learning(sc: Scenario, spec: Any, graph: nx.DiGraph, streams: Streams) -> Any:
    """What `spec.build` learns from: the run's task (a task-learning family), else its data."""
    data = build_data(sc, graph, streams)
    return build_task(sc, data, streams) if spec.task else data


def build_world(
    sc: Scenario,
    algorithm: int,
    run: int,
    *,
    log: MessageLog | None = None,
    fates: Fates = draw_now,
    setup: Callable[[World], None] | None = None,
    work_seconds: float = 1.0,
    graph: nx.DiGraph | None = None,
) -> World:
    """The World of Monte Carlo run `run` for algorithm entry `algorithm`, with its actors.

    Built with the garbage collector's thresholds raised (`fewer_collections`: a third of
    the build of a 100,000-client world went to collections that found nothing).  The
    world's graph is emptied once built (`release`), so it does not wait for a full
    collection.  `work_seconds` is the seconds a work unit takes at speed 1 (the calibration
    of `[nodes] compute = "measured"`, netemu.run.calibration).  `graph`: the run's topology
    when the caller has already built it (`build_graph` with the run's streams: the runner's,
    made for the trace's fingerprint), so that it is not built twice; it is emptied too."""
    with fewer_collections():
        return _world(sc, algorithm, run, log, fates, setup, work_seconds, graph)


def _world(sc: Scenario, algorithm: int, run: int, log: MessageLog | None, fates: Fates,
           setup: Callable[[World], None] | None, work_seconds: float, graph: nx.DiGraph | None) -> World:
    streams = Streams(run_seed(sc.settings.run.seed, run))
    if graph is None:
        graph = build_graph(sc, streams)
    entry = sc.settings.algorithms[algorithm]
    spec = plugins.algorithm(entry.name)
    try:
        params = sc.algorithm_params(algorithm)
        data = learning(sc, spec, graph, streams)  # before the world: a participation model reads the clients' sample counts
    except ConfigError as exc:
        raise _entry_error(sc, algorithm, entry, exc) from None
    world = World(
        graph,
        seed=streams.seed,
        links=build_links(sc, graph),
        behaviours=build_behaviours(sc, graph, streams, data),
        log=log,
        fates=fates,
        model=NetModel(**thawed(sc.settings.network or {})),
        work_seconds=work_seconds,
    )
    if sc.settings.devices.file:  # offline outside each device's online intervals (periodic traces repeat)
        attach_devices(world, devices_of(sc, graph), str(sc.resolve(sc.settings.devices.file)))
    # the World keeps what it needs of the graph (the nodes' attribute dicts, its own topology): emptied
    # before the actors are made, so that the two are never held at once (~1 kB per node)
    release(graph)
    del graph
    try:
        spec.build(world, params, data, sc.settings.run.rounds)
    except ConfigError as exc:  # a requirement only the built world can check: name the scenario entry
        raise _entry_error(sc, algorithm, entry, exc) from None
    if setup is not None:
        setup(world)
    return world


def _entry_error(sc: Scenario, algorithm: int, entry: Algorithm, exc: ConfigError) -> InputError:
    where = "run.rounds" if exc.field == "rounds" else f"algorithm[{algorithm}].{exc.field}"
    return InputError(f"{sc.path}: {where} ({entry.label}): {exc.accepts}")
