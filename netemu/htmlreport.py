"""`netemu report`: one self-contained HTML page about one or more run folders.

The page needs no network access: its styles, its small hand-written script (inline SVG
charts with hover and zoom; netemu/_report_page.py) and its data are inline.  It stays
usable for big runs because everything is aggregated here, in Python, in one streaming
pass over each messages.jsonl: only summaries (curves, traffic per link class, delay
histograms, per-actor figures, privacy) and one bounded timeline window are embedded.

Everything that comes from a run folder (scenario names and descriptions, actor names,
message kinds, algorithm labels, the scenario text) is untrusted: HTML text is escaped with
`html.escape`, and the embedded JSON escapes `<`, `>`, `&`, U+2028 and U+2029 so that no
string can close its <script> block (issue 19, item 4).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import json
import math
import re
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from netemu.errors import LogError, NetemuError, ReportError
from netemu.logtools import Quantiles, Traffic, log_path, read
from netemu.report import mean_over, read_metrics

__all__ = ["ReportError", "Window", "collect", "embed_json", "natural_key", "render", "write_report"]

MAX_CURVE_POINTS = 1500     # per curve; longer curves are thinned (every k-th round, the last kept)
MAX_ACTORS = 2000           # per series in the per-actor charts and table
MAX_SCENARIO_CHARS = 100_000
DEFAULT_WINDOW_ROUNDS = 3   # the default timeline window: the first rounds of the chosen run
DEFAULT_MAX_EVENTS = 1000   # messages + compute spans in the timeline window


def natural_key(name: str) -> tuple:
    """Sort key that puts client-2 before client-10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _lane_key(name: str) -> tuple:
    return (not name.startswith("server"), natural_key(name))


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


# ------------------------------------------------------------------ the timeline window


@dataclass(frozen=True)
class Window:
    """Which part of which run the timeline shows.  Without `until`, the window ends where
    round first_round + `rounds` starts, or at `max_events` messages and compute spans."""

    since: float | None = None
    until: float | None = None
    algorithm: str | None = None
    run: int | None = None
    rounds: int = DEFAULT_WINDOW_ROUNDS
    max_events: int = DEFAULT_MAX_EVENTS


