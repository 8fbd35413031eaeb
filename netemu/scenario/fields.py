"""The tables of a scenario file: links (latency and loss models, jitter, outages), node
behaviour, topologies, and the whole `SCHEMA` with the `[flower]` shorthand.  Latency and
loss models and topologies are looked up in the registry (netemu.plugins: built-in ones
and plug-ins alike, or "package.module:attribute").  A link component's parameters come
from its class's signature and its constructor checks the ranges (one source of truth);
plug-in tables are checked by netemu.scenario.specs."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
from typing import Any

from netemu import plugins
from netemu.engine.net import links as L
from netemu.engine.net.impairments import Latency, Loss
from netemu.engine.net.model import ENGINE_KEYS, QDISCS, TRANSPORT_KEYS, NetModel
from netemu.scenario.limits import MAX_ROUNDS, MAX_RUNS, SEED_MAX, finite
from netemu.scenario.schema import REQUIRED, ArrayOf, Custom, Field, Issue, Issues, Mapping, Section, validate
from netemu.scenario.specs import _params_table, algorithm_table, construct, data_table, named, task_table

__all__ = ["LOG_FORMATS", "MAX_NAME", "SCHEMA", "check_queues", "SHORTHANDS", "renamed", "run_name_ok", "shorthands"]

def _model(what: str, kind: type) -> Any:
    """Checker of a `{model = "...", <params>}` link-component table (`what`: "latency" or "loss").

    Parameter names come from the component's signature; its constructor checks the
    ranges (one source of truth).  An empirical latency takes `samples` inline or a
    `file` of delays (one per line, relative to the scenario; checked at load time).
    """

    def check(value: Any, key: str, issues: Issues) -> Any:
        cls = named(value, key, issues, "model", what, kind, f"{what} model")
        if cls is None:
            return value
        model = value["model"]
        params = {k: v for k, v in value.items() if k != "model"}
        accepted = ["samples", "file"] if cls is L.Empirical else list(inspect.signature(cls).parameters)
        before = len(issues.items)
        for k, v in params.items():
            if k not in accepted:
                issues.add(f"{key}.{k}", v, f"unknown parameter of the {model} {what} model; accepted: {', '.join(accepted)}")
            elif k == "file" and not isinstance(v, str):
                issues.add(f"{key}.{k}", v, "expected a path (string)")
            elif k == "samples" and not (isinstance(v, list) and all(finite(x) for x in v)):
                issues.add(f"{key}.{k}", v, "expected a list of finite delays in seconds")
            elif k not in ("file", "samples") and not finite(v):
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
        construct(L.Jitter, value, key, issues)
    return value


def _outages(value: Any, key: str, issues: Issues) -> Any:
    ok = isinstance(value, list) and all(
        isinstance(w, list) and len(w) == 2 and all(finite(x) for x in w) and 0 <= w[0] < w[1] for w in value
    )
    if not ok:
        issues.add(key, value, "expected a list of [start, end] windows of finite times with 0 <= start < end")
    return value


def _qdisc(value: Any, key: str, issues: Issues) -> Any:
    if value not in QDISCS:
        issues.add(key, value, f"one of {', '.join(QDISCS)}: how this link serves the flows crossing it (absent: the [network]'s qdisc)")
    return value


LOG_FORMATS = ("jsonl", "arrow")


def _log_format(value: Any, key: str, issues: Issues) -> Any:
    """`output.log_format`: one of LOG_FORMATS; "arrow" needs pyarrow, refused here rather than when the run starts."""
    if not isinstance(value, str) or value not in LOG_FORMATS:
        issues.add(key, value, 'one of "jsonl" (JSON lines, messages.jsonl) and "arrow" (Arrow IPC record batches, messages.arrows)')
    elif value == "arrow" and importlib.util.find_spec("pyarrow") is None:
        issues.add(key, value, "the Arrow message log needs pyarrow: pip install 'netemu[export]' (or log_format = \"jsonl\")")
    return value


LINK_FIELDS = {
    "latency": Custom(_model("latency", Latency), {"model": "constant", "delay": 0.0}),
    "jitter": Custom(_jitter, None),
    "loss": Custom(_model("loss", Loss), None),
    "bandwidth": Field(float, 0.0, lambda v: v >= 0, ">= 0 bits/s (0 = unlimited)"),
    "outages": Custom(_outages, []),
    "queue_bytes": Field(float, 0.0, lambda v: v >= 0, ">= 0 bytes that may wait for the link (0 = unlimited)"),
    "duplicate": Field(float, 0.0, lambda v: 0 <= v <= 1, "in [0, 1]: probability that a delivered message arrives twice (netem)"),
    "corrupt": Field(float, 0.0, lambda v: 0 <= v <= 1, "in [0, 1]: probability that a message arrives corrupted (netem)"),
    # absent (None): the [network]'s qdisc; resolves to nothing, so a scenario that does not use it hashes as before
    "qdisc": Custom(_qdisc, None),
}
#: compute-time noise is exp(sigma * z), z a standard normal draw (|z| < 8.3 for 53-bit uniforms): above
#: sigma ~ 85 exp() overflows and the run fails blaming an actor.  10 is far beyond any measured
#: straggler spread (e^10 ~ 22,000-fold at one sigma) and keeps every factor finite (e^83 ~ 1e36).
MAX_SLOWDOWN_SIGMA = 10.0
_DEFAULT = object()
_PARTICIPATION = Field(float, 1.0, lambda v: 0 <= v <= 1, "in [0, 1]")
_SPEED = Field(float, 1.0, lambda v: v > 0, "> 0 work units per second")
_COMPLETENESS = Field(float, 1.0, lambda v: 0 < v <= 1, "in (0, 1]: the fraction of its local work a client completes")


def _number_or_model(plain: Field, models: dict[str, dict[str, str]], what: str, default: Any = _DEFAULT) -> Custom:
    """A `[nodes]` key that is a number (checked by `plain`, resolved as before) or a
    `{model = "...", <params>}` table: `models` maps each model to its parameters and what
    each accepts; the ranges are checked by the model's own constructor (netemu.engine.net.heterogeneity)."""

    def check(value: Any, key: str, issues: Issues) -> Any:
        if not isinstance(value, dict):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return validate(plain, value, key, issues)
            issues.add(key, value, f"expected {plain.describe()}, or a {what} model table {{model = {' | '.join(map(repr, models))}, ...}}")
            return value
        model = value.get("model", REQUIRED)
        if not isinstance(model, str) or model not in models:  # a list or table is no model name (and unhashable)
            issues.add(f"{key}.model", model, f"a {what} model: {', '.join(models)}")
            return value
        accepted = models[model]
        before = len(issues.items)
        for k, v in value.items():
            if k == "model":
                continue
            if k not in accepted:
                issues.add(f"{key}.{k}", v, f"unknown parameter of the {model} {what} model; accepted: {', '.join(accepted)}")
            elif accepted[k] == "path" and not isinstance(v, str):
                issues.add(f"{key}.{k}", v, "expected a path (string), relative to the scenario")
            elif accepted[k] == "list" and not (isinstance(v, list) and v and all(finite(x) and x > 0 for x in v)):
                issues.add(f"{key}.{k}", v, "expected a non-empty list of finite speeds > 0")
            elif accepted[k] not in ("path", "list") and not finite(v):
                issues.add(f"{key}.{k}", v, f"expected a finite number: {accepted[k]}")
        if len(issues.items) == before:
            problem = _model_problem(what, model, {k: v for k, v in value.items() if k != "model"})
            if problem:
                issues.add(key, value, problem)
        return value

    return Custom(check, plain.default if default is _DEFAULT else default)


