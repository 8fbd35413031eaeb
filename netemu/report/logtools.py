"""Reading message logs: summaries, filters, the first divergence of two logs, timelines.

Logs are streamed line by line with orjson, so memory holds the aggregates, not the
log (a 1,000,000-record log is summarized in a few seconds; tools/bench_log.py):
delay percentiles come from a streaming quantile sketch (`Quantiles`, 1 % relative
accuracy, netemu/report/traffic.py), never from a list of every delay; the timeline is drawn
by netemu/report/timeline.py from what is collected here.  A line longer than `MAX_LINE` bytes, or
a record without a number `t` and a string `event`, or an event without the fields
its kind needs (docs/formats.md), is refused with a `LogError` naming file and line.

Every reader here (and `netemu log export`, `netemu report`) reads either format of the log:
JSON lines (messages.jsonl) or an Arrow IPC stream (messages.arrows, `output.log_format =
"arrow"`, netemu.logarrow), told apart by the file's first bytes; `read` yields the same
records from both, and an Arrow log's "line" in an error is its record number.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import orjson

from netemu.errors import LogError
from netemu.logarrow import FILE_NAME as ARROW_NAME
from netemu.logarrow import is_arrow, read_arrow
from netemu.report.timeline import draw_timeline
from netemu.report.traffic import Mean, Quantiles, Traffic, percentiles

__all__ = ["LogError", "MAX_LINE", "Quantiles", "Traffic", "diff", "filter_records", "log_path", "natural_key", "read", "summarize"]

MAX_LINE = 1 << 20  # bytes: a message log's records are a few hundred bytes; refuse a line longer than 1 MiB


def log_path(path: str | Path) -> Path:
    """A run folder's messages.jsonl (or messages.arrows), or the file itself."""
    p = Path(path)
    if p.is_dir():
        p = p / "messages.jsonl" if (p / "messages.jsonl").is_file() or not (p / ARROW_NAME).is_file() else p / ARROW_NAME
    if not p.is_file():
        raise LogError(f"{path}: no message log (expected a run folder with messages.jsonl or {ARROW_NAME}, or one of those files)")
    return p


def _numbered(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, record) of a log; every record a JSON object with a number `t` and a string `event`.
    An Arrow log gives (record number, record)."""
    p = log_path(path)
    try:
        f = open(p, "rb")
    except OSError as exc:
        raise LogError(f"{p}: cannot read ({exc.strerror})") from None
    if is_arrow(p):
        f.close()
        yield from read_arrow(p)
        return
    with f:
        n = 0
        while True:
            line = f.readline(MAX_LINE + 1)
            if not line:
                return
            n += 1
            if len(line) > MAX_LINE:
                raise LogError(f"{p}:{n}: a line longer than {MAX_LINE} bytes is not a message log record")
            try:
                r = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise LogError(f"{p}:{n}: not a JSON record ({exc})") from None
            if not isinstance(r, dict):
                raise LogError(f"{p}:{n}: a record must be a JSON object, got {type(r).__name__}")
            t, ev = r.get("t"), r.get("event")
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not isinstance(ev, str):
                raise LogError(f"{p}:{n}: a record needs a number 't' and a string 'event', got t = {t!r}, event = {ev!r}")
            yield n, r


def read(path: str | Path) -> Iterator[dict]:
    """The records of a log, in order."""
    return (r for _, r in _numbered(path))


def _shape_error(path: str | Path, n: int, r: dict, exc: Exception) -> LogError:
    """The LogError for a record that lacks a field its event needs, or has one of the wrong type."""
    what = f"no field {exc.args[0]!r}" if isinstance(exc, KeyError) else f"a field of the wrong type ({exc})"
    return LogError(f"{log_path(path)}:{n}: a {r.get('event')!r} record with {what}; record schemas: docs/formats.md")


def natural_key(name: object) -> tuple:
    """Sort key that puts client-2 before client-10 (digit runs compare as numbers)."""
    parts = re.split(r"(\d+)", str(name))
    return tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in parts)


# ------------------------------------------------------------------ summary

_OUTCOMES = frozenset(("deliver", "drop", "in_flight"))


@dataclass
class _Busy:
    """The union of an actor's compute spans, streamed in start order, clipped at the end."""

    done: float = 0.0
    start: float = 0.0
    end: float = 0.0

    def add(self, t: float, duration: float) -> None:
        if t >= self.end:
            self.done += self.end - self.start
            self.start, self.end = t, t + duration
        else:
            self.end = max(self.end, t + duration)

    def until(self, last: float) -> float:
        return self.done + max(0.0, min(self.end, last) - self.start)


def _ctx_label(ctx: tuple) -> str:
    alg, run = ctx
    return "/".join(str(c) for c in (alg, run) if c is not None) or "log"