class _Timeline:
    def __init__(self, window: Window):
        self.w = window
        self.ctx: tuple | None = None
        self.since = window.since
        self.until = window.until
        self.first_round: int | None = None
        self.closed = False
        self.truncated = False
        self.reason = f"--until {window.until:g}" if window.until is not None else ""
        self.pending: dict[int, list] = {}
        self.msgs: list[list] = []
        self.computes: list[list] = []
        self.marks: list[list] = []  # crash / recover / outage
        self.lanes: dict[str, None] = {}
        self.last_t = 0.0

    def _close(self, t: float, reason: str, truncated: bool = False) -> None:
        self.closed, self.until, self.reason, self.truncated = True, t, reason, truncated

    def _full(self, t: float) -> bool:
        """Close the window (truncated) when it holds max_events messages, compute spans and marks."""
        if len(self.msgs) + len(self.computes) + len(self.marks) < self.w.max_events:
            return False
        self._close(t, f"{self.w.max_events} events (the most a timeline holds)", truncated=True)
        return True

    def feed(self, r: dict, ctx: tuple) -> None:
        if self.ctx is None:
            if (self.w.algorithm is not None and ctx[0] != self.w.algorithm) or (self.w.run is not None and ctx[1] != self.w.run):
                return
            self.ctx = ctx
        if ctx != self.ctx:
            return
        t, ev = r["t"], r["event"]
        self.last_t = t
        if ev in ("deliver", "drop", "in_flight") and r["id"] in self.pending:
            m = self.pending.pop(r["id"])
            m[2] = t if ev != "in_flight" else None
            m[5] = "delivered" if ev == "deliver" else (r.get("reason", "?") if ev == "drop" else "in flight")
            return
        if self.closed:
            return
        if self.since is not None and t < self.since:
            return
        if self.since is None:
            self.since = t
        if self.until is not None and t > self.until:
            self._close(self.until, self.reason)
            return
        if ev == "send":
            rnd = r["round"]
            if self.first_round is None:
                self.first_round = rnd
            if self.w.until is None and rnd >= self.first_round + self.w.rounds:
                self._close(t, f"the start of round {rnd} (the first {self.w.rounds} rounds; --since/--until choose another window)")
                return
            if self._full(t):
                return
            m = [t, r["src"], None, r["dst"], r["kind"], None, r["bytes"], rnd]
            self.msgs.append(m)
            self.pending[r["id"]] = m
            self.lanes[r["src"]] = self.lanes[r["dst"]] = None
        elif ev == "compute":
            if self._full(t):
                return
            self.computes.append([t, r["duration"], r["actor"], r["round"]])
            self.lanes[r["actor"]] = None
        elif ev in ("crash", "recover"):
            if self._full(t):
                return
            self.marks.append([t, ev, r["actor"], None])
            self.lanes[r["actor"]] = None
        elif ev == "outage":
            if self._full(t):
                return
            self.marks.append([t, "outage", r["src"], [r["dst"], r["until"]]])
            self.lanes[r["src"]] = None

    def as_dict(self) -> dict | None:
        if self.ctx is None:
            return None
        if not self.closed:
            self.until = self.until if self.until is not None else self.last_t
            self.reason = self.reason or "the end of the run"
        lanes = sorted(self.lanes, key=_lane_key)
        idx = {n: i for i, n in enumerate(lanes)}
        kinds = sorted({m[4] for m in self.msgs})
        kidx = {k: i for i, k in enumerate(kinds)}
        for m in self.msgs:
            if m[5] is None:
                m[5] = "pending at the log's end"
        return {
            "algorithm": self.ctx[0], "run": self.ctx[1], "since": self.since or 0.0, "until": self.until,
            "ends_at": self.reason, "truncated": self.truncated, "lanes": lanes, "kinds": kinds,
            # [send t, src lane, arrival t (null: never arrived), dst lane, kind, outcome, bytes, round]
            "msgs": [[m[0], idx[m[1]], m[2], idx[m[3]], kidx[m[4]], m[5], m[6], m[7]] for m in self.msgs],
            # [start t, duration, lane, round]
            "computes": [[c[0], c[1], idx[c[2]], c[3]] for c in self.computes],
            "marks": [[k[0], k[1], idx[k[2]], k[3]] for k in self.marks],
        }


# ------------------------------------------------------------------ one run folder


def _read_summary(run_dir: Path) -> dict:
    path = run_dir / "summary.json"
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a readable summary ({exc})") from None
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    _check_summary(path, doc)
    return doc


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _as_float(v: Any) -> float:
    """A number from a summary as a float; anything else NaN (shown as –)."""
    return float(v) if _number(v) else math.nan


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
    except tomllib.TOMLDecodeError:
        table = {}
    if len(text) > MAX_SCENARIO_CHARS:
        text = text[:MAX_SCENARIO_CHARS] + f"\n… (cut at {MAX_SCENARIO_CHARS} characters)"
    return text, table


def _thin(n: int) -> list[int]:
    if n <= MAX_CURVE_POINTS:
        return list(range(n))
    step = math.ceil(n / MAX_CURVE_POINTS)
    keep = list(range(0, n, step))
    return keep if keep[-1] == n - 1 else [*keep, n - 1]