def _model_problem(what: str, model: str, params: dict) -> str | None:
    """What the model's constructor refuses in `params` (an empirical file is read later), or None."""
    from netemu.engine.net import heterogeneity as H

    if what == "speed" and model == "empirical":
        return None if len(params) == 1 else "an empirical speed model needs exactly one of `samples` or `file`"
    try:
        if what == "speed":
            H.speed_model({"model": model, **params})
        elif what == "completeness":
            if "low" not in params:
                return "low is required: the smallest fraction of its local work a client completes, in (0, 1]"
            H.Completeness(**params)
        elif not all(0 <= params.get(k, 0) <= 1 for k in ("low", "high")) or "low" not in params or "high" not in params:
            return "low and high are both required, each a probability in [0, 1]"
        elif model == "label" and "label" in params and not (type(params["label"]) is int and params["label"] >= 0):
            return f"label must be an integer >= 0 (a class of the data), got {params['label']!r}"
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


#: speed models and their parameters (netemu.engine.net.heterogeneity)
SPEED_MODELS = {
    "pareto": {"alpha": ">= 0.1, the Pareto shape of the slowdown", "speed": "> 0, the fastest speed (default 1)"},
    "zipf": {"s": "in [0, 100], the Zipf exponent (default 1)", "levels": "1 .. 1,000,000 slowdown levels (default 10)",
             "speed": "> 0, the fastest speed (default 1)"},
    "lognormal": {"median": "> 0, the median speed (default 1)", "sigma": f"in [0, {MAX_SLOWDOWN_SIGMA:g}] (default 0.5)"},
    "empirical": {"samples": "list", "file": "path"},
}
PARTICIPATION_MODELS = {"data_size": {"low": "in [0, 1]: the probability of the client with the fewest samples",
                                      "high": "in [0, 1]: the probability of the client with the most samples"},
                        "label": {"low": "in [0, 1]: the probability of a client whose score is 0",
                                  "high": "in [0, 1]: the probability of a client whose score is 1",
                                  "label": "an integer >= 0: the score is the client's share of this label (absent: FLGo's YMF, "
                                           "its smallest label / (classes - 1))"}}
