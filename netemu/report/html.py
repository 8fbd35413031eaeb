"""`netemu report`: one self-contained HTML page about one or more run folders.

The page needs no network access: its styles, its small hand-written script (inline SVG
charts with hover and zoom; netemu/report/_assets.py) and its data are inline.  It stays
usable for big runs because everything is aggregated here, in Python, in one streaming
pass over each message log: only summaries (curves, traffic per link class, delay
histograms, per-actor figures, privacy) and one bounded timeline window are embedded.

Everything that comes from a run folder (scenario names and descriptions, actor names,
message kinds, algorithm labels, the scenario text) is untrusted: HTML text is escaped with
`html.escape`, and the embedded JSON escapes `<`, `>`, `&`, U+2028 and U+2029 so that no
string can close its <script> block (issue 19, item 4).

This module collects a run folder (`collect`) and writes the page (`write_report`); the
timeline window is netemu/report/window.py, the HTML netemu/report/page.py.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import re
import tomllib
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from netemu.errors import LogError, NetemuError, ReportError, writing
from netemu.report.logtools import log_path, read
from netemu.report import read_metrics
from netemu.report.activity import Lifecycle, activity
from netemu.report.folders import run_folders
from netemu.report.page import MANY_ACTORS, embed_json, render
from netemu.report.target import Target
from netemu.report.series import add_bytes, curve_data, privacy_curves, report_rounds, thin_marks
from netemu.report.selection import check_selection
from netemu.report.window import Timeline, Window, lane_key, natural_key
from netemu.report.traffic import Quantiles, Traffic
from netemu.report.usage import Usage

__all__ = ["ReportError", "Window", "actor_filter", "collect", "embed_json", "natural_key", "render", "write_report"]

TOP_SLOWEST = 20            # rows of the slowest-actors table
HIST_BINS = 30              # bins of the per-actor histograms
DEADLINE_PARAM = re.compile(r"(time|deadline|timeout)$")  # algorithm parameters drawn as deadlines after each round's start
MAX_SCENARIO_CHARS = 100_000
DEFAULT_WINDOW = Window()   # the timeline window when none is given (frozen: one shared default)


# ------------------------------------------------------------------ traffic


def _delay_stats(q: Quantiles) -> dict:
    """What the page shows of a delay sketch: exact count, mean, min and max; p50/p90/p99 and
    the CDF from the same sketch `netemu log summary` uses (1 % relative accuracy)."""
    if not q.count:
        return {}
    return {"count": q.count, "mean": q.mean, "min": q.min, "max": q.max,
            "p50": q.quantile(0.5), "p90": q.quantile(0.9), "p99": q.quantile(0.99), "cdf": q.cdf()}


def _traffic_dict(tr: Traffic, runs: int) -> dict:
    return {**tr.counts(), "bytes_per_run": tr.bytes / runs if runs else 0.0, "delay": _delay_stats(tr.delays)}


# ------------------------------------------------------------------ one run folder


def _read_summary(run_dir: Path) -> dict:
    path = run_dir / "summary.json"
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a readable summary ({exc})") from None
    except RecursionError:
        raise ReportError(f"{path}: not a readable summary (JSON nested too deep to decode)") from None
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    _check_summary(path, doc)
    return doc


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _dict_of(v: object, ok) -> bool:
    return isinstance(v, dict) and all(ok(x) for x in v.values())


# The summary fields the report reads structurally, and what each must be (null = absent);
# every other field is only shown, as escaped text.
_SUMMARY_SHAPES: dict[str, tuple[Any, str]] = {
    "algorithms": (lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v), "a list of algorithm names"),
    "virtual_time": (lambda v: _dict_of(v, lambda t: _number(t) or (isinstance(t, list) and all(_number(x) for x in t))),
                     "an object: algorithm -> list of end times per run (numbers)"),
    "final": (lambda v: _dict_of(v, lambda m: isinstance(m, dict)), "an object: algorithm -> {metric: value}"),
    "privacy": (lambda v: _dict_of(v, lambda c: _dict_of(c, lambda x: isinstance(x, dict))),
                "an object: algorithm -> client -> {rho_total, epsilon, delta}"),
    "warnings": (lambda v: isinstance(v, list), "a list of warnings"),
}


def _check_summary(path: Path, doc: dict) -> None:
    """Refuse a summary.json whose structural fields have the wrong shape (a shared file may be damaged)."""
    for key, (ok, accepted) in _SUMMARY_SHAPES.items():
        value = doc.get(key)
        if value is not None and not ok(value):
            shown = json.dumps(value, default=str)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise ReportError(f"{path}: {key!r} = {shown}: expected {accepted}")


def _read_scenario(run_dir: Path) -> tuple[str, dict]:
    path = run_dir / "scenario.toml"
    if not path.is_file():
        return "", {}
    text = path.read_text(errors="replace")
    try:
        table = tomllib.loads(text)
    except (ValueError, RecursionError):  # malformed, nested too deep, an integer too long: shown as text only
        table = {}
    if len(text) > MAX_SCENARIO_CHARS:
        text = text[:MAX_SCENARIO_CHARS] + f"\n… (cut at {MAX_SCENARIO_CHARS} characters)"
    return text, table


def actor_filter(pattern: str | None) -> Callable[[str], bool] | None:
    """`--actors PATTERN`: comma-separated globs (`server,client-1?`); an actor is kept when one
    matches its name.  The answer per name is cached: the report asks once per record."""
    if not pattern:
        return None
    globs = [g.strip() for g in pattern.split(",") if g.strip()]
    rx = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)) if globs else None
    cache: dict[str, bool] = {}

    def keep(name: str) -> bool:
        v = cache.get(name)
        if v is None:
            v = cache[name] = bool(rx and rx.match(name))
        return v

    return keep


def _quantiles(x: np.ndarray) -> list[float]:
    """min, p10, p25, p50, p75, p90, max (linear interpolation, numpy's default)."""
    return [float(v) for v in np.quantile(x, [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])] if len(x) else []


def _histogram(x: np.ndarray, lo: float | None = None, hi: float | None = None) -> dict:
    lo = float(x.min()) if lo is None else lo
    hi = float(x.max()) if hi is None else hi
    if not hi > lo:
        hi = lo + (abs(lo) or 1.0) * 1e-6 + 1e-12
    counts, edges = np.histogram(x, bins=HIST_BINS, range=(lo, hi))
    return {"edges": [float(e) for e in edges], "counts": counts.tolist()}


def _actor_view(stats: list[list]) -> dict:
    """Per-actor figures as the page shows them: every row when there are at most MANY_ACTORS,
    else histograms and quantiles of participation, compute and idle time over the clients (the
    actors not named server…) and the TOP_SLOWEST actors by compute time (the rows are not embedded)."""
    n = len(stats)
    view: dict[str, Any] = {"actors": n, "rows": stats if n <= MANY_ACTORS else []}
    if n > MANY_ACTORS:
        clients = [r for r in stats if not str(r[0]).startswith("server")] or stats  # servers apart: they take part in every round
        view["servers"] = n - len(clients) if len(clients) < n else 0
        cols = {k: np.array([r[i] for r in clients], dtype=float) for i, k in ((1, "participation"), (2, "compute"), (3, "idle"))}
        view["hist"] = {k: _histogram(v, 0.0, 1.0) if k == "participation" else _histogram(v, 0.0) for k, v in cols.items()}
        view["quantiles"] = {k: _quantiles(v) for k, v in cols.items()}
        order = sorted(range(n), key=lambda i: (-stats[i][2], i))[:TOP_SLOWEST]
        view["slowest"] = [stats[i] for i in order]
    return view


def _deadlines(scenario: dict) -> dict[str, list]:
    """Per algorithm label: its parameters named *time, *deadline or *timeout (positive numbers),
    drawn as deadlines that long after each round's start."""
    out: dict[str, list] = {}
    algs = scenario.get("algorithm")
    for a in algs if isinstance(algs, list) else []:
        if not isinstance(a, dict):
            continue
        label = a.get("label") or a.get("name")
        found = [[str(k), float(v)] for k, v in a.items()  # (an integer too large for a float is no deadline)
                 if isinstance(k, str) and DEADLINE_PARAM.search(k) and _number(v) and -1e300 < v < 1e300 and v > 0]
        if isinstance(label, str) and found:
            out[label] = found
    return out


def collect(run_dir: str | Path, window: Window = DEFAULT_WINDOW, actors: str | None = None) -> dict:
    """Everything the report shows about one run folder, aggregated (one pass over the log).

    A folder whose files are malformed in a way no check below names is still refused with a
    ReportError naming it, never a traceback (issue 19: shared folders must not crash the tool)."""
    try:
        return _collect(run_dir, window, actor_filter(actors))
    except NetemuError:  # already names the file (InputError is a ValueError too)
        raise
    except (TypeError, AttributeError, ValueError, RecursionError, csv.Error) as exc:
        raise ReportError(f"{run_dir}: a malformed run folder ({type(exc).__name__}: {str(exc)[:200]})") from None


# Names and kinds in a log record are shown as text: one that is not a string (null, true, 3)
# is read as its str(), as `netemu log summary` does, so sorting and lanes never mix types.
_TEXT_FIELDS = ("algorithm", "kind", "link", "src", "dst", "actor", "reason")


def _collect(run_dir: str | Path, window: Window, keep: Callable[[str], bool] | None = None) -> dict:
    d = Path(run_dir)
    if not d.is_dir():
        raise ReportError(f"{run_dir}: not a run folder (no such directory)")
    if not (d / "summary.json").is_file() and not (d / "metrics.csv").is_file():
        raise ReportError(f"{run_dir}: not a run folder (neither summary.json nor metrics.csv)")
    summary = _read_summary(d)
    scenario_text, scenario = _read_scenario(d)
    rows = read_metrics(d) if (d / "metrics.csv").is_file() else []
    algorithms = list(summary.get("algorithms") or [])
    for alg in dict.fromkeys(r[0] for r in rows):
        if alg not in algorithms:
            algorithms.append(alg)
    ends = {alg: list(v) for alg, v in (summary.get("virtual_time") or {}).items() if isinstance(v, list)}
    run_table = scenario.get("run")
    run_table = run_table if isinstance(run_table, dict) else {}
    folder: dict[str, Any] = {
        "path": str(run_dir), "name": d.name or str(run_dir),
        "scenario_name": str(run_table.get("name") or summary.get("scenario") or ""),
        "description": str(run_table.get("description") or ""),
        "scenario_text": scenario_text,
        "summary": summary,
        "curves": curve_data(rows),
        "privacy_curves": privacy_curves(d / "privacy.csv"),
        "traffic": {}, "actors": {}, "activity": {}, "usage": {}, "timeline": None, "log": None, "records": 0, "loads": {},
        "deadlines": _deadlines(scenario), "rounds": report_rounds(rows), "rows": rows, "bytes_at": {},
    }
    try:
        log = log_path(d)
    except LogError:
        folder["log"] = "no message log (messages.jsonl or messages.arrows) in this run folder (output.log = false?)"
        folder["timeline"] = {"empty": "no message log"}
        folder["algorithms"] = algorithms
        return folder
    traffic: dict[str, dict[tuple[str, str], Traffic]] = defaultdict(lambda: defaultdict(Traffic))
    sent_rounds: dict[tuple, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    all_rounds: dict[tuple, set] = defaultdict(set)
    compute: dict[tuple, Counter] = defaultdict(Counter)
    last_t: dict[tuple, float] = {}
    tl = Timeline(window, keep)
    usage = Usage()  # per round: updates used, not used, lost
    sent_bytes: Counter = Counter()     # per (algorithm, run): bytes sent so far
    bytes_at: dict[tuple, int] = {}     # (algorithm, run, round) -> bytes sent when its first metric was logged
    starts: dict[tuple, dict[int, float]] = defaultdict(dict)  # per (algorithm, run): the first send of each round
    lifecycles: dict[tuple, Lifecycle] = defaultdict(Lifecycle)  # per (algorithm, run): crash and recover records
    loads: dict[str, dict[str, dict]] = defaultdict(dict)
    loads_run: dict[str, Any] = {}
    n = 0
    try:
        for n, r in enumerate(read(log), 1):  # the one pass over the log
            for key in _TEXT_FIELDS:
                if key in r and not isinstance(r[key], str):
                    r[key] = str(r[key])
            ctx = (r.get("algorithm", ""), r.get("run", 0))
            ev = r["event"]
            last_t[ctx] = r["t"]
            if ev == "send":
                tr = traffic[ctx[0]][(r["kind"], r["link"])]
                tr.sent += 1
                tr.bytes += r["bytes"]
                sent_bytes[ctx] += r["bytes"]
                if keep is None or keep(r["src"]):
                    sent_rounds[ctx][r["src"]].add(r["round"])
                if r["dst"] not in sent_rounds[ctx] and (keep is None or keep(r["dst"])):  # reached, perhaps never sent
                    sent_rounds[ctx][r["dst"]] = set()
                all_rounds[ctx].add(r["round"])
                if r["round"] not in starts[ctx]:
                    starts[ctx][r["round"]] = float(r["t"])
            elif ev == "metric":
                bytes_at.setdefault((ctx[0], ctx[1], r["round"]), sent_bytes[ctx])
            elif ev in ("deliver", "drop", "in_flight"):  # duplicates and attempts counted apart (Traffic.outcome)
                traffic[ctx[0]][(r["kind"], r["link"])].outcome(ev, r)
                usage.feed(ev, r, ctx)
            elif ev == "unused":
                usage.feed(ev, r, ctx)
            elif ev in ("crash", "recover"):
                lifecycles[ctx].add(float(r["t"]), r["actor"], ev == "recover")
            elif ev == "load":  # a shared link's load changed (sharing = "max-min"): the first run of each algorithm
                if loads_run.setdefault(ctx[0], ctx[1]) == ctx[1]:
                    steps = loads[ctx[0]].setdefault(f"{r['src']}->{r['dst']}", {"capacity": r.get("capacity"), "steps": []})["steps"]
                    steps.append((float(r["t"]), float(r["bps"])))
            elif ev == "compute" and (keep is None or keep(r["actor"])):
                end = ends.get(ctx[0], [])
                stop = end[ctx[1]] if isinstance(ctx[1], int) and 0 <= ctx[1] < len(end) else math.inf
                compute[ctx][r["actor"]] += max(0.0, min(r["t"] + r["duration"], stop) - r["t"])
                sent_rounds[ctx].setdefault(r["actor"], set())
            tl.feed(r, ctx)
    except LogError:
        raise
    except KeyError as exc:
        raise LogError(f"{log}:{n}: a record without a usable {exc} field (docs/formats.md lists each event's fields)") from None
    except (TypeError, ValueError) as exc:
        raise LogError(f"{log}:{n}: a {r.get('event')!r} record with a field of the wrong type ({exc}); "
                       "docs/formats.md lists each event's fields") from None
    folder["records"] = n
    folder["bytes_at"] = bytes_at
    if bytes_at:
        add_bytes(folder["curves"], rows, bytes_at)
    first_run: dict[str, tuple] = {}
    for ctx in starts:
        first_run.setdefault(ctx[0], ctx)
    folder["rounds"] = {alg: thin_marks(sorted(starts[ctx].items())) for alg, ctx in first_run.items()}
    for alg in traffic:
        if alg not in algorithms:
            algorithms.append(alg)
    folder["algorithms"] = algorithms
    runs_of: dict[str, list] = defaultdict(list)
    for ctx in last_t:
        runs_of[ctx[0]].append(ctx)
    for alg, ctxs in runs_of.items():
        runs = len(ctxs)
        by_kind = {f"{k} / {link}": _traffic_dict(tr, runs) for (k, link), tr in sorted(traffic[alg].items())}
        by_link: dict[str, Traffic] = defaultdict(Traffic)
        for (_k, link), tr in traffic[alg].items():
            by_link[link].merge(tr)
        folder["traffic"][alg] = {"runs": runs, "by_kind": by_kind,
                                  "by_link": {link: _traffic_dict(tr, runs) for link, tr in sorted(by_link.items())}}
        names = sorted({a for c in ctxs for a in sent_rounds[c]} | {a for c in ctxs for a in compute[c]}, key=lane_key)
        stats = []
        for a in names:  # per-run figures, then the mean over runs (never sums over runs)
            part, comp, idle = [], [], []
            for c in ctxs:
                span = ends[alg][c[1]] if alg in ends and isinstance(c[1], int) and 0 <= c[1] < len(ends[alg]) else last_t[c]
                part.append(len(sent_rounds[c].get(a, ())) / len(all_rounds[c]) if all_rounds[c] else 0.0)
                comp.append(compute[c][a])
                idle.append(max(0.0, span - compute[c][a]))
            stats.append([a, float(np.mean(part)), float(np.mean(comp)), float(np.mean(idle))])
        folder["actors"][alg] = _actor_view(stats)
        folder["activity"][alg] = activity([(sent_rounds[c], starts[c], lifecycles[c]) for c in ctxs])
    folder["loads"] = {alg: {link: _binned(x["steps"], x["capacity"]) for link, x in sorted(by.items())} for alg, by in loads.items()}
    folder["usage"] = usage.as_dict()
    folder["timeline"] = tl.as_dict()
    if folder["timeline"] is None:
        wanted = ", ".join(f"{k} {v!r}" for k, v in (("algorithm", window.algorithm), ("run", window.run)) if v is not None)
        folder["timeline"] = {"empty": f"no records of {wanted} in this log" if wanted else "the log has no records"}
    return folder


LOAD_BINS = 400  # points of a link's load curve


def _binned(steps: list[tuple[float, float]], capacity: Any) -> dict:
    """A link's load — piecewise constant, changing at each (t, bits/s) step — as its time-weighted
    mean in LOAD_BINS bins from 0 to the last change, in Mbit/s, and as a share of its capacity."""
    ts = np.array([t for t, _ in steps], dtype=float)
    bps = np.array([b for _, b in steps], dtype=float)
    end = float(ts[-1]) if len(ts) else 0.0
    edges = np.linspace(0.0, end if end > 0 else 1.0, LOAD_BINS + 1)
    work = np.concatenate(([0.0], np.cumsum(bps[:-1] * np.diff(ts)))) if len(ts) else np.zeros(1)  # bits up to each step
    k = np.searchsorted(ts, edges, side="right") - 1  # the step in force at each edge (-1: before the first)
    at = np.where(k >= 0, work[np.maximum(k, 0)] + bps[np.maximum(k, 0)] * (edges - ts[np.maximum(k, 0)]) if len(ts) else 0.0, 0.0)
    width = edges[1] - edges[0]
    mbps = np.diff(at) / width / 1e6
    cap = float(capacity) if isinstance(capacity, (int, float)) and capacity else None
    return {"x": [round(float(x), 9) for x in (edges[:-1] + width / 2)], "y": [round(float(v), 6) for v in mbps],
            "capacity_mbps": cap / 1e6 if cap else None, "mean_utilization": float(at[-1] / end / cap) if cap and end > 0 else None}


def write_report(run_dirs: list[str | Path], out: str | Path = "report.html", window: Window = DEFAULT_WINDOW,
                 actors: str | None = None, target: Target | None = None) -> Path:
    """Collect every run folder and write the page to `out` (`actors`: `--actors`; `target`:
    `--target METRIC=VALUE` for the time to accuracy, netemu/report/target.py)."""
    dirs = run_folders([Path(d) for d in run_dirs])  # a sweep folder: its points
    folders = [collect(d, window, actors) for d in dirs]
    check_selection(folders, window, actors, target)  # an option that selects nothing: refused, not an empty page
    out = Path(out)
    try:
        page = render(folders, target=target, actors=actors)
    except (TypeError, AttributeError, ValueError) as exc:  # a summary field no check names
        names = ", ".join(str(d) for d in run_dirs)
        raise ReportError(f"{names}: a malformed run folder ({type(exc).__name__}: {exc})") from None
    try:
        with writing(out):  # disk full, read-only, I/O error: WriteFailed (exit 1), not bad input
            out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{out}: cannot write the report ({exc.strerror})") from None
    return out