def _curves(rows: list[tuple]) -> dict[str, dict[str, dict]]:
    """Per algorithm and metric, per round: mean over the runs that reached it (`mean_over`,
    dB-aware), min and max over runs, and the mean virtual time of the report."""
    by: dict[tuple[str, str], dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for alg, _run, rnd, t, name, value in rows:
        by[(alg, name)][rnd].append((t, value))
    out: dict[str, dict[str, dict]] = defaultdict(dict)
    for (alg, name), rounds in by.items():
        ks = sorted(rounds)
        keep = _thin(len(ks))
        ks = [ks[i] for i in keep]
        vals = [np.array([v for _, v in rounds[k]]) for k in ks]
        out[alg][name] = {
            "round": ks,
            "time": [float(np.mean([t for t, _ in rounds[k]])) for k in ks],
            "mean": [float(mean_over(name, v)) for v in vals],
            "lo": [float(v.min()) for v in vals],
            "hi": [float(v.max()) for v in vals],
            "runs": [len(v) for v in vals],
            "step": keep[1] - keep[0] if len(keep) > 1 else 1,  # > 1: thinned to every step-th round
        }
    return out


def _privacy_curves(path: Path) -> dict[str, dict]:
    """From privacy.csv, per algorithm and round: the mean and the max over (run, client) of
    the zCDP spent so far (clients that have not released yet count 0)."""
    if not path.is_file():
        return {}
    per: dict[str, list] = defaultdict(list)
    try:
        with open(path, newline="") as f:
            for n, r in enumerate(csv.DictReader(f), 2):
                try:
                    per[r["algorithm"]].append((int(r["round"]), (int(r["run"]), r["client"]), float(r["rho_total"])))
                except (KeyError, TypeError, ValueError) as exc:
                    raise ReportError(f"{path}:{n}: malformed privacy row ({exc}); expected algorithm,run,client,round,rho,rho_total") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: not readable ({exc})") from None
    out = {}
    for alg, items in per.items():
        keys = {k for _, k, _ in items}
        idx = {k: i for i, k in enumerate(sorted(keys))}
        current = np.zeros(len(idx))
        items.sort(key=lambda x: x[0])
        rounds, means, maxes = [], [], []
        total, top, i = 0.0, 0.0, 0
        while i < len(items):
            rnd = items[i][0]
            while i < len(items) and items[i][0] == rnd:
                _, k, v = items[i]
                j = idx[k]
                total += v - current[j]
                current[j] = v
                top = max(top, v)
                i += 1
            rounds.append(rnd)
            means.append(total / len(idx))
            maxes.append(top)
        keep = _thin(len(rounds))
        out[alg] = {"round": [rounds[k] for k in keep], "mean": [means[k] for k in keep], "max": [maxes[k] for k in keep],
                    "clients": len({k[1] for k in keys})}
    return out


def collect(run_dir: str | Path, window: Window = Window()) -> dict:
    """Everything the report shows about one run folder, aggregated (one pass over the log).

    A folder whose files are malformed in a way no check below names is still refused with a
    ReportError naming it, never a traceback (issue 19: shared folders must not crash the tool)."""
    try:
        return _collect(run_dir, window)
    except NetemuError:  # already names the file (InputError is a ValueError too)
        raise
    except (TypeError, AttributeError, ValueError) as exc:
        raise ReportError(f"{run_dir}: a malformed run folder ({type(exc).__name__}: {exc})") from None


# Names and kinds in a log record are shown as text: one that is not a string (null, true, 3)
# is read as its str(), as `netemu log summary` does, so sorting and lanes never mix types.
_TEXT_FIELDS = ("algorithm", "kind", "link", "src", "dst", "actor", "reason")


def _collect(run_dir: str | Path, window: Window) -> dict:
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
        "curves": _curves(rows),
        "privacy_curves": _privacy_curves(d / "privacy.csv"),
        "traffic": {}, "actors": {}, "timeline": None, "log": None, "records": 0,
    }
    try:
        log = log_path(d)
    except LogError:
        folder["log"] = "no messages.jsonl in this run folder (output.log = false?)"
        folder["timeline"] = {"empty": "no message log"}
        folder["algorithms"] = algorithms
        return folder
    traffic: dict[str, dict[tuple[str, str], Traffic]] = defaultdict(lambda: defaultdict(Traffic))
    sent_rounds: dict[tuple, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    all_rounds: dict[tuple, set] = defaultdict(set)
    compute: dict[tuple, Counter] = defaultdict(Counter)
    last_t: dict[tuple, float] = {}
    tl = _Timeline(window)
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
                sent_rounds[ctx][r["src"]].add(r["round"])
                all_rounds[ctx].add(r["round"])
            elif ev == "deliver":
                traffic[ctx[0]][(r["kind"], r["link"])].delays.add(r["delay"])
                traffic[ctx[0]][(r["kind"], r["link"])].delivered += 1
            elif ev == "drop":
                traffic[ctx[0]][(r["kind"], r["link"])].dropped[r["reason"]] += 1
            elif ev == "in_flight":
                traffic[ctx[0]][(r["kind"], r["link"])].in_flight += 1
            elif ev == "compute":
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
        names = sorted({a for c in ctxs for a in sent_rounds[c]} | {a for c in ctxs for a in compute[c]}, key=_lane_key)
        stats = []
        for a in names:  # per-run figures, then the mean over runs (never sums over runs)
            part, comp, idle = [], [], []
            for c in ctxs:
                span = ends[alg][c[1]] if alg in ends and isinstance(c[1], int) and 0 <= c[1] < len(ends[alg]) else last_t[c]
                part.append(len(sent_rounds[c].get(a, ())) / len(all_rounds[c]) if all_rounds[c] else 0.0)
                comp.append(compute[c][a])
                idle.append(max(0.0, span - compute[c][a]))
            stats.append([a, float(np.mean(part)), float(np.mean(comp)), float(np.mean(idle))])
        folder["actors"][alg] = {"actors": len(stats), "shown": min(len(stats), MAX_ACTORS), "rows": stats[:MAX_ACTORS]}
    folder["timeline"] = tl.as_dict()
    if folder["timeline"] is None:
        wanted = ", ".join(f"{k} {v!r}" for k, v in (("algorithm", window.algorithm), ("run", window.run)) if v is not None)
        folder["timeline"] = {"empty": f"no records of {wanted} in this log" if wanted else "the log has no records"}
    return folder


# ------------------------------------------------------------------ the page


def _finite(x):
    """JSON has no NaN or infinity: they become null (the charts leave a gap)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    if isinstance(x, (np.floating, np.integer)):
        return _finite(x.item())
    return x


_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def embed_json(data) -> str:
    """JSON safe inside <script type="application/json">: no string can close the element or
    open a comment (`<`, `>`, `&` escaped), and U+2028/U+2029 are escaped too."""
    text = json.dumps(_finite(data), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group()], text)


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _fmt(v, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, (bool, int)):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _outcome(summary: dict) -> str:
    if not summary:
        return '<p class="muted">no summary.json</p>'
    done = summary.get("complete")
    badge = ('<span class="ok">complete</span>' if done is True else
             '<span class="bad">incomplete</span>' if done is False else '<span class="muted">unknown</span>')
    parts = [f"<p>{badge}"]
    if summary.get("stopped_by"):
        parts.append(f" — stopped by: <code>{_e(summary['stopped_by'])}</code>")
    parts.append("</p><table class='kv'>")
    for key in ("scenario", "netemu", "seed", "runs", "wall_time_s"):
        if key in summary:
            parts.append(f"<tr><th>{_e(key)}</th><td>{_e(_fmt(summary[key]))}</td></tr>")
    for key in ("rounds_planned", "rounds_done"):
        if key in summary:
            parts.append(f"<tr><th>{_e(key)}</th><td>{_e(json.dumps(summary[key], default=str))}</td></tr>")
    parts.append("</table>")
    parts.append(_outcome_table(summary.get("outcome")))
    warnings = summary.get("warnings")
    if isinstance(warnings, list) and warnings:
        parts.append("<ul class='warn'>" + "".join(f"<li>{_e(w)}</li>" for w in warnings) + "</ul>")
    final = summary.get("final") or {}
    if final:
        metrics = sorted({m for v in final.values() if isinstance(v, dict) for m in v})
        parts.append("<table><tr><th>final (mean over runs)</th>" + "".join(f"<th>{_e(m)}</th>" for m in metrics) + "</tr>")
        for alg, v in final.items():
            v = v if isinstance(v, dict) else {}
            parts.append(f"<tr><td>{_e(alg)}</td>" + "".join(f"<td>{_e(_fmt(v.get(m)))}</td>" for m in metrics) + "</tr>")
        parts.append("</table>")
    vt = summary.get("virtual_time") or {}
    if vt:
        parts.append("<p class='small'>virtual end time per run: " + "; ".join(
            f"{_e(alg)}: {_e(', '.join(_fmt(x, 6) for x in (t if isinstance(t, list) else [t])))} s" for alg, t in vt.items()) + "</p>")
    return "".join(parts)


def _outcome_table(outcome) -> str:
    """summary.json's `outcome` (per algorithm, one entry per run: rounds planned and done,
    complete, stopped_by), when the folder has it; anything else as it is, escaped."""
    if not outcome:
        return ""
    if not (isinstance(outcome, dict) and all(isinstance(v, list) and all(isinstance(o, dict) for o in v) for v in outcome.values())):
        return f"<pre class='small'>{_e(json.dumps(outcome, indent=1, default=str))}</pre>"
    rows = ["<table class='outcome'><tr><th>algorithm</th><th>run</th><th>rounds done / planned</th><th>complete</th><th>stopped by</th></tr>"]
    for alg, runs in outcome.items():
        for o in runs:
            done = o.get("complete")
            mark = "<span class='ok'>yes</span>" if done is True else "<span class='bad'>no</span>" if done is False else "–"
            rows.append(f"<tr><td>{_e(alg)}</td><td>{_e(o.get('run', ''))}</td>"
                        f"<td>{_e(o.get('rounds_done', '–'))} / {_e(o.get('rounds_planned', '–'))}</td><td>{mark}</td>"
                        f"<td>{_e(o.get('stopped_by') or '')}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _series(folders: list[dict]) -> list[dict]:
    many = len(folders) > 1
    out = []
    for i, f in enumerate(folders):
        for alg in f["algorithms"]:
            out.append({"folder": i, "algorithm": alg, "label": f"{f['name']}: {alg}" if many else alg})
    return out


def _traffic_table(folders: list[dict], series: list[dict]) -> str:
    rows = [("<table class='num'><tr><th>series</th><th>kind / link class</th><th>sent</th><th>delivered</th><th>dropped</th>"
             "<th>drops by reason</th><th>in flight</th><th>bytes</th><th>bytes / run</th><th>delay mean</th><th>p50≈</th>"
             "<th>p90≈</th><th>p99≈</th><th>max</th></tr>")]
    for s in series:
        t = folders[s["folder"]]["traffic"].get(s["algorithm"])
        if not t:
            continue
        for name, x in t["by_kind"].items():
            d = x["delay"] or {}
            reasons = ", ".join(f"{k} {v}" for k, v in x["dropped_by_reason"].items())
            cells = [s["label"], name, x["sent"], x["delivered"], x["dropped"], reasons, x["in_flight"], x["bytes"],
                     _fmt(x["bytes_per_run"], 6), _fmt(d.get("mean")), _fmt(d.get("p50")), _fmt(d.get("p90")), _fmt(d.get("p99")), _fmt(d.get("max"))]
            rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    rows.append("</table>")
    return "".join(rows)


def _actor_table(folders: list[dict], series: list[dict]) -> str:
    parts = []
    for s in series:
        a = folders[s["folder"]]["actors"].get(s["algorithm"])
        if not a:
            continue
        note = f" (the first {a['shown']} of {a['actors']})" if a["shown"] < a["actors"] else ""
        parts.append(f"<details><summary>{_e(s['label'])}: {a['actors']} actors{_e(note)}</summary><table class='num'>"
                     "<tr><th>actor</th><th>participation</th><th>compute time (s)</th><th>idle time (s)</th></tr>")
        for name, p, c, i in a["rows"]:
            parts.append(f"<tr><td>{_e(name)}</td><td>{p:.3f}</td><td>{_e(_fmt(c))}</td><td>{_e(_fmt(i))}</td></tr>")
        parts.append("</table></details>")
    return "".join(parts)


def _privacy_table(folders: list[dict], series: list[dict]) -> str:
    rows = []
    for s in series:
        p = ((folders[s["folder"]]["summary"].get("privacy") or {}).get(s["algorithm"])) or {}
        vals = [v for v in p.values() if isinstance(v, dict)]
        if not vals:
            continue
        rho = [_as_float(v.get("rho_total")) for v in vals]
        eps = [_as_float(v.get("epsilon")) for v in vals]
        rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in (
            s["label"], len(vals), _fmt(min(rho)), _fmt(float(np.mean(rho))), _fmt(max(rho)),
            _fmt(min(eps)), _fmt(float(np.mean(eps))), _fmt(max(eps)), _fmt(vals[0].get("delta")))) + "</tr>")
    if not rows:
        return ""
    return ("<table class='num'><tr><th>series</th><th>clients</th><th>ρ min</th><th>ρ mean</th><th>ρ max</th>"
            "<th>ε min</th><th>ε mean</th><th>ε max</th><th>δ</th></tr>" + "".join(rows) + "</table>")


def render(folders: list[dict]) -> str:
    """The HTML page for collected run folders (`collect`)."""
    from netemu._report_page import CSS, SCRIPT

    # The page's own script is the only one allowed to run (Content-Security-Policy by hash),
    # and nothing may be fetched: a second guard behind the escaping.
    script_hash = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    series = _series(folders)
    data = {
        "series": series,
        "folders": [{k: f[k] for k in ("name", "curves", "privacy_curves", "traffic", "actors", "timeline")} for f in folders],
    }
    names = ", ".join(f["name"] for f in folders)
    cards = []
    for i, f in enumerate(folders):
        log = (f"<p class='small'>message log: {f['records']} records</p>" if f["log"] is None
               else f"<p class='small muted'>{_e(f['log'])}</p>")
        cards.append(
            f"<div class='card'><h3>{_e(f['name'])}</h3><p class='small muted'>{_e(f['path'])}</p>"
            f"<p><b>scenario</b> <span class='scn-name'>{_e(f['scenario_name'])}</span></p>"
            f"<p class='desc'>{_e(f['description'])}</p>{_outcome(f['summary'])}{log}"
            f"<details><summary>scenario.toml</summary><pre>{_e(f['scenario_text'])}</pre></details></div>")
    has_privacy = any(f["privacy_curves"] or (f["summary"].get("privacy")) for f in folders)
    privacy = ""
    if has_privacy:
        privacy = ("<section id='privacy'><h2>Privacy spent</h2><p class='note'>zCDP spent so far per round "
                   "(privacy.csv; solid: mean over runs and clients, dashed: the most any client spent); the table: "
                   "totals per client (summary.json, mean over runs) and the (ε, δ)-DP they imply.</p>"
                   "<div class='charts' data-chart='privacy'></div>" + _privacy_table(folders, series) + "</section>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src '{script_hash}'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>netemu report: {_e(names)}</title>
<style>{CSS}</style></head>
<body>
<header><h1>netemu run report</h1><p class="muted">{_e(names)}</p>
<div id="status" class="muted small">rendering…</div></header>
<section id="runs"><h2>Scenario and outcome</h2><div class="cards">{''.join(cards)}</div></section>
<section id="curves"><h2>Learning curves</h2>
<p class="note">Line: the mean over Monte Carlo runs that reached the round (metrics ending in _db are averaged in the linear domain);
band: min–max over runs. Against virtual time, a point sits at the mean time of that round's report.
Drag across a chart to zoom, double-click to reset; hover for values.</p>
<div class="controls">x axis: <label><input type="radio" name="xaxis" value="round" checked> round</label>
<label><input type="radio" name="xaxis" value="time"> virtual time (s)</label></div>
<div class="charts" data-chart="curves"></div></section>
<section id="traffic"><h2>Traffic per link class</h2>
<p class="note">Totals over all Monte Carlo runs; bytes are encoded envelope sizes. Delay = arrival − send; percentiles (≈) come
from a streaming sketch, exact to within ±1 % (the one <code>netemu log summary</code> uses); mean, min and max are exact.</p>
<div class="charts" data-chart="traffic"></div>{_traffic_table(folders, series)}</section>
<section id="clients"><h2>Clients: participation, compute and idle time</h2>
<p class="note">Per run, then the mean over runs: participation = rounds in which the actor sent / rounds seen;
compute = virtual seconds computing (clipped to the run's end); idle = run length − compute.</p>
<div class="charts" data-chart="actors"></div>{_actor_table(folders, series)}</section>
{privacy}
<section id="timeline"><h2>Timeline</h2>
<p class="note">One algorithm and run per folder. Arrows: messages from send to arrival (coloured by outcome); bars: compute spans;
crosses: drops. Hover for details, drag to zoom, double-click to reset.</p>
<div class="charts" data-chart="timeline"></div></section>
<div id="tooltip" role="tooltip"></div>
<script type="application/json" id="netemu-data">{embed_json(data)}</script>
<script>{SCRIPT}</script>
</body></html>
"""


def write_report(run_dirs: list[str | Path], out: str | Path = "report.html", window: Window = Window()) -> Path:
    """Collect every run folder and write the page to `out`."""
    folders = [collect(d, window) for d in run_dirs]
    out = Path(out)
    try:
        page = render(folders)
    except (TypeError, AttributeError, ValueError) as exc:  # a summary field no check names
        names = ", ".join(str(d) for d in run_dirs)
        raise ReportError(f"{names}: a malformed run folder ({type(exc).__name__}: {exc})") from None
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{out}: cannot write the report ({exc.strerror})") from None
    return out