COMPLETENESS_MODELS = {"uniform": {"low": "in (0, 1]: the smallest fraction", "high": "in [low, 1]: the largest fraction (default 1)"}}
BEHAVIOUR_FIELDS = {
    "participation": _number_or_model(_PARTICIPATION, PARTICIPATION_MODELS, "participation"),
    "speed": _number_or_model(_SPEED, SPEED_MODELS, "speed"),
    "slowdown_sigma": Field(float, 0.0, lambda v: 0 <= v <= MAX_SLOWDOWN_SIGMA,
                            f">= 0 and <= {MAX_SLOWDOWN_SIGMA:g} (sigma of the log-normal slowdown factor exp(sigma z))"),
    # absent (None) = 1: a key added later resolves to nothing, so the resolved scenario.toml (and the trace
    # header's scenario_hash) of a scenario that does not use it stays what it was
    "completeness": _number_or_model(_COMPLETENESS, COMPLETENESS_MODELS, "completeness", None),
}
COMPUTE_MODES = ("work", "measured")


MAX_NAME = 100  # run.name is a folder name under runs/ (and a trace header field): one short, printable path component


def run_name_ok(name: str) -> bool:
    """A run name is a name, not a path: empty (the scenario file's name), or one path component
    of at most MAX_NAME printable characters (no NUL, escape sequence or bidi override), without
    a path separator, and not "." or ".."."""
    return name == "" or (len(name) <= MAX_NAME and name.isprintable() and "/" not in name and "\\" not in name
                          and name not in (".", ".."))


#: shared links in front of a star's (or multi_server's) servers: keys of [topology] (netemu.engine.net.topology.behind_routers)
SHARED_LINKS = {
    "server_link": Section(LINK_FIELDS),
    "access_points": Section({"clients_per_ap": Field(int, REQUIRED, lambda v: v >= 1, ">= 1 clients behind each access point"),
                              **LINK_FIELDS}),
}
#: one group of `access_points = [...]`: its access point's clients and link
AP_GROUP = Section({"clients": Field(int, REQUIRED, lambda v: v >= 1, ">= 1 clients behind this access point"), **LINK_FIELDS})


