"""Reading message logs: summaries, filters and the first divergence of two logs.

Logs are streamed line by line with orjson, so memory holds the aggregates, not the
log (a 1,000,000-record log is summarized in a few seconds; tools/bench_log.py).
Record schemas: docs/formats.md.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from netemu.errors import LogError

__all__ = ["LogError", "diff", "filter_records", "log_path", "read", "summarize"]


def log_path(path: str | Path) -> Path:
    """A run folder's messages.jsonl, or the file itself."""
    p = Path(path)
    if p.is_dir():
        p = p / "messages.jsonl"
    if not p.is_file():
        raise LogError(f"{path}: no message log (expected a run folder with messages.jsonl, or a .jsonl file)")
    return p


def read(path: str | Path) -> Iterator[dict]:
    """The records of a log, in order."""
    p = log_path(path)
    with open(p, "rb") as f:
        for n, line in enumerate(f, 1):
            try:
                yield orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise LogError(f"{p}:{n}: not a JSON record ({exc})") from None


# ------------------------------------------------------------------ summary


@dataclass
class _Traffic:
    sent: int = 0
    delivered: int = 0
    dropped: Counter = field(default_factory=Counter)
    in_flight: int = 0
    bytes: int = 0
    delays: list = field(default_factory=list)


def _percentiles(delays: list) -> dict:
    if not delays:
        return {}
    q = np.percentile(np.asarray(delays), [50, 90, 99, 100])
    return {"p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2]), "max": float(q[3])}


def summarize(path: str | Path, top: int = 5) -> dict:
    """Traffic per (kind, link class), slowest links and actors, per-actor activity.

    Records of several algorithms or Monte Carlo runs are summarized together; a
    message is identified by (algorithm, run, id).
    """
    traffic: dict[tuple[str, str], _Traffic] = defaultdict(_Traffic)
    links: dict[tuple[str, str], list] = defaultdict(list)
    receivers: dict[str, list] = defaultdict(list)
    pending: dict[tuple, _Traffic] = {}
    compute: Counter = Counter()
    active_rounds: dict[str, set] = defaultdict(set)
    all_rounds: set = set()
    first_t, last_t, records = None, 0.0, 0
    for r in read(path):  # one pass; the hot loop touches each record a few times only
        records += 1
        last_t = r["t"]  # records are in time order
        if first_t is None:
            first_t = last_t
        ev = r["event"]
        if ev == "send":
            ctx = (r.get("algorithm"), r.get("run"))
            tr = traffic[(r["kind"], r["link"])]
            tr.sent += 1
            tr.bytes += r["bytes"]
            pending[(ctx, r["id"])] = tr
            run_round = (ctx, r["round"])
            active_rounds[r["src"]].add(run_round)
            all_rounds.add(run_round)
        elif ev == "deliver":
            tr = pending.pop(((r.get("algorithm"), r.get("run")), r["id"]), None) or traffic[(r["kind"], r["link"])]
            tr.delivered += 1
            delay = r["delay"]
            tr.delays.append(delay)
            links[(r["src"], r["dst"])].append(delay)
            receivers[r["dst"]].append(delay)
        elif ev == "drop":
            tr = pending.pop(((r.get("algorithm"), r.get("run")), r["id"]), None) or traffic[(r["kind"], r["link"])]
            tr.dropped[r["reason"]] += 1
        elif ev == "in_flight":
            tr = pending.pop(((r.get("algorithm"), r.get("run")), r["id"]), None) or traffic[(r["kind"], r["link"])]
            tr.in_flight += 1
        elif ev == "compute":
            compute[r["actor"]] += r["duration"]
    span = last_t - (first_t or 0.0)
    by_kind = {
        f"{kind} / {link}": {
            "sent": tr.sent, "delivered": tr.delivered, "dropped": sum(tr.dropped.values()),
            "dropped_by_reason": dict(sorted(tr.dropped.items())), "in_flight": tr.in_flight, "bytes": tr.bytes,
            "delay": _percentiles(tr.delays),
        }
        for (kind, link), tr in sorted(traffic.items())
    }
    slowest = lambda groups: [
        {"name": name, "messages": len(d), "mean_delay": float(np.mean(d)), "max_delay": float(np.max(d))}
        for name, d in sorted(groups.items(), key=lambda kv: (-float(np.mean(kv[1])), kv[0]))[:top]
    ]
    actors = sorted(set(active_rounds) | set(compute))
    return {
        "records": records,
        "virtual_time": {"first": first_t, "last": last_t},
        "traffic": by_kind,
        "slowest_links": slowest({f"{s}->{d}": v for (s, d), v in links.items()}),
        "slowest_receivers": slowest(receivers),
        "actors": {
            a: {
                "participation_rate": len(active_rounds[a]) / len(all_rounds) if all_rounds else 0.0,
                "compute_time": compute[a],
                "idle_time": max(0.0, span - compute[a]),
            }
            for a in actors
        },
    }


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
            tests.append(lambda r, name=name, value=value: r.get(name) == value)
    if actor is not None:
        tests.append(lambda r: actor in (r.get("src"), r.get("dst"), r.get("actor")))
    if since is not None:
        tests.append(lambda r: r["t"] >= since)
    if until is not None:
        tests.append(lambda r: r["t"] <= until)
    return (r for r in read(path) if all(t(r) for t in tests))


# ------------------------------------------------------------------ diff


def diff(a: str | Path, b: str | Path) -> dict:
    """Where two logs first differ (line and both records), and how their totals differ."""
    first = None
    totals = {"a": Counter(), "b": Counter()}
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
                totals[side]["bytes_sent"] += r.get("bytes", 0) if r["event"] == "send" else 0
        if first is None and ra != rb:
            first = {"line": n, "a": ra, "b": rb}
    events = sorted(set(totals["a"]) | set(totals["b"]))
    return {
        "identical": first is None,
        "first_difference": first,
        "totals": {e: {"a": totals["a"][e], "b": totals["b"][e], "b_minus_a": totals["b"][e] - totals["a"][e]} for e in events},
    }


# ------------------------------------------------------------------ timeline


def timeline(
    path: str | Path,
    out: Path,
    *,
    actors: list[str] | None = None,
    since: float | None = None,
    until: float | None = None,
    algorithm: str | None = None,
    run: int | None = None,
    max_messages: int = 3000,
) -> Path:
    """A swim-lane chart: one lane per actor; an arrow per delivered message from its
    send to its delivery, a cross where a message was dropped (with the reason in the
    legend), a bar per compute span, a shaded span per link outage on the sender's lane.  Records of one algorithm and run (default: the
    first in the log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sends: dict[int, dict] = {}
    arrows, drops, spans, outages = [], [], [], []
    lanes: list[str] = []
    chosen = None
    for r in read(path):
        ctx = (r.get("algorithm"), r.get("run"))
        if chosen is None:
            chosen = (algorithm if algorithm is not None else ctx[0], run if run is not None else ctx[1])
        if ctx != chosen or (since is not None and r["t"] < since):
            continue
        if until is not None and r["t"] > until:
            break
        ev = r["event"]
        if ev == "send":
            sends[r["id"]] = r
        elif ev in ("deliver", "drop") and r["id"] in sends:
            s = sends.pop(r["id"])
            (arrows if ev == "deliver" else drops).append((s["t"], s["src"], r["t"], r["dst"], r.get("reason")))
        elif ev == "compute":
            spans.append((r["t"], r["duration"], r["actor"]))
        elif ev == "outage":
            outages.append((r["t"], r["until"], r["src"], r["dst"]))
        for name in (r.get("src"), r.get("dst"), r.get("actor")):
            if name is not None and name not in lanes and (actors is None or name in actors):
                lanes.append(name)
    keep = lambda *names: all(n in lanes for n in names)
    arrows = [a for a in arrows if keep(a[1], a[3])][:max_messages]
    drops = [d for d in drops if keep(d[1], d[3])][:max_messages]
    spans = [s for s in spans if keep(s[2])]
    outages = [o for o in outages if keep(o[2])]
    order = sorted(lanes, key=lambda n: (not n.startswith("server"), len(n), n))
    y = {n: i for i, n in enumerate(order)}
    fig, ax = plt.subplots(figsize=(10, max(2.5, 0.35 * len(order) + 1.2)))
    for t0, dur, a in spans:
        ax.broken_barh([(t0, dur)], (y[a] - 0.15, 0.3), color="tab:green", alpha=0.5)
    right = until if until is not None else max([a[2] for a in arrows] + [d[2] for d in drops] + [s[0] + s[1] for s in spans], default=0.0)
    for i, (t0, t1, src, dst) in enumerate(outages):  # shaded on the sender's lane, clipped to the window
        ax.broken_barh([(t0, min(t1, right) - t0)], (y[src] - 0.45, 0.9), color="tab:gray", alpha=0.25,
                       label="link outage" if i == 0 else None)
        ax.text(t0, y[src] - 0.3, f" down: {src}->{dst}", fontsize="x-small", va="center", color="dimgray")
    for ts, src, td, dst, _ in arrows:
        ax.annotate("", xy=(td, y[dst]), xytext=(ts, y[src]), arrowprops={"arrowstyle": "->", "lw": 0.6, "alpha": 0.6, "color": "tab:blue"})
    colors = {"loss": "tab:red", "outage": "tab:purple", "expired": "tab:orange", "crash": "black"}
    for reason in sorted({d[4] for d in drops}):
        pts = [d for d in drops if d[4] == reason]
        for ts, src, td, dst, _ in pts:
            ax.plot([ts, td], [y[src], y[dst]], color=colors.get(reason, "gray"), lw=0.6, ls=":")
        ax.scatter([d[2] for d in pts], [y[d[3]] for d in pts], marker="x", color=colors.get(reason, "gray"), label=f"dropped: {reason}", zorder=3)
    ax.set_yticks(range(len(order)), order)
    ax.invert_yaxis()
    ax.set_xlabel("virtual time (s)")
    title = " / ".join(str(c) for c in chosen if c is not None) if chosen else ""
    ax.set_title(f"message timeline {title}".strip())
    ax.grid(axis="x", alpha=0.3)
    if drops or outages:
        ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata={"Software": None} if Path(out).suffix == ".png" else None)
    plt.close(fig)
    return Path(out)
