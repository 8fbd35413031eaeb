"""The HTML of `netemu report`: the page for collected run folders (`render`), with every
name from a run folder escaped and the data embedded as JSON that cannot close its
<script> block (`embed_json`); the style sheet and script come from netemu/_report_page.py."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from typing import Any

import numpy as np

__all__ = ["embed_json", "render"]


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
        "folders": [{k: f.get(k, {}) for k in ("name", "curves", "privacy_curves", "traffic", "actors", "timeline", "loads")} for f in folders],
    }
    names = ", ".join(f["name"] for f in folders)
    cards = []
    for f in folders:
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
<div class="charts" data-chart="traffic"></div>{_traffic_table(folders, series)}
<div class="charts" data-chart="loads"></div></section>
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