def summarize(path: str | Path, top: int = 5, *, algorithm: str | None = None, run: int | None = None) -> dict:
    """Traffic per (kind, link class), slowest links and receivers, per-actor activity, and the
    delivered messages not used (`unused_by_algorithm`: algorithm -> kind -> reason -> count).

    `traffic` sums every algorithm and Monte Carlo run of the log; `traffic_by_algorithm`
    gives the same per algorithm (a log of two algorithms compares them, never mixes them);
    `algorithm` / `run` keep only theirs.  A message is identified by
    (algorithm, run, id).  Per actor, `actors` gives the mean over the (algorithm, run)
    pairs in which it appears of its participation rate, compute time (the union of its
    compute spans, clipped at the pair's last record) and idle time (span − compute);
    `per_run` gives the same per pair, with that pair's span.
    """
    traffic: dict[tuple, Traffic] = defaultdict(Traffic)  # (algorithm, kind, link class) -> its messages
    links: dict[str, Mean] = defaultdict(Mean)
    receivers: dict[str, Mean] = defaultdict(Mean)
    pending: dict[tuple, Traffic] = {}  # (ctx, id) of a message sent in the log -> its traffic
    tr: Traffic | None
    busy: dict[tuple, _Busy] = {}
    active_rounds: dict[tuple, set] = defaultdict(set)  # (ctx, actor) -> rounds it sent in
    rounds: dict[tuple, set] = defaultdict(set)  # ctx -> rounds seen
    spans: dict[tuple, list] = {}  # ctx -> [first t, last t, records]
    unused: Counter = Counter()  # (algorithm, kind, reason) -> `unused` records
    first_t, last_t, records = None, 0.0, 0
    for n, r in _numbered(path):  # one pass; the hot loop touches each record a few times only
        ctx = (r.get("algorithm"), r.get("run"))
        if (algorithm is not None and ctx[0] != algorithm) or (run is not None and ctx[1] != run):
            continue
        records += 1
        t = last_t = r["t"]  # records are in time order
        if first_t is None:
            first_t = t
        ev = r["event"]
        try:
            span = spans.get(ctx)
            if span is None:
                span = spans[ctx] = [t, t, 0]
            span[1] = t
            span[2] += 1
            if ev == "send":
                tr = traffic[(ctx[0], r["kind"], r["link"])]
                tr.sent += 1
                tr.bytes += r["bytes"]
                pending[(ctx, r["id"])] = tr
                active_rounds[(ctx, r["src"])].add(r["round"])
                rounds[ctx].add(r["round"])
            elif ev in _OUTCOMES:
                tr = pending.pop((ctx, r["id"]), None) or traffic[(ctx[0], r["kind"], r["link"])]
                tr.outcome(ev, r)
                if ev == "deliver" and r.get("duplicate") is not True:
                    delay = float(r["delay"])
                    links[f"{r['src']}->{r['dst']}"].add(delay)
                    receivers[r["dst"]].add(delay)
            elif ev == "unused":  # a delivered message its receiver did not use: an annotation, not an outcome
                unused[(ctx[0], r["kind"], r["reason"])] += 1
            elif ev == "compute":
                key = (ctx, r["actor"])
                b = busy.get(key)
                if b is None:
                    b = busy[key] = _Busy(start=t, end=t)
                b.add(t, float(r["duration"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise _shape_error(path, n, r, exc) from None
    by_algorithm: dict[str, dict] = {}
    total: dict[tuple[str, str], Traffic] = defaultdict(Traffic)
    for (alg, kind, link), tr in sorted(traffic.items(), key=lambda kv: tuple(map(str, kv[0]))):
        total[(kind, link)].merge(tr)
        by_algorithm.setdefault(str(alg), {})[f"{kind} / {link}"] = {**tr.counts(), "delay": percentiles(tr.delays)}
    by_kind = {f"{kind} / {link}": {**tr.counts(), "delay": percentiles(tr.delays)}
               for (kind, link), tr in sorted(total.items(), key=lambda kv: tuple(map(str, kv[0])))}
    slowest = lambda groups: [
        {"name": name, "messages": q.count, "mean_delay": q.mean, "max_delay": float(q.max)}
        for name, q in sorted(groups.items(), key=lambda kv: (-kv[1].mean, natural_key(kv[0])))[:top]
    ]
    per_run: dict[str, dict] = {}
    for ctx, (t0, t1, nrec) in spans.items():
        names = {a for (c, a) in active_rounds if c == ctx} | {a for (c, a) in busy if c == ctx}
        actors = {}
        for a in sorted(names, key=natural_key):
            compute = busy[(ctx, a)].until(t1) if (ctx, a) in busy else 0.0
            actors[str(a)] = {
                "participation_rate": len(active_rounds.get((ctx, a), ())) / len(rounds[ctx]) if rounds[ctx] else 0.0,
                "compute_time": compute,
                "idle_time": max(0.0, (t1 - t0) - compute),
            }
        per_run[_ctx_label(ctx)] = {"algorithm": ctx[0], "run": ctx[1], "records": nrec,
                                    "virtual_time": {"first": t0, "last": t1}, "actors": actors}
    mean_actors: dict[str, dict] = {}
    for name in sorted({a for pr in per_run.values() for a in pr["actors"]}, key=natural_key):
        rows = [pr["actors"][name] for pr in per_run.values() if name in pr["actors"]]
        mean_actors[name] = {k: sum(x[k] for x in rows) / len(rows) for k in ("participation_rate", "compute_time", "idle_time")}
        mean_actors[name]["runs"] = len(rows)
    return {
        "records": records,
        "virtual_time": {"first": first_t, "last": last_t},
        "traffic": by_kind,
        "traffic_by_algorithm": by_algorithm,
        "slowest_links": slowest(links),
        "slowest_receivers": slowest(receivers),
        "actors": mean_actors,
        "unused_by_algorithm": _unused_table(unused),
        "runs": len(per_run),
        "per_run": per_run,
        "delay_quantiles": {"method": "streaming log-bucket sketch", "relative_accuracy": 0.01},
    }


def _unused_table(unused: Counter) -> dict[str, dict[str, dict[str, int]]]:
    """algorithm -> kind -> reason -> the delivered messages not used (`unused` records), sorted."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for (alg, kind, reason), n in sorted(unused.items(), key=lambda kv: tuple(map(str, kv[0]))):
        out.setdefault(str(alg), {}).setdefault(str(kind), {})[str(reason)] = n
    return out


# ------------------------------------------------------------------ filter


def filter_records(
    path: str | Path,
    *,
    src: str | None = None,
    dst: str | None = None,
    kind: str | None = None,
    round: int | None = None,
    since: float | None = None,
    until: float | None = None,
    event: str | None = None,
    actor: str | None = None,
    algorithm: str | None = None,
    run: int | None = None,
) -> Iterator[dict]:
    """Records matching every given condition (`actor` matches src, dst or actor)."""
    tests: list[Callable[[dict], bool]] = []
    for name, value in (("src", src), ("dst", dst), ("kind", kind), ("round", round), ("event", event),
                        ("algorithm", algorithm), ("run", run)):
        if value is not None:
            tests.append(partial(_field_is, name, value))
    if actor is not None:
        tests.append(lambda r: actor in (r.get("src"), r.get("dst"), r.get("actor")))
    if since is not None:
        tests.append(lambda r: r["t"] >= since)
    if until is not None:
        tests.append(lambda r: r["t"] <= until)
    return (r for r in read(path) if all(t(r) for t in tests))


def _field_is(name: str, value: object, r: dict) -> bool:
    return r.get(name) == value


# ------------------------------------------------------------------ diff


def diff(a: str | Path, b: str | Path) -> dict:
    """Where two logs first differ (line and both records), and how their totals differ."""
    first = None
    totals: dict[str, Counter[str]] = {"a": Counter(), "b": Counter()}
    ia, ib = read(a), read(b)
    n = 0
    while True:
        ra, rb = next(ia, None), next(ib, None)
        if ra is None and rb is None:
            break
        n += 1
        for side, r in (("a", ra), ("b", rb)):
            if r is not None:
                totals[side][r["event"]] += 1
                size = r.get("bytes", 0) if r["event"] == "send" else 0
                if isinstance(size, bool) or not isinstance(size, int):
                    raise LogError(f"{log_path(a if side == 'a' else b)}:{n}: a 'send' record with bytes = {size!r}, "
                                   "expected an integer")
                totals[side]["bytes_sent"] += size
        if first is None and ra != rb:
            first = {"line": n, "a": ra, "b": rb}
    events = sorted(set(totals["a"]) | set(totals["b"]))
    return {
        "identical": first is None,
        "first_difference": first,
        "totals": {e: {"a": totals["a"][e], "b": totals["b"][e], "b_minus_a": totals["b"][e] - totals["a"][e]} for e in events},
    }


# ------------------------------------------------------------------ timeline


def _window(path, chosen: tuple | None, since: float | None, until: float | None, limit: int, actors: set | None = None):
    """First pass: the (algorithm, run) drawn, its messages sent in [since, until] (with
    `actors`, only those between two of them: the messages drawn), its last record time, and
    the time of its `limit`-th such send in the window (None if fewer)."""
    sends, last, cut = 0, None, None
    for r in read(path):
        ctx = (r.get("algorithm"), r.get("run"))
        if chosen is None:
            chosen = ctx
        if ctx != chosen or (since is not None and r["t"] < since):
            continue
        if until is not None and r["t"] > until:
            break
        last = r["t"]
        if r["event"] == "send" and (actors is None or (r.get("src") in actors and r.get("dst") in actors)):
            sends += 1
            if sends == limit:
                cut = r["t"]
    return chosen, sends, last, cut


def timeline(
    path: str | Path,
    out: Path,
    *,
    actors: list[str] | None = None,
    since: float | None = None,
    until: float | None = None,
    algorithm: str | None = None,
    run: int | None = None,
    max_messages: int = 400,
    notes: list[str] | None = None,
) -> Path:
    """A swim-lane chart of one algorithm and run (default: the first in the log): one
    lane per actor; an arrow per delivered message from its send to its delivery, a cross
    where a message was dropped (coloured by reason), a bar per compute span, a shaded
    span per link outage on the sender's lane; everything clipped to [since, until].

    Readable by construction: without a window and with more than `max_messages`
    messages, the window ends at the `max_messages`-th send; with a window holding more,
    messages are aggregated (deliveries and drops per lane in 100 time bins).  What was
    done is said in the title and appended to `notes`."""
    notes = notes if notes is not None else []
    chosen = (algorithm, run) if algorithm is not None or run is not None else None
    if chosen is not None and (algorithm is None or run is None):  # fill the other coordinate from the log
        for r in read(path):
            if (algorithm is None or r.get("algorithm") == algorithm) and (run is None or r.get("run") == run):
                chosen = (r.get("algorithm"), r.get("run"))
                break
    chosen, sends, last, cut = _window(path, chosen, since, until, max_messages, set(actors) if actors is not None else None)
    if last is None:
        raise LogError(f"{log_path(path)}: no record of {_ctx_label(chosen) if chosen else 'any run'} in the window")
    aggregate = False
    if since is None and until is None and cut is not None and cut < last:
        until = cut
        notes.append(f"{sends} messages in t = 0 .. {last:g} s: showing the window up to the {max_messages}th send "
                     f"(t <= {cut:g} s); choose another with --since/--until")
    elif sends > max_messages:
        aggregate = True
        notes.append(f"{sends} messages in the window: drawn aggregated (deliveries and drops per lane and time bin); "
                     f"narrow the window with --since/--until to see each message")
    left = since if since is not None else 0.0
    right = until if until is not None else last
    sends_open: dict[int, dict] = {}
    arrows: list[tuple] = []  # (send t, src, delivery t, dst, reason), as draw_timeline takes them
    drops: list[tuple] = []
    spans: list[tuple] = []
    outages: list[tuple] = []
    lanes: list[str] = []
    for n, r in _numbered(path):
        ctx = (r.get("algorithm"), r.get("run"))
        if ctx != chosen or (since is not None and r["t"] < since):
            continue
        if until is not None and r["t"] > until:
            break
        ev = r["event"]
        try:
            if ev == "send":
                sends_open[r["id"]] = r
            elif ev in ("deliver", "drop") and r["id"] in sends_open:
                s0 = sends_open.pop(r["id"])
                (arrows if ev == "deliver" else drops).append((s0["t"], s0["src"], r["t"], r["dst"], r.get("reason")))
            elif ev == "compute":
                t0, t1 = max(r["t"], left), min(r["t"] + float(r["duration"]), right)
                if t1 > t0:
                    spans.append((t0, t1 - t0, r["actor"]))
            elif ev == "outage":
                outages.append((r["t"], float(r["until"]), r["src"], r["dst"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise _shape_error(path, n, r, exc) from None
        for name in (r.get("src"), r.get("dst"), r.get("actor")):
            if isinstance(name, str) and name not in lanes and (actors is None or name in actors):
                lanes.append(name)
    if actors is not None and not lanes:  # --actors that selects nothing: refused, not an empty chart
        raise LogError(f"--actors {' '.join(actors)}: no such actor in {_ctx_label(chosen)} of {log_path(path)} in the window")
    keep = lambda *names: all(n in lanes for n in names)
    arrows = [a for a in arrows if keep(a[1], a[3])]
    drops = [d for d in drops if keep(d[1], d[3])]
    spans = [s for s in spans if keep(s[2])]
    outages = [o for o in outages if keep(o[2])]
    order = sorted(lanes, key=lambda n: (not n.startswith("server"), natural_key(n)))
    return draw_timeline(out, order, arrows, drops, spans, outages, left=left, right=right, aggregate=aggregate,
                         title=_ctx_label(chosen))