def _ap_groups(groups: list, value: dict, key: str, issues: Issues) -> list:
    """`access_points` as an array: one access point per group, in order, each with its own clients
    and link; the groups' clients add up to each server's."""
    out = [validate(AP_GROUP, g, f"{key}[{i}]", issues) for i, g in enumerate(groups)]
    per_server = value.get("clients", value.get("clients_per_server"))
    counts = [g["clients"] for g in out if isinstance(g, dict) and isinstance(g.get("clients"), int)]
    if not groups:
        issues.add(key, groups, "at least one group {clients = N, <link keys>}")
    elif isinstance(per_server, int) and len(counts) == len(groups) and sum(counts) != per_server:
        issues.add(key, f"{len(groups)} groups of {sum(counts)} clients",
                   f"groups whose clients add up to the {per_server} clients of each server")
    return out


def _topology(value: Any, key: str, issues: Issues) -> Any:
    spec = named(value, key, issues, "kind", "topology", plugins.TopologySpec, "topology")
    if spec is None:
        return value
    shared = {k: value[k] for k in SHARED_LINKS if k in value}
    for k in shared:
        if value["kind"] not in ("star", "multi_server"):
            issues.add(f"{key}.{k}", shared[k], f"only for the star and multi_server topologies (this one is {value['kind']})")
    before = len(issues.items)
    value = validate(Section({"kind": Field(str), **spec.fields}), {k: v for k, v in value.items() if k not in shared}, key, issues)
    if spec.check is not None and isinstance(value, dict) and len(issues.items) == before:
        spec.check(value, key, issues)
    for k, table in shared.items():
        if isinstance(value, dict):
            if k == "access_points" and isinstance(table, list):
                value[k] = _ap_groups(table, value, f"{key}.{k}", issues)
            else:
                value[k] = validate(SHARED_LINKS[k], table, f"{key}.{k}", issues)
    return value


def _network(value: Any, key: str, issues: Issues) -> Any:
    """[network]: NetModel's parameters; a transport key without ``transport = "reliable"`` is refused
    (it would change nothing, and forgetting the transport must not pass silently), and so is an ns-3
    setting away from its default without ``engine = "ns3"``."""
    if isinstance(value, dict) and "queue_disc" in value:  # one key says the queue discipline on both engines: qdisc
        issues.add(f"{key}.queue_disc", value["queue_disc"], 'not a key: the queue discipline is qdisc = "fair" (FqCoDel) or '
                   '"fifo" (DropTail), on either engine')
        value = {k: v for k, v in value.items() if k != "queue_disc"}
    resolved = _params_table(value, key, issues, NetModel, {})
    if isinstance(value, dict) and isinstance(resolved, dict):
        # the keys added with the ns-3 engine resolve to nothing when absent (NetModel's defaults apply), so the
        # resolved scenario.toml (and the trace header's scenario_hash) of a scenario that does not use them stays
        # what it was
        for k in ("engine", "congestion_control", *ENGINE_KEYS):
            if k not in value:
                resolved.pop(k, None)
    if isinstance(value, dict) and isinstance(resolved, dict) and resolved.get("transport") != "reliable":
        for k in TRANSPORT_KEYS:
            if k in value and not (k == "mss" and resolved.get("engine") == "ns3"):  # ns-3's UDP packets carry mss bytes
                issues.add(f"{key}.{k}", value[k], f'only with transport = "reliable" (this [network] has transport = '
                           f'"{resolved.get("transport", "datagram")}")')
    if isinstance(value, dict) and isinstance(resolved, dict):
        # an ns-3 setting away from its default without the ns-3 engine would change nothing: refused (a resolved
        # scenario.toml writes every default, and reads back)
        engine = resolved.get("engine", "flow")
        defaults = {f.name: f.default for f in dataclasses.fields(NetModel)}
        for k in ENGINE_KEYS:
            if k in value and engine != "ns3" and value[k] != defaults[k]:
                issues.add(f"{key}.{k}", value[k], f'only with engine = "ns3" (this [network] has engine = "{engine}")')
    return resolved


