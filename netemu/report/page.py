"""The HTML of `netemu report`: the page for collected run folders (`render`), with every
name from a run folder escaped and the data embedded as JSON that cannot close its
<script> block (`embed_json`); the style sheet and script come from netemu/report/_assets.py."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from typing import Any

import numpy as np

from netemu.report.target import Target

MANY_ACTORS = 50  # above this, the clients section shows distributions and the slowest, not a bar per actor

__all__ = ["MANY_ACTORS", "embed_json", "fmt_bytes", "fmt_number", "render"]


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


_SI = ("", "k", "M", "G", "T", "P", "E")


def _si(v: float, unit: str) -> str:
    """Three significant digits and an SI prefix: 2415646 -> 2.42 M (the page's script does the same)."""
    a, k = abs(v), 0
    while a >= 999.5 and k < len(_SI) - 1:
        a, v, k = a / 1000, v / 1000, k + 1
    text = f"{v:.3g}" if k else (f"{v:.3g}" if not float(v).is_integer() else str(int(v)))
    return f"{text} {_SI[k]}{unit}".rstrip()


def fmt_bytes(v) -> str:
    """The one format for bytes, on the page and in its script: B, kB, MB, GB (SI, powers of 1000)."""
    if not _number(v) or not math.isfinite(v):
        return "–"
    return _si(float(v), "B")


def fmt_number(v, digits: int = 4) -> str:
    """Other numbers: integers with thousands separators (5,413); floats with `digits` significant
    digits, an SI prefix from 100,000 (2.42 M) and an exponent below 0.001 — never 2.4e+06."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "–"
        a = abs(v)
        if a >= 1e5:
            return _si(v, "")
        if a and a < 1e-3:
            m, e = f"{v:.{max(1, digits - 2)}e}".split("e")
            return f"{m}e{int(e)}"
        return f"{v:.{digits}g}"
    return str(v)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_fmt = fmt_number


def _as_float(v: Any) -> float:
    """A number from a summary as a float; anything else NaN (shown as –)."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


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
        found = summary.get("final_ci95")
        cis: dict = found if isinstance(found, dict) else {}
        head = "final (mean over runs [95 % t-interval])" if cis else "final (mean over runs)"
        parts.append(f"<table><tr><th>{head}</th>" + "".join(f"<th>{_e(m)}</th>" for m in metrics) + "</tr>")
        for alg, v in final.items():
            v = v if isinstance(v, dict) else {}
            at = cis.get(alg)
            ci: dict = at if isinstance(at, dict) else {}
            parts.append(f"<tr><td>{_e(alg)}</td>" + "".join(f"<td>{_e(_fmt(v.get(m)) + _interval(ci.get(m)))}</td>" for m in metrics) + "</tr>")
        parts.append("</table>")
    vt = summary.get("virtual_time") or {}
    if vt:
        parts.append("<p class='small'>virtual end time per run: " + "; ".join(
            f"{_e(alg)}: {_e(', '.join(_fmt(x, 6) for x in (t if isinstance(t, list) else [t])))} s" for alg, t in vt.items()) + "</p>")
    return "".join(parts)


def _interval(ci: object) -> str:
    """` [lo, hi]` of a summary's `final_ci95` entry, or nothing (fewer than two runs, or not numbers)."""
    if not (isinstance(ci, dict) and _number(ci.get("hi"))):
        return ""
    lo = ci.get("lo")
    return f" [{_fmt(lo) if _number(lo) else '−∞'}, {_fmt(ci['hi'])}]"


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
            reasons = ", ".join(f"{k} {_fmt(v)}" for k, v in x["dropped_by_reason"].items())
            cells = [s["label"], name, _fmt(x["sent"]), _fmt(x["delivered"]), _fmt(x["dropped"]), reasons, _fmt(x["in_flight"]),
                     fmt_bytes(x["bytes"]), fmt_bytes(x["bytes_per_run"]), _fmt(d.get("mean")), _fmt(d.get("p50")), _fmt(d.get("p90")), _fmt(d.get("p99")), _fmt(d.get("max"))]
            rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    rows.append("</table>")
    return "".join(rows)


def _network_table(folders: list[dict], series: list[dict]) -> str:
    """What the network did per link class: retransmissions, attempts per message, timeouts, queue drops, duplicates."""
    rows = ["<table class='num'><tr><th>series</th><th>link class</th><th>retransmissions</th><th>attempts / message</th>"
            "<th>max attempts</th><th>timeouts</th><th>queue drops</th><th>duplicates</th></tr>"]
    for s in series:
        t = folders[s["folder"]]["traffic"].get(s["algorithm"])
        for link, x in (t or {}).get("by_link", {}).items():
            n = x.get("network") or {}
            cells = [s["label"], link, _fmt(n.get("retransmissions")), _fmt(n.get("attempts_per_message")), _fmt(n.get("max_attempts")),
                     _fmt(n.get("timeouts")), _fmt(n.get("queue_drops")), _fmt(n.get("duplicates"))]
            rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    rows.append("</table>")
    return "".join(rows)


def _actor_rows(rows: list) -> str:
    out = ["<table class='num'><tr><th>actor</th><th>participation</th><th>compute time (s)</th><th>idle time (s)</th></tr>"]
    for name, p, c, i in rows:
        out.append(f"<tr><td>{_e(name)}</td><td>{p:.3f}</td><td>{_e(_fmt(c))}</td><td>{_e(_fmt(i))}</td></tr>")
    out.append("</table>")
    return "".join(out)


_QUANTILES = ("min", "p10", "p25", "median", "p75", "p90", "max")


def _actor_table(folders: list[dict], series: list[dict]) -> str:
    parts = []
    for s in series:
        a = folders[s["folder"]]["actors"].get(s["algorithm"])
        if not a:
            continue
        if "slowest" not in a:
            parts.append(f"<details><summary>{_e(s['label'])}: {_fmt(a['actors'])} actors</summary>{_actor_rows(a['rows'])}</details>")
            continue
        q = a["quantiles"]
        servers = a.get("servers") or 0
        over = f"the {_fmt(a['actors'] - servers)} clients ({_fmt(servers)} server{'s' if servers > 1 else ''} apart)" if servers else "the actors"
        parts.append(f"<details class='slowest' open><summary>{_e(s['label'])}: {_fmt(a['actors'])} actors — quantiles over {over}, "
                     f"and the {len(a['slowest'])} with the most compute time</summary><table class='num'><tr><th>figure</th>"
                     + "".join(f"<th>{k}</th>" for k in _QUANTILES) + "</tr>")
        for key, label in (("participation", "participation"), ("compute", "compute time (s)"), ("idle", "idle time (s)")):
            parts.append(f"<tr><td>{label}</td>" + "".join(f"<td>{_e(_fmt(v))}</td>" for v in q[key]) + "</tr>")
        parts.append("</table>" + _actor_rows(a["slowest"]) + "</details>")
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


def _changed(folder: dict) -> str:
    """A note under the description when the run changed the scenario file with --set (summary.json's
    `overrides`, a sweep point's grid values among them): the description was written for the file."""
    sets = folder["summary"].get("overrides")
    if not (isinstance(sets, list) and sets and all(isinstance(x, str) for x in sets)):
        return ""
    what = "The description is the scenario file's; " if folder["description"] else ""
    return (f"<p class='small changed'>{what}this run changed the file with <code>--set</code>: "
            + ", ".join(f"<code>{_e(x)}</code>" for x in sets) + " (scenario.toml below is what ran)</p>")


def _title(folders: list[dict]) -> str:
    """The scenarios' names (run.name, else summary.json's scenario), else the folders' names."""
    names = list(dict.fromkeys(f.get("scenario_name") or f["name"] for f in folders))
    return ", ".join(names)


def _tta_section(tta: dict, folders: list[dict], series: list[dict]) -> str:
    if not tta:
        return ""
    metric, higher = tta["metric"], tta["higher"]
    op = "≥" if higher else "≤"
    if tta["target"] is None:
        why = (f"no default target for {_e(metric)}: its best final value is not positive (choose one with "
               f"<code>--target {_e(metric)}=VALUE</code>)")
        return f"<section id='tta'><h2>Time to accuracy</h2><p class='note'>{why}</p></section>"
    if tta["given"]:
        how = f"(--target; rule: {_e(tta['rule'])})"
    else:
        pct = round(100 * tta["factor"])
        how = (f"(default: the best final value of the series, {'−' if higher else '+'}{pct} %; "
               f"<code>--target {_e(metric)}=VALUE</code> chooses another, <code>=VALUE:K</code> requires K consecutive "
               f"evaluations; rule: {_e(tta['rule'])})")
    rows = ["<table class='num'><tr><th>series</th><th>runs that reached it</th><th>round</th><th>virtual time (s)</th>"
            "<th>95 % t-interval (s)</th><th>bytes sent</th></tr>"]
    for x in tta["series"]:
        ci = x.get("time_ci95")
        shown = f"[{_fmt(ci[0]) if ci[0] is not None else '−∞'}, {_fmt(ci[1])}]" if ci and ci[1] is not None else "–"
        rows.append(f"<tr><td>{_e(series[x['series']]['label'])}</td><td>{x['reached']} of {x['runs']}</td><td>{_e(_fmt(x['round']))}</td>"
                    f"<td>{_e(_fmt(x['time']))}</td><td>{_e(shown)}</td><td>{_e(fmt_bytes(x['bytes']))}</td></tr>")
    rows.append("</table>")
    return (f"<section id='tta'><h2>Time to accuracy</h2><p class='note'>When {_e(metric)} reached {op} "
            f"<b class='target'>{_e(_fmt(tta['target']))}</b> {how}: the virtual time of that round's report and the "
            "bytes sent (all messages, every link) until it was logged; mean over the runs that reached it. "
            "Right: the metric against the bytes sent so far (mean over runs), the target dashed.</p>"
            "<div class='charts' data-chart='tta'></div>" + "".join(rows) + "</section>")


def _usage_section(folders: list[dict]) -> str:
    """The section "Updates used, late and lost per round", when a log has updates or unused messages."""
    if not any(f.get("usage") for f in folders):
        return ""
    return ("<section id='usage'><h2>Updates used, late and lost per round</h2><p class='note'>Per round the update was "
            "sent for (mean over runs): the messages of kind <code>update</code> (and of any kind an algorithm judged) that "
            "the receiver used, that it did not use — late (after its round closed), stale (too many versions behind), "
            "discarded, unread (never received before the run ended) — from the log's <code>unused</code> records, and "
            "those lost (dropped, or still in flight at the end). Duplicate copies are not messages and are not drawn. "
            "The counts per round are in metrics.csv as <code>unused_&lt;reason&gt;</code>.</p>"
            "<div class='charts' data-chart='usage'></div></section>")


def render(folders: list[dict], target: Target | None = None, actors: str | None = None) -> str:
    """The HTML page for collected run folders (`collect`); `target`: `--target` (netemu/report/target.py)."""
    from netemu.report._assets import CSS, SCRIPT
    from netemu.report.target import time_to_target

    # The page's own script is the only one allowed to run (Content-Security-Policy by hash),
    # and nothing may be fetched: a second guard behind the escaping.  The "download data"
    # links are blob: URLs the script makes from the embedded JSON; a download is not a fetch,
    # so default-src 'none' stays.
    script_hash = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    series = _series(folders)
    tta = time_to_target(folders, series, target)
    data = {
        "series": series,
        "tta": tta,
        "folders": [{k: f.get(k, {}) for k in ("name", "curves", "privacy_curves", "traffic", "actors", "timeline", "loads",
                                                "rounds", "deadlines", "activity", "usage")} for f in folders],
    }
    names = ", ".join(f["name"] for f in folders)
    title = _title(folders)
    runs = [max(c["runs"] or [0]) for f in folders for by in f["curves"].values() for c in by.values()]
    ci_default = bool(runs) and min(runs) >= 3  # the t-interval by default when every curve has 3 runs or more
    cards = []
    for f in folders:
        log = (f"<p class='small'>message log: {_fmt(f['records'])} records</p>" if f["log"] is None
               else f"<p class='small muted'>{_e(f['log'])}</p>")
        cards.append(
            f"<div class='card'><h3>{_e(f['name'])}</h3><p class='small muted'>{_e(f['path'])}</p>"
            f"<p><b>scenario</b> <span class='scn-name'>{_e(f['scenario_name'])}</span></p>"
            f"<p class='desc'>{_e(f['description'])}</p>{_changed(f)}{_outcome(f['summary'])}{log}"
            f"<details><summary>scenario.toml</summary><pre>{_e(f['scenario_text'])}</pre></details></div>")
    has_privacy = any(f["privacy_curves"] or (f["summary"].get("privacy")) for f in folders)
    privacy = ""
    if has_privacy:
        privacy = ("<section id='privacy'><h2>Privacy spent</h2><p class='note'>zCDP spent so far per round "
                   "(privacy.csv; solid: mean over runs and clients, dashed: the most any client spent); the table: "
                   "totals per client (summary.json, mean over runs) and the (ε, δ)-DP they imply.</p>"
                   "<div class='charts' data-chart='privacy'></div>" + _privacy_table(folders, series) + "</section>")
    stale = any(name.startswith("staleness") for f in folders for c in f["curves"].values() for name in c)
    staleness = ("<section id='staleness'><h2>Staleness</h2><p class='note'>The metrics named staleness… (written by "
                 "asynchronous families): how many model versions old the updates merged in each round were, against the "
                 "learning curves' x axis; right: how often each value occurred over rounds and runs.</p>"
                 "<div class='charts' data-chart='staleness'></div></section>") if stale else ""
    selected = (f"<p class='note'>Actors shown: <code>--actors {_e(actors)}</code> (the clients section and the timeline; "
                "traffic and curves count everything).</p>") if actors else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src '{script_hash}'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)} — netemu report</title>
<style>{CSS}</style></head>
<body>
<header><h1 id="title">{_e(title)}</h1><p class="muted">netemu run report: {_e(names)}</p>
<div id="status" class="muted small">rendering…</div></header>
<section id="runs"><h2>Scenario and outcome</h2><div class="cards">{''.join(cards)}</div></section>
<section id="curves"><h2>Learning curves</h2>
<p class="note">Line: the mean over Monte Carlo runs that reached the round (metrics ending in _db are averaged in the linear domain);
band: the 95 % Student-t interval of that mean (from two runs on; chosen by default when every series has 3 runs or more) or
the min–max over runs. Against virtual time, a point sits at the mean time of that round's report.
Drag across a chart to zoom, double-click to reset; hover for values.</p>
<div class="controls">x axis: <label><input type="radio" name="xaxis" value="round" checked> round</label>
<label><input type="radio" name="xaxis" value="time"> virtual time (s)</label>
<label><input type="radio" name="xaxis" value="bytes"> bytes sent</label>
&nbsp; band: <label><input type="radio" name="band" value="ci"{' checked' if ci_default else ''}> 95 % t-interval</label>
<label><input type="radio" name="band" value="minmax"{'' if ci_default else ' checked'}> min–max</label></div>
<div class="charts" data-chart="curves"></div></section>
{_tta_section(tta, folders, series)}
{staleness}
{_usage_section(folders)}
<section id="traffic"><h2>Traffic per link class</h2>
<p class="note">Totals over all Monte Carlo runs; bytes are encoded envelope sizes. Delay = arrival − send; percentiles (≈) come
from a streaming sketch, exact to within ±1 % (the one <code>netemu log summary</code> uses); mean, min and max are exact.</p>
<div class="charts" data-chart="traffic"></div>{_traffic_table(folders, series)}
<p class="note">What the network did to the messages, per link class (all runs): retransmissions (attempts beyond each
message's first, under the reliable transport), attempts per delivered or dropped message (mean and max), timeouts (the
reliable transport gave up), queue drops (a full link queue) and duplicates (second copies, not counted as messages).</p>
{_network_table(folders, series)}
<div class="charts" data-chart="loads"></div></section>
<section id="activity"><h2>Participation and availability over time</h2>
<p class="note">Per round (mean over runs): the clients that sent in it (participating, solid) and the clients up when it
started (available, dashed: the clients of the log less those crashed or offline then); against the learning curves' x axis
choice of rounds or virtual time (the round's first send). Servers are not counted.</p>
<div class="charts" data-chart="activity"></div></section>
<section id="clients"><h2>Clients: participation, compute and idle time</h2>
<p class="note">Per run, then the mean over runs: participation = rounds in which the actor sent / rounds seen;
compute = virtual seconds computing (clipped to the run's end); idle = run length − compute. With more than {MANY_ACTORS}
actors: how the actors are distributed (histograms, quantiles) and the slowest ones, instead of a bar per actor.</p>{selected}
<div class="charts" data-chart="actors"></div>{_actor_table(folders, series)}</section>
{privacy}
<section id="timeline"><h2>Timeline</h2>
<p class="note">One algorithm and run per folder. Arrows: messages from send to arrival (coloured by outcome); bars: compute spans;
crosses: drops; dotted lines: the start of each round (from the log) and dashed red lines its deadlines (the algorithm's
parameters named …time, …deadline, …timeout, counted from the round's start). A window with more events than
<code>--max-events</code> is drawn aggregated: per time bin and group of lanes, the share of time computing and the messages
sent, delivered and dropped. Hover for details, drag to zoom, double-click to reset.</p>
<div class="charts" data-chart="timeline"></div></section>
<div id="tooltip" role="tooltip"></div>
<script type="application/json" id="netemu-data">{embed_json(data)}</script>
<script>{SCRIPT}</script>
</body></html>
"""