def check_queues(table: dict, link_tables: list[tuple[str, dict]], issues: Issues) -> None:
    """`queue_bytes` bounds a link's FIFO of whole messages (``sharing = "none"``) or, under ``sharing =
    "max-min"``, the queue TCP's slow starts overflow (netemu.engine.net.queues): refused there without
    ``transport = "reliable"``, where nothing could overflow it, rather than ignored.  A link's own `qdisc`
    obeys the flow model's rules for the [network]'s: under ``sharing = "none"`` every link is a FIFO of
    whole messages already, and a FIFO shared by TCP windows needs ``transport = "reliable"``."""
    network = table.get("network") or {}
    maxmin, reliable = network.get("sharing") == "max-min", network.get("transport") == "reliable"
    if network.get("engine", "flow") == "flow":
        for where, link in link_tables:
            if link.get("qdisc") == "fair" and not maxmin:
                issues.add(f"{where}.qdisc", "fair", '"fifo" or nothing under sharing = "none" (every link a FIFO of whole '
                           'messages); "fair" needs sharing = "max-min"')
            elif link.get("qdisc") == "fifo" and maxmin and not reliable:
                issues.add(f"{where}.qdisc", "fifo", '"fair" or nothing under sharing = "max-min" with transport = "datagram"; '
                           '"fifo" shares a queue by TCP windows: it needs transport = "reliable"')
    if not maxmin or reliable:
        return
    for where, link in link_tables:
        if link.get("queue_bytes"):
            issues.add(f"{where}.queue_bytes", link["queue_bytes"], 'under sharing = "max-min" only with transport = "reliable" '
                       "(the queue TCP's slow start overflows; a datagram flow has no window)")


SCHEMA = Section(
    {
        "run": Section(
            {
                "name": Field(str, "", run_name_ok, f"naming the run folder runs/NAME: at most {MAX_NAME} printable characters, "
                              "no / or \\, not . or .. (empty: the scenario file's name)"),
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
        "network": Custom(_network, None),  # netemu.engine.net.model
        "links": Mapping(Section(LINK_FIELDS), doc="per link class"),
        "link": ArrayOf(Section({"src": Field(str), "dst": Field(str), **LINK_FIELDS}), doc="per-link overrides"),
        "nodes": Section(
            {
                **BEHAVIOUR_FIELDS,
                "compute": Field(str, None, lambda v: v in COMPUTE_MODES,  # absent (None) = "work", as completeness
                                 'one of "work" (work / speed) and "measured" (seconds per work unit timed on this machine)'),
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
        "data": Custom(data_table, None),  # required unless every algorithm says it needs none (parse_scenario)
        "task": Custom(task_table, None),  # what task-learning algorithms learn (netemu.tasks); default by data kind
        "algorithm": ArrayOf(Custom(algorithm_table), min_items=1),
        "script": Field(str, "", accepts="(path of a Python scenario script, relative to the scenario)"),
        "devices": Section(
            {
                "file": Field(str, "", accepts="(a netemu devices JSON file, relative to the scenario; see netemu devices import)"),
                "bandwidth": Field(bool, True, accepts="(set the clients' link bandwidth from the devices)"),
            }
        ),
        "output": Section({"plots": Field(bool, True), "log": Field(bool, True), "trace": Field(bool, True),
                           "log_format": Custom(_log_format, None)}),  # absent (None) = "jsonl": the resolved scenario as before
        "netemu": Section({"version": Field(str, "", accepts="(written by netemu into run folders)")}),
    }
)


#: top-level tables that stand for one more `[[algorithm]]` entry of that name: `[flower]`
#: (server_app, client_app, run_config, ...) is `[[algorithm]] name = "flower"` with the same keys.
SHORTHANDS = ("flower",)


def shorthands(raw: dict, issues: Issues) -> tuple[dict, dict[str, str]]:
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


def renamed(issue: Issue, renamed: dict[str, str]) -> Issue:
    for key, name in renamed.items():
        if issue.key in (key, key + ".name"):  # the entry, or the algorithm it names
            return dataclasses.replace(issue, key=name)
        if issue.key.startswith(key + "."):
            return dataclasses.replace(issue, key=name + issue.key[len(key):])
    return issue
