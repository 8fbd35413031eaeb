"""The style sheet and the script of the `netemu report` page (netemu/report/page.py).

A small hand-written script draws every chart as inline SVG from the embedded JSON: line
charts with a min–max band, bars, delay distributions and the swim-lane timeline, with
hover tooltips and drag-to-zoom.  It never writes data into the page as markup (only
`textContent` and numeric attributes), loads nothing and needs no library.
"""

CSS = """
:root { --fg:#1d2330; --muted:#6b7280; --line:#e3e6ec; --bg:#fff; --card:#f7f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg);
       margin: 0 auto; padding: 12px 24px 48px; max-width: 1500px; }
h1 { font-size: 22px; margin: 8px 0 2px; } h2 { font-size: 18px; margin: 28px 0 6px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 0 0 4px; word-break: break-all; }
.muted { color: var(--muted); } .small { font-size: 12px; } .note { color: var(--muted); font-size: 12.5px; margin: 4px 0 10px; max-width: 1100px; }
.ok { background: #dcfce7; color: #166534; padding: 1px 8px; border-radius: 9px; font-weight: 600; }
.bad { background: #fee2e2; color: #991b1b; padding: 1px 8px; border-radius: 9px; font-weight: 600; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: 14px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; overflow: hidden; }
.warn { color: #92400e; font-size: 12.5px; padding-left: 18px; }
.card table { display: block; overflow-x: auto; max-width: 100%; }
.desc { font-style: italic; white-space: pre-wrap; word-break: break-word; }
pre { background: #f1f3f6; padding: 8px; overflow: auto; max-height: 420px; font-size: 12px; white-space: pre-wrap; word-break: break-word; }
table { border-collapse: collapse; margin: 8px 0; font-size: 12.5px; }
th, td { border-bottom: 1px solid var(--line); padding: 2px 8px; text-align: left; vertical-align: top; }
table.num td:not(:first-child):not(:nth-child(2)) { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { font-weight: 500; color: var(--muted); }
details { margin: 6px 0; } summary { cursor: pointer; color: #1f4e9c; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 16px; }
.charts[data-chart=timeline] { grid-template-columns: 1fr; }
.chart { border: 1px solid var(--line); border-radius: 8px; padding: 6px 8px 4px; background: #fff; min-width: 0; }
.chart h4 { margin: 2px 0 2px 4px; font-size: 13.5px; font-weight: 600; word-break: break-word; }
.chart .sub { margin: 0 0 2px 4px; font-size: 12px; color: var(--muted); word-break: break-word; }
.chart svg { width: 100%; height: auto; display: block; user-select: none; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; margin: 2px 4px 4px; }
.legend span.sw { display: inline-block; width: 14px; height: 10px; margin-right: 5px; vertical-align: -1px; border-radius: 2px; }
.controls { margin: 4px 0 10px; font-size: 13px; } .controls label { margin-right: 12px; }
#tooltip { position: fixed; pointer-events: none; background: rgba(20,24,33,.92); color: #fff; font-size: 12px; padding: 5px 8px;
           border-radius: 5px; white-space: pre; display: none; z-index: 10; max-width: 520px; overflow: hidden; }
svg text { font: 11px system-ui, sans-serif; fill: #374151; }
svg .axis line, svg .axis path { stroke: #9ca3af; } svg .grid line { stroke: #eef0f3; }
svg .sel { fill: rgba(59,130,246,.15); stroke: rgba(59,130,246,.6); }
a.download { float: right; font-size: 11.5px; color: #1f4e9c; margin: 3px 4px 0 8px; text-decoration: none; }
a.download:hover { text-decoration: underline; }
b.target { font-variant-numeric: tabular-nums; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var OUTCOME = { "delivered": "#3b82f6", "loss": "#dc2626", "outage": "#9333ea", "expired": "#f59e0b", "crash": "#111827",
                  "in flight": "#9ca3af", "pending at the log's end": "#9ca3af" };
  var status = document.getElementById("status");
  var tip = document.getElementById("tooltip");
  var charts = 0;

  function svgEl(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) { if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]); }
    if (parent) parent.appendChild(e);
    return e;
  }
  function htmlEl(tag, cls, parent, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svgText(parent, x, y, str, attrs) {
    var t = svgEl("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    t.textContent = str;
    return t;
  }
  function titled(node, str) { var t = svgEl("title", {}, node); t.textContent = str; return node; }
  // One format per kind of number, the same as the page's tables (netemu/report/page.py): bytes with
  // SI prefixes (2.42 MB), other numbers with 4 significant digits, an SI prefix from 100,000 (2.42 M)
  // and an exponent below 0.001.
  var SI = ["", "k", "M", "G", "T", "P", "E"];
  function si(v, unit) {
    var a = Math.abs(v), k = 0;
    while (a >= 999.5 && k < SI.length - 1) { a /= 1000; v /= 1000; k++; }
    return (k ? String(+v.toPrecision(3)) : String(+v.toPrecision(3))) + " " + SI[k] + unit;
  }
  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    var a = Math.abs(v);
    if (a >= 1e5) return si(v, "").trim();
    if (a !== 0 && a < 1e-3) { var p = v.toExponential(2).split("e"); return p[0] + "e" + Number(p[1]); }
    return String(+v.toPrecision(4));
  }
  // tick labels: one format along an axis (300 k … 50 k, never 300 k next to 50000)
  function tickFmt(values, f) {
    if (f && f !== fmt) return f;
    var top = 0;
    values.forEach(function (v) { top = Math.max(top, Math.abs(v)); });
    return top >= 1e5 ? function (v) { return Math.abs(v) < 1e-9 ? "0" : si(v, "").trim(); } : fmt;
  }
  function fmtBytes(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    return si(v, "B");
  }
  function fmtCount(v) { return v === null || v === undefined ? "–" : Math.round(v).toLocaleString("en-US"); }

  // "download data": the chart's numbers as CSV, made from the embedded data when clicked
  // (a blob: URL; nothing is fetched).  Cells that are text and start like a formula are quoted
  // with a leading apostrophe, so a spreadsheet shows a hostile actor name as text.
  function csvCell(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "number") return isFinite(v) ? String(v) : "";
    var t = String(v);
    if (/^[=+\-@\t\r]/.test(t)) t = "'" + t;
    return /[",\n\r]/.test(t) ? '"' + t.replace(/"/g, '""') + '"' : t;
  }
  function toCsv(rows) { return rows.map(function (r) { return r.map(csvCell).join(","); }).join("\r\n") + "\r\n"; }
  var downloads = 0;
  function downloadLink(box, title, rowsFn) {
    var a = htmlEl("a", "download", null, "download data (CSV)");
    box.insertBefore(a, box.firstChild);
    var name = (title.replace(/[^A-Za-z0-9_.-]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 60) || "chart") + ".csv";
    a.setAttribute("download", name);
    a.setAttribute("href", "#");
    a.setAttribute("data-csv", String(++downloads));
    a.addEventListener("click", function (evt) {
      evt.preventDefault();
      var url = URL.createObjectURL(new Blob([toCsv(rowsFn())], { type: "text/csv" }));
      var tmp = document.createElement("a");
      tmp.href = url; tmp.download = name;
      document.body.appendChild(tmp); tmp.click(); tmp.remove();
      setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
    });
    box.csv = rowsFn;
    return a;
  }
  function showTip(evt, lines) {
    tip.textContent = lines.join("\n");
    tip.style.display = "block";
    var x = evt.clientX + 14, y = evt.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) x = evt.clientX - tip.offsetWidth - 10;
    if (y + tip.offsetHeight > window.innerHeight) y = evt.clientY - tip.offsetHeight - 10;
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }
  function hideTip() { tip.style.display = "none"; }

  function ticks(lo, hi, n) {
    if (!(hi > lo)) return [lo];
    var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n)));
    var err = (hi - lo) / n / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }
  function logTicks(lo, hi) {
    var out = [];
    for (var p = Math.floor(Math.log10(lo)); p <= Math.ceil(Math.log10(hi)); p++) {
      var v = Math.pow(10, p);
      if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
    }
    return out.length >= 2 ? out : [lo, hi];
  }
  function scale(d0, d1, r0, r1, log) {
    if (log) {
      var l0 = Math.log10(d0), l1 = Math.log10(d1);
      return function (v) { return r0 + (Math.log10(v) - l0) / ((l1 - l0) || 1) * (r1 - r0); };
    }
    return function (v) { return r0 + (v - d0) / ((d1 - d0) || 1) * (r1 - r0); };
  }
  function extent(values, log) {
    var lo = Infinity, hi = -Infinity;
    values.forEach(function (v) { if (v !== null && isFinite(v) && (!log || v > 0)) { if (v < lo) lo = v; if (v > hi) hi = v; } });
    if (lo === Infinity) return [0, 1];
    if (lo === hi) { if (log) return [lo / 2, hi * 2]; return [lo - (Math.abs(lo) || 1) * 0.5, hi + (Math.abs(hi) || 1) * 0.5]; }
    return [lo, hi];
  }

  function chartBox(parent, title, sub) {
    var box = htmlEl("div", "chart", parent);
    htmlEl("h4", "", box, title);
    if (sub) htmlEl("p", "sub", box, sub);
    return box;
  }
  function legend(box, items) {
    var lg = htmlEl("div", "legend", box);
    items.forEach(function (it) {
      var s = htmlEl("span", "", lg);
      var sw = htmlEl("span", "sw", s);
      sw.style.background = it.color;
      if (it.dashed) sw.style.background = "repeating-linear-gradient(90deg," + it.color + " 0 4px,transparent 4px 7px)";
      s.appendChild(document.createTextNode(it.label));
    });
  }

  // An x-zoomable frame: axes, grid, clip path, drag-to-zoom and double-click reset.
  // spec: {width, height, margin, xdom, ydom or ydomFor(xdom), logx, logy, xlabel, ylabel, ylanes, draw(g, sx, sy, xdom), hover(x, evt) -> lines}
  var clipId = 0;
  function frame(box, spec) {
    var W = spec.width || 600, H = spec.height || 300, m = spec.margin || { l: 58, r: 14, t: 10, b: 38 };
    var svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H, "class": "frame" }, box);
    var full = spec.xdom.slice(), dom = spec.xdom.slice();
    var id = "clip" + (++clipId);
    function render() {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      var defs = svgEl("defs", {}, svg);
      svgEl("rect", { x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b }, svgEl("clipPath", { id: id }, defs));
      if (spec.defs) spec.defs(defs);
      var sx = scale(dom[0], dom[1], m.l, W - m.r, spec.logx);
      var ydom = spec.ydomFor ? spec.ydomFor(dom) : spec.ydom;
      var sy = spec.ylanes ? null : scale(ydom[0], ydom[1], H - m.b, m.t, spec.logy);
      var grid = svgEl("g", { "class": "grid" }, svg), axis = svgEl("g", { "class": "axis" }, svg);
      var xt = spec.logx ? logTicks(dom[0], dom[1]) : ticks(dom[0], dom[1], 7);
      if (spec.integerx) {
        var whole = xt.filter(function (v) { return Math.abs(v - Math.round(v)) < 1e-9; });
        if (whole.length >= 2) xt = whole;
      }
      var xf = tickFmt(xt, spec.xfmt);
      xt.forEach(function (v) {
        var x = sx(v);
        if (x < m.l - 0.5 || x > W - m.r + 0.5) return;
        svgEl("line", { x1: x, x2: x, y1: m.t, y2: H - m.b }, grid);
        var label = xf(v), half = String(label).length * 3.3;  // a label centred on the last tick may pass the edge
        svgText(axis, x, H - m.b + 14, label, { "text-anchor": x + half > W ? "end" : x - half < 0 ? "start" : "middle" });
      });
      if (sy) {
        var yt = spec.logy ? logTicks(ydom[0], ydom[1]) : ticks(ydom[0], ydom[1], 5), yf = tickFmt(yt, spec.yfmt);
        yt.forEach(function (v) {
          var y = sy(v);
          svgEl("line", { x1: m.l, x2: W - m.r, y1: y, y2: y }, grid);
          svgText(axis, m.l - 5, y + 3.5, yf(v), { "text-anchor": "end" });
        });
      }
      svgEl("path", { d: "M" + m.l + "," + m.t + "V" + (H - m.b) + "H" + (W - m.r), fill: "none" }, axis);
      if (spec.xlabel) svgText(axis, (m.l + W - m.r) / 2, H - 6, spec.xlabel, { "text-anchor": "middle" });
      if (spec.ylabel) svgText(axis, 12, (m.t + H - m.b) / 2, spec.ylabel, { "text-anchor": "middle", transform: "rotate(-90 12 " + (m.t + H - m.b) / 2 + ")" });
      var g = svgEl("g", { "clip-path": "url(#" + id + ")" }, svg);
      spec.draw(g, sx, sy, dom, svg);
      // round starts (dotted grey) and deadlines (dashed red), while few enough are in view to tell apart
      var marks = (spec.markers || []).filter(function (k) { return k.x >= dom[0] && k.x <= dom[1]; });
      if (marks.length && marks.length <= 120) {
        var mg = svgEl("g", { "class": "markers" }, svg);
        marks.forEach(function (k) {
          var x = sx(k.x), dl = k.kind === "deadline";
          titled(svgEl("line", { x1: x, x2: x, y1: m.t, y2: H - m.b, stroke: dl ? "#dc2626" : "#6b7280", "stroke-width": 1,
                                 "stroke-opacity": dl ? 0.55 : 0.6, "stroke-dasharray": dl ? "5,3" : "1,3", "class": "mark-" + k.kind }, mg), k.label);
        });
      }
      if (spec.hline !== undefined && spec.hline !== null && sy) {
        var hy = sy(spec.hline);
        if (hy >= m.t && hy <= H - m.b) svgEl("line", { x1: m.l, x2: W - m.r, y1: hy, y2: hy, stroke: "#111827", "stroke-dasharray": "6,4", "class": "target" }, svg);
      }
      var guide = svgEl("line", { y1: m.t, y2: H - m.b, stroke: "#6b7280", "stroke-dasharray": "3,3", visibility: "hidden" }, svg);
      var overlay = svgEl("rect", { x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b, fill: "transparent" }, svg);
      var sel = null, x0 = null;
      function local(evt) {
        var r = svg.getBoundingClientRect();
        return (evt.clientX - r.left) * W / r.width;
      }
      function inv(px) {
        var f = (px - m.l) / (W - m.l - m.r);
        if (spec.logx) return Math.pow(10, Math.log10(dom[0]) + f * (Math.log10(dom[1]) - Math.log10(dom[0])));
        return dom[0] + f * (dom[1] - dom[0]);
      }
      overlay.addEventListener("mousedown", function (evt) {
        x0 = local(evt);
        sel = svgEl("rect", { x: x0, y: m.t, width: 0, height: H - m.t - m.b, "class": "sel" }, svg);
        evt.preventDefault();
      });
      overlay.addEventListener("mousemove", function (evt) {
        var px = Math.max(m.l, Math.min(W - m.r, local(evt)));
        if (sel) { sel.setAttribute("x", Math.min(x0, px)); sel.setAttribute("width", Math.abs(px - x0)); }
        if (spec.hover) {
          var lines = spec.hover(inv(px), evt);
          if (lines && lines.length) {
            guide.setAttribute("x1", px); guide.setAttribute("x2", px); guide.setAttribute("visibility", "visible");
            showTip(evt, lines);
          }
        }
      });
      overlay.addEventListener("mouseleave", function () { guide.setAttribute("visibility", "hidden"); hideTip(); if (sel) { sel.remove(); sel = null; } });
      overlay.addEventListener("mouseup", function (evt) {
        if (!sel) return;
        var px = Math.max(m.l, Math.min(W - m.r, local(evt)));
        sel.remove(); sel = null;
        if (Math.abs(px - x0) > 6) {
          var a = inv(Math.min(x0, px)), b = inv(Math.max(x0, px));
          dom = [a, b]; hideTip(); render();
        }
      });
      overlay.addEventListener("dblclick", function () { dom = full.slice(); render(); });
      if (spec.after) spec.after(svg, sx, sy, dom);
    }
    render();
    charts++;
  }

  function nearest(xs, x) {
    var best = -1, bd = Infinity;
    for (var i = 0; i < xs.length; i++) { var d = Math.abs(xs[i] - x); if (d < bd) { bd = d; best = i; } }
    return best;
  }

  // Line chart. series: [{label, color, x, y, lo, hi, dashed}]
  function lineChart(parent, title, sub, series, opts) {
    var box = chartBox(parent, title, sub);
    var xs = [], ys = [];
    series.forEach(function (s) { xs = xs.concat(s.x); ys = ys.concat(s.y, s.lo || [], s.hi || []); });
    if (!xs.length) { htmlEl("p", "muted", box, "no data"); return; }
    var pos = ys.filter(function (v) { return v !== null && isFinite(v); });
    var logy = opts.logy !== undefined ? opts.logy : (pos.length > 0 && Math.min.apply(null, pos) > 0 && Math.max.apply(null, pos) / Math.min.apply(null, pos) > 100);
    function ydomFor(dom) {  // the y range of what is visible between dom[0] and dom[1]
      var vis = [];
      series.forEach(function (s) {
        for (var i = 0; i < s.x.length; i++) {
          if (s.x[i] >= dom[0] && s.x[i] <= dom[1]) vis.push(s.y[i], s.lo ? s.lo[i] : null, s.hi ? s.hi[i] : null);
        }
      });
      if (opts.hline !== undefined && opts.hline !== null) vis.push(opts.hline);
      var yd = extent(vis.length ? vis : ys, logy);
      if (!logy) { var pad = (yd[1] - yd[0]) * 0.05; yd = [yd[0] - pad, yd[1] + pad]; }
      return yd;
    }
    var xd = extent(xs, opts.logx);
    if (opts.hline !== undefined && opts.hline !== null) ys = ys.concat([opts.hline]);
    downloadLink(box, title, function () {
      var rows = [["series", opts.xname || "x", "y", "min", "max"]];
      series.forEach(function (s) { for (var i = 0; i < s.x.length; i++) rows.push([s.label, s.x[i], s.y[i], s.lo ? s.lo[i] : null, s.hi ? s.hi[i] : null]); });
      return rows;
    });
    frame(box, {
      xdom: xd, ydomFor: ydomFor, logx: opts.logx, logy: logy, xlabel: opts.xlabel, ylabel: opts.ylabel, integerx: opts.integerx,
      xfmt: opts.xfmt, yfmt: opts.yfmt, markers: opts.markers, hline: opts.hline,
      draw: function (g, sx, sy) {
        series.forEach(function (s) {
          function ok(i) { return s.y[i] !== null && isFinite(s.x[i]) && (!opts.logx || s.x[i] > 0) && (!logy || s.y[i] > 0); }
          if (s.lo && s.hi) {
            var top = [], bot = [];
            for (var i = 0; i < s.x.length; i++) {
              if (!ok(i) || s.lo[i] === null || s.hi[i] === null || (logy && s.lo[i] <= 0)) continue;
              top.push(sx(s.x[i]).toFixed(2) + "," + sy(s.hi[i]).toFixed(2));
              bot.unshift(sx(s.x[i]).toFixed(2) + "," + sy(s.lo[i]).toFixed(2));
            }
            if (top.length > 1) svgEl("path", { d: "M" + top.concat(bot).join("L") + "Z", fill: s.color, "fill-opacity": 0.16, stroke: "none", "class": "band" }, g);
          }
          var d = "", pen = false;
          for (var j = 0; j < s.x.length; j++) {
            if (!ok(j)) { pen = false; continue; }
            d += (pen ? "L" : "M") + sx(s.x[j]).toFixed(2) + "," + sy(s.y[j]).toFixed(2);
            pen = true;
          }
          if (d) svgEl("path", { d: d, fill: "none", stroke: s.color, "stroke-width": 1.8, "stroke-dasharray": s.dashed ? "5,3" : null, "class": "curve" }, g);
          if (s.x.length <= 40 && !opts.nomarkers) {
            for (var k = 0; k < s.x.length; k++) if (ok(k)) svgEl("circle", { cx: sx(s.x[k]), cy: sy(s.y[k]), r: 2.6, fill: s.color }, g);
          }
        });
      },
      hover: function (x) {
        var lines = [];
        series.forEach(function (s) {
          var i = nearest(s.x, x);
          if (i < 0) return;
          var extra = opts.extra ? opts.extra(s, i) : "";
          var band = s.lo && s.hi ? "  [" + fmt(s.lo[i]) + " … " + fmt(s.hi[i]) + "]" : "";
          lines.push(s.label + ": " + (opts.yfmt || fmt)(s.y[i]) + band + "  at " + (opts.xname || "x") + " " + (opts.xfmt || fmt)(s.x[i]) + extra);
        });
        return lines;
      }
    });
    legend(box, series.map(function (s) { return { label: s.label, color: s.color, dashed: s.dashed }; }));
  }

  // Bars: categories along x; per category one bar per group, stacked by `stacks`.
  // values[c][g] = [v per stack]
  // catColors: a colour per category (one bar per category, e.g. one per series compared), else per group
  function barChart(parent, title, sub, categories, groups, stacks, values, ylabel, legendByGroup, yfmt, catColors) {
    var box = chartBox(parent, title, sub);
    yfmt = yfmt || fmt;
    downloadLink(box, title, function () {
      var rows = [["category", "series", "part", ylabel || "value"]];
      categories.forEach(function (c, ci) { groups.forEach(function (gr, gi) { stacks.forEach(function (st, si) { rows.push([c, gr.label, st.label, values[ci][gi][si] || 0]); }); }); });
      return rows;
    });
    var W = 600, longest = 0;
    categories.forEach(function (c) { longest = Math.max(longest, Math.min(28, c.length)); });
    var cw0 = (W - 72) / Math.max(1, categories.length), rotate = longest * 6.2 > cw0;
    // a label rotated by 40° reaches cos 40° of its length left of its bar and sin 40° below the axis
    var m = { l: rotate ? Math.max(58, Math.ceil(longest * 6.2 * 0.77 - cw0 / 2) + 6) : 58, r: 14, t: 10,
              b: rotate ? Math.ceil(longest * 6.2 * 0.65) + 24 : 40 }, H = 260 + m.b;
    var top = 0;
    values.forEach(function (row) { row.forEach(function (st) { var s = st.reduce(function (a, b) { return a + b; }, 0); if (s > top) top = s; }); });
    top = top > 0 ? top * 1.05 : 1;
    var svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H }, box);
    var sy = scale(0, top, H - m.b, m.t, false);
    var grid = svgEl("g", { "class": "grid" }, svg), axis = svgEl("g", { "class": "axis" }, svg);
    var yt = ticks(0, top, 5), ytf = tickFmt(yt, yfmt);
    yt.forEach(function (v) {
      svgEl("line", { x1: m.l, x2: W - m.r, y1: sy(v), y2: sy(v) }, grid);
      svgText(axis, m.l - 5, sy(v) + 3.5, ytf(v), { "text-anchor": "end" });
    });
    svgEl("path", { d: "M" + m.l + "," + m.t + "V" + (H - m.b) + "H" + (W - m.r), fill: "none" }, axis);
    if (ylabel) svgText(axis, 12, (m.t + H - m.b) / 2, ylabel, { "text-anchor": "middle", transform: "rotate(-90 12 " + (m.t + H - m.b) / 2 + ")" });
    var cw = (W - m.l - m.r) / Math.max(1, categories.length), bw = cw * 0.8 / Math.max(1, groups.length);
    var every = Math.ceil(categories.length / 40);
    categories.forEach(function (c, ci) {
      var x0 = m.l + ci * cw + cw * 0.1;
      groups.forEach(function (gr, gi) {
        var acc = 0;
        stacks.forEach(function (st, si) {
          var v = values[ci][gi][si] || 0;
          if (v <= 0) return;
          var r = svgEl("rect", { x: x0 + gi * bw, y: sy(acc + v), width: Math.max(0.5, bw - 1), height: Math.max(0.5, sy(acc) - sy(acc + v)),
                                  fill: st.color || (catColors && catColors[ci]) || gr.color, "fill-opacity": st.opacity, "class": "bar" }, svg);
          titled(r, c + "\n" + gr.label + (stacks.length > 1 ? " · " + st.label : "") + ": " + yfmt(v));
          acc += v;
        });
      });
      if (ci % every === 0) {
        var lx = m.l + ci * cw + cw / 2, ly = H - m.b + 12;
        var label = c.length > 28 ? c.slice(0, 27) + "…" : c;
        titled(rotate ? svgText(axis, lx, ly, label, { "text-anchor": "end", transform: "rotate(-40 " + lx + " " + ly + ")" })
                      : svgText(axis, lx, ly, label, { "text-anchor": "middle" }), c);
      }
    });
    charts++;
    var items = stacks.length > 1 && !legendByGroup ? stacks : catColors ? categories.map(function (c, ci) { return { label: c, color: catColors[ci] }; }) : groups;
    legend(box, items.map(function (it) { return { label: it.label, color: it.color }; }));
  }

  function colorOf(i) { return PALETTE[i % PALETTE.length]; }

  // Histograms on a numeric axis, one translucent set of bars per series: [{label, color, edges, counts}]
  function histChart(parent, title, sub, series, xlabel) {
    var box = chartBox(parent, title, sub);
    var lo = Infinity, hi = -Infinity, top = 0;
    series.forEach(function (s) { lo = Math.min(lo, s.edges[0]); hi = Math.max(hi, s.edges[s.edges.length - 1]); s.counts.forEach(function (c) { top = Math.max(top, c); }); });
    downloadLink(box, title, function () {
      var rows = [["series", "from", "to", "actors"]];
      series.forEach(function (s) { s.counts.forEach(function (c, i) { rows.push([s.label, s.edges[i], s.edges[i + 1], c]); }); });
      return rows;
    });
    frame(box, {
      xdom: [lo, hi > lo ? hi : lo + 1], ydom: [0, (top || 1) * 1.05], xlabel: xlabel, ylabel: "actors",
      draw: function (g, sx, sy) {
        series.forEach(function (s) {
          s.counts.forEach(function (c, i) {
            if (!c) return;
            var x0 = sx(s.edges[i]), x1 = sx(s.edges[i + 1]);
            svgEl("rect", { x: x0, y: sy(c), width: Math.max(0.8, x1 - x0 - 0.6), height: Math.max(0.5, sy(0) - sy(c)), fill: s.color,
                            "fill-opacity": series.length > 1 ? 0.45 : 0.75, "class": "hbar" }, g);
          });
        });
      },
      hover: function (x) {
        var lines = [];
        series.forEach(function (s) {
          for (var i = 0; i < s.counts.length; i++) {
            if (x >= s.edges[i] && x <= s.edges[i + 1]) { lines.push(s.label + ": " + fmtCount(s.counts[i]) + " actors in " + fmt(s.edges[i]) + " … " + fmt(s.edges[i + 1])); break; }
          }
        });
        return lines;
      }
    });
    legend(box, series.map(function (s) { return { label: s.label, color: s.color }; }));
  }

  // round starts and deadlines of a series, as markers on a time axis
  function roundMarkers(f, alg, lo, hi) {
    var out = [], rounds = (f.rounds || {})[alg] || [], dl = (f.deadlines || {})[alg] || [];
    rounds.forEach(function (r) {
      if (lo !== undefined && (r[1] < lo || r[1] > hi)) return;
      out.push({ x: r[1], kind: "round", label: "round " + r[0] + " starts at " + fmt(r[1]) + " s" });
      dl.forEach(function (d) { out.push({ x: r[1] + d[1], kind: "deadline", label: "round " + r[0] + ": " + d[0] + " = " + fmt(d[1]) + " s after its start (" + fmt(r[1] + d[1]) + " s)" }); });
    });
    return out;
  }

  // ---------------------------------------------------------------- sections
  var D = JSON.parse(document.getElementById("netemu-data").textContent);
  var S = D.series;
  function folderOf(s) { return D.folders[s.folder]; }

  function drawCurves() {
    var root = document.querySelector("[data-chart=curves]");
    while (root.firstChild) root.removeChild(root.firstChild);
    var xaxis = document.querySelector("input[name=xaxis]:checked").value;
    var metrics = [];
    S.forEach(function (s) { Object.keys(folderOf(s).curves[s.algorithm] || {}).forEach(function (mname) { if (metrics.indexOf(mname) < 0) metrics.push(mname); }); });
    metrics.sort();
    if (!metrics.length) { htmlEl("p", "muted", root, "no metrics.csv rows"); return; }
    var stale = metrics.filter(function (mname) { return /^staleness/.test(mname); });
    // unused_<reason> counts are drawn with the updates used and lost (drawUsage), not as learning curves
    metrics = metrics.filter(function (mname) { return !/^staleness/.test(mname) && !/^unused_/.test(mname); });
    var sroot = document.querySelector("[data-chart=staleness]");
    if (sroot) while (sroot.firstChild) sroot.removeChild(sroot.firstChild);
    var markers = xaxis === "time" && S.length ? roundMarkers(folderOf(S[0]), S[0].algorithm) : undefined;
    function draw(root, mname) {
      var series = [];
      S.forEach(function (s, i) {
        var c = (folderOf(s).curves[s.algorithm] || {})[mname];
        if (!c) return;
        if (xaxis === "bytes" && !c.bytes) return;
        series.push({ label: s.label + (c.step > 1 ? " (every " + c.step + " rounds: the page holds at most 1500 points a curve)" : ""), color: colorOf(i),
                      x: xaxis === "time" ? c.time : xaxis === "bytes" ? c.bytes : c.round, y: c.mean, lo: bandOf(c)[0], hi: bandOf(c)[1], c: c });
      });
      var db = /_db$/.test(mname);
      var sub = markers && markers.length ? "dotted: round starts, dashed red: deadlines (" + S[0].label + ")" : xaxis === "bytes" ? "bytes sent by every actor until the round's metrics were logged (mean over runs)" : "";
      if (xaxis === "bytes" && !series.length) { htmlEl("p", "muted", chartBox(root, mname), "bytes sent: no message log"); return; }
      lineChart(root, mname + (db ? " (dB)" : ""), sub, series, {
        xlabel: xaxis === "time" ? "virtual time (s)" : xaxis === "bytes" ? "bytes sent" : "round", integerx: xaxis === "round",
        xname: xaxis === "time" ? "t" : xaxis === "bytes" ? "bytes" : "round", ylabel: mname, markers: markers, xfmt: xaxis === "bytes" ? fmtBytes : undefined,
        logy: /^staleness/.test(mname) ? false : undefined,
        extra: function (s, i) { return xaxis === "round" ? " (t " + fmt(s.c.time[i]) + " s)" : " (round " + s.c.round[i] + ")"; }
      });
    }
    metrics.forEach(function (mname) { draw(root, mname); });
    if (sroot) stale.forEach(function (mname) { draw(sroot, mname); });
  }

  // Per round: the updates used, not used (by reason) and lost, one stacked bar chart per series (netemu/report/usage.py)
  var USAGE = [{ key: "used", label: "used", color: "#2ca02c" }, { key: "late", label: "late", color: "#ff7f0e" },
               { key: "stale", label: "stale", color: "#bcbd22" }, { key: "discarded", label: "discarded", color: "#9467bd" },
               { key: "unread", label: "unread", color: "#8c564b" }, { key: "lost", label: "lost (dropped, in flight)", color: "#d62728" }];
  function drawUsage() {
    var root = document.querySelector("[data-chart=usage]");
    if (!root) return;
    while (root.firstChild) root.removeChild(root.firstChild);
    var drawn = 0;
    S.forEach(function (s, i) {
      var u = (folderOf(s).usage || {})[s.algorithm];
      if (!u || !u.round.length) return;
      var values = u.round.map(function (_, k) { return [USAGE.map(function (p) { return u[p.key][k]; })]; });
      var sub = "messages of kind " + u.kinds.join(", ") + " per round they were sent for, mean over " + u.runs + " run" + (u.runs > 1 ? "s" : "") +
        (u.duplicate ? "; " + fmt(u.duplicate) + " duplicate copies not drawn" : "");
      barChart(root, s.label + ": updates used vs late vs lost", sub, u.round.map(String), [{ label: s.label, color: colorOf(i) }],
        USAGE, values, "messages", false, fmtCount);
      drawn++;
    });
    if (!drawn) htmlEl("p", "muted", root, "no updates in the message log");
  }

  function drawActivity() {
    var root = document.querySelector("[data-chart=activity]");
    if (!root) return;
    while (root.firstChild) root.removeChild(root.firstChild);
    var el = document.querySelector("input[name=xaxis]:checked"), time = el && el.value === "time";
    var series = [];
    S.forEach(function (s, i) {
      var a = (folderOf(s).activity || {})[s.algorithm];
      if (!a || !a.round.length) return;
      var x = time ? a.time : a.round;
      series.push({ label: s.label + ": participating", color: colorOf(i), x: x, y: a.participating });
      series.push({ label: s.label + ": available", color: colorOf(i), x: x, y: a.available, dashed: true });
    });
    if (!series.length) { htmlEl("p", "muted", root, "no message log"); return; }
    lineChart(root, "Clients participating and available", "per round, mean over runs", series, {
      xlabel: time ? "virtual time (s)" : "round", integerx: !time, xname: time ? "t" : "round", ylabel: "clients", logy: false
    });
  }

  // The curves' band: the 95 % t-interval of the mean or the min–max over runs (the "band" switch)
  function bandOf(c) {
    var el = document.querySelector("input[name=band]:checked");
    return el && el.value === "ci" && c.ci_lo ? [c.ci_lo, c.ci_hi] : [c.lo, c.hi];
  }

  function drawTta() {
    var root = document.querySelector("[data-chart=tta]");
    var T = D.tta;
    if (!root || !T || T.target === null) return;
    var rows = T.series.filter(function (x) { return x.reached; });
    var cats = rows.map(function (x) { return S[x.series].label; });
    var groups = [{ label: "mean over the runs that reached it", color: "#1f77b4" }];
    var colors = rows.map(function (x) { return colorOf(x.series); });  // each series its colour, as in the curves
    var op = T.higher ? "≥ " : "≤ ";
    if (rows.length) {
      barChart(root, "Virtual time to " + T.metric + " " + op + fmt(T.target), "seconds until the round whose report first reached the target (mean over the runs that reached it)", cats, groups,
        [{ label: "time" }], rows.map(function (x) { return [[x.time]]; }), "virtual time (s)", false, null, colors);
      if (rows.some(function (x) { return x.bytes !== null; }))
        barChart(root, "Bytes sent to " + T.metric + " " + op + fmt(T.target), "all messages, every link, until that round's metrics were logged", cats, groups,
          [{ label: "bytes" }], rows.map(function (x) { return [[x.bytes || 0]]; }), "bytes sent", false, fmtBytes, colors);
    } else htmlEl("p", "muted", root, "no series reached " + T.metric + " " + op + fmt(T.target));
    var series = [];
    S.forEach(function (s, i) {
      var c = (folderOf(s).curves[s.algorithm] || {})[T.metric];
      if (c && c.bytes) series.push({ label: s.label, color: colorOf(i), x: c.bytes, y: c.mean, lo: bandOf(c)[0], hi: bandOf(c)[1], c: c });
    });
    if (series.length) lineChart(root, T.metric + " against bytes sent", "dashed: the target " + fmt(T.target), series, {
      xlabel: "bytes sent", xname: "bytes", ylabel: T.metric, xfmt: fmtBytes, hline: T.target,
      extra: function (s, i) { return " (round " + s.c.round[i] + ")"; }
    });
  }

  function drawTraffic() {
    var root = document.querySelector("[data-chart=traffic]");
    var links = [], rows = [];
    S.forEach(function (s, i) {
      var t = folderOf(s).traffic[s.algorithm];
      if (!t) return;
      rows.push({ s: s, i: i, t: t });
      Object.keys(t.by_link).forEach(function (l) { if (links.indexOf(l) < 0) links.push(l); });
    });
    if (!rows.length) { htmlEl("p", "muted", root, "no message log"); return; }
    links.sort();
    var groups = rows.map(function (r) { return { label: r.s.label, color: colorOf(r.i) }; });
    barChart(root, "Bytes per run, by link class", "encoded envelope bytes sent, mean per Monte Carlo run", links, groups, [{ label: "bytes" }],
      links.map(function (l) { return rows.map(function (r) { var x = r.t.by_link[l]; return [x ? x.bytes_per_run : 0]; }); }), "bytes / run", false, fmtBytes);
    var reasons = [];
    rows.forEach(function (r) { links.forEach(function (l) { var x = r.t.by_link[l]; if (x) Object.keys(x.dropped_by_reason).forEach(function (k) { if (reasons.indexOf(k) < 0) reasons.push(k); }); }); });
    reasons.sort();
    var stacks = [{ label: "delivered", color: OUTCOME.delivered }].concat(reasons.map(function (k, j) { return { label: "dropped: " + k, color: OUTCOME[k] || PALETTE[(j + 3) % 10] }; }));
    stacks.push({ label: "in flight at the end", color: OUTCOME["in flight"] });
    var cats = [], vals = [];
    rows.forEach(function (r) {
      links.forEach(function (l) {
        var x = r.t.by_link[l];
        if (!x) return;
        cats.push((rows.length > 1 ? r.s.label + " · " : "") + l);
        vals.push([[x.delivered].concat(reasons.map(function (k) { return x.dropped_by_reason[k] || 0; }), [x.in_flight])]);
      });
    });
    barChart(root, "Messages by outcome", "per link class, all runs; drops by reason", cats, [{ label: "messages", color: "#888" }], stacks, vals, "messages");
    var series = [], zeroOnly = [];
    rows.forEach(function (r) {
      links.forEach(function (l, li) {
        var x = r.t.by_link[l];
        if (!x || !x.delay.cdf) return;
        var cdf = x.delay.cdf.filter(function (p) { return p[0] > 0; });
        if (!cdf.length) { zeroOnly.push((rows.length > 1 ? r.s.label + " · " : "") + l); return; }
        series.push({ label: (rows.length > 1 ? r.s.label + " · " : "") + l + " (p50≈" + fmt(x.delay.p50) + " s, max " + fmt(x.delay.max) + " s)",
                      color: colorOf(r.i), dashed: li % 2 === 1, x: cdf.map(function (p) { return p[0]; }), y: cdf.map(function (p) { return p[1]; }) });
      });
    });
    var note = zeroOnly.length ? "; every delay 0 (not drawn on the log axis): " + zeroOnly.join(", ") : "";
    if (series.length) lineChart(root, "Delay distribution", "fraction of delivered messages with delay ≤ x (arrival − send)" + note, series,
      { logx: true, logy: false, xlabel: "delay (s)", ylabel: "fraction ≤ delay", xname: "delay", nomarkers: true });
  }

  function drawLoads() {
    var root = document.querySelector("[data-chart=loads]");
    var series = [];
    S.forEach(function (s, i) {
      var by = (folderOf(s).loads || {})[s.algorithm];
      if (!by) return;
      Object.keys(by).forEach(function (l, li) {
        var x = by[l], share = x.mean_utilization === null ? "" : ", mean " + Math.round(100 * x.mean_utilization) + " % of " + fmt(x.capacity_mbps) + " Mbit/s";
        var many = S.length > 1;  // several series: a colour per series, solid and dashed links; one: a colour per link
        series.push({ label: (many ? s.label + " · " : "") + l + share, color: many ? colorOf(i) : PALETTE[li % 10], dashed: many && li % 2 === 1, x: x.x, y: x.y });
      });
    });
    if (series.length) lineChart(root, "Shared link load", "Mbit/s in use on each link that carried two or more transfers at once (max-min sharing; first run, time-weighted mean per bin)", series,
      { logx: false, logy: false, xlabel: "virtual time (s)", ylabel: "Mbit/s", xname: "t", nomarkers: true, markers: roundMarkers(folderOf(S[0]), S[0].algorithm) });
  }

  function drawActors() {
    var root = document.querySelector("[data-chart=actors]");
    var rows = [];
    var many = [];
    S.forEach(function (s, i) {
      var a = folderOf(s).actors[s.algorithm];
      if (a && a.hist) many.push({ s: s, i: i, a: a });
      else if (a && a.rows.length) rows.push({ s: s, i: i, a: a });
    });
    if (!rows.length && !many.length) { htmlEl("p", "muted", root, "no message log"); return; }
    if (many.length) {
      var what = [["participation", "Participation", "rounds in which the actor sent / rounds seen (mean over runs)", "participation rate"],
                  ["compute", "Compute time", "virtual seconds computing per run (mean over runs)", "compute time (s)"],
                  ["idle", "Idle time", "run length − compute time (mean over runs)", "idle time (s)"]];
      what.forEach(function (w) {
        var q = many.map(function (r) { var x = r.a.quantiles[w[0]]; return r.s.label + ": median " + fmt(x[3]) + ", p10–p90 " + fmt(x[1]) + "–" + fmt(x[5]) + ", max " + fmt(x[6]); });
        histChart(root, w[1] + ": distribution over " + many.map(function (r) { return fmtCount(r.a.actors); }).join(" / ") + " actors", w[2] + ". " + q.join("; "),
          many.map(function (r) { return { label: r.s.label, color: colorOf(r.i), edges: r.a.hist[w[0]].edges, counts: r.a.hist[w[0]].counts }; }), w[3]);
      });
      var slow = many[0].a.slowest;
      barChart(root, "The " + slow.length + " actors with the most compute time" + (many.length > 1 ? ": " + many[0].s.label : ""),
        "virtual seconds per run (mean over runs): solid compute, pale idle", slow.map(function (x) { return x[0]; }),
        [{ label: many[0].s.label, color: colorOf(many[0].i) }], [{ label: "compute" }, { label: "idle", opacity: 0.22 }],
        slow.map(function (x) { return [[x[2], x[3]]]; }), "seconds", true);
    }
    if (!rows.length) return;
    // series with the same actors share a chart (e.g. one scenario's algorithms, or the same scenario compared)
    var sets = [], byKey = {};
    rows.forEach(function (r) {
      var key = r.a.rows.map(function (x) { return x[0]; }).join("\u0001");
      if (!byKey[key]) { byKey[key] = []; sets.push(byKey[key]); }
      byKey[key].push(r);
    });
    sets.forEach(function (set) {
      var names = set[0].a.rows.map(function (x) { return x[0]; });
      var where = "";
      if (sets.length > 1) {
        var folders = [];
        set.forEach(function (r) { var n = folderOf(r.s).name; if (folders.indexOf(n) < 0) folders.push(n); });
        where = ": " + folders.join(", ");
      }
      var groups = set.map(function (r) { return { label: r.s.label, color: colorOf(r.i) }; });
      barChart(root, "Participation per actor" + where, "rounds in which the actor sent / rounds seen (mean over runs)", names, groups,
        [{ label: "participation" }], names.map(function (n, k) { return set.map(function (r) { return [r.a.rows[k][1]]; }); }), "participation rate");
      barChart(root, "Compute and idle time per actor" + where, "virtual seconds per run (mean over runs): solid compute, pale idle", names, groups,
        [{ label: "compute" }, { label: "idle", opacity: 0.22 }], names.map(function (n, k) { return set.map(function (r) { return [r.a.rows[k][2], r.a.rows[k][3]]; }); }),
        "seconds", true);
    });
  }

  function drawPrivacy() {
    var root = document.querySelector("[data-chart=privacy]");
    if (!root) return;
    var series = [];
    S.forEach(function (s, i) {
      var p = folderOf(s).privacy_curves[s.algorithm];
      if (!p) return;
      series.push({ label: s.label + ": mean", color: colorOf(i), x: p.round, y: p.mean });
      series.push({ label: s.label + ": max", color: colorOf(i), x: p.round, y: p.max, dashed: true });
    });
    if (series.length) lineChart(root, "zCDP spent so far (ρ)", "", series, { xlabel: "round", ylabel: "ρ", xname: "round", logy: false, integerx: true });
    else htmlEl("p", "muted", root, "no privacy.csv");
  }

  function drawTimeline(root, f, fi) {
    var tl = f.timeline;
    var title = "Timeline: " + f.name;
    if (!tl || tl.empty) { htmlEl("p", "muted", chartBox(root, title), tl ? tl.empty : "no message log"); return; }
    if (tl.dense) { drawDenseTimeline(root, f, title); return; }
    var sub = tl.algorithm + ", run " + tl.run + ": " + fmt(tl.since) + " s to " + fmt(tl.until) + " s, " + tl.msgs.length + " messages, " +
              tl.computes.length + " compute spans; the window ends at " + tl.ends_at + (tl.truncated ? " — truncated" : "");
    var box = chartBox(root, title, sub);
    downloadLink(box, title, function () {
      var rows = [["sent", "from", "arrived", "to", "kind", "outcome", "bytes", "round"]];
      tl.msgs.forEach(function (mm) { rows.push([mm[0], tl.lanes[mm[1]], mm[2], tl.lanes[mm[3]], tl.kinds[mm[4]], mm[5], mm[6], mm[7]]); });
      tl.computes.forEach(function (c) { rows.push([c[0], tl.lanes[c[2]], c[0] + c[1], tl.lanes[c[2]], "compute", "", "", c[3]]); });
      return rows;
    });
    var lanes = tl.lanes, LH = Math.max(3, Math.min(16, 2400 / Math.max(1, lanes.length))), m = { l: 100, r: 14, t: 10, b: 38 };
    var H = m.t + m.b + Math.max(3, lanes.length) * LH, W = 1200;
    var lo = tl.since, hi = tl.until > tl.since ? tl.until : tl.since + 1;
    function ly(i) { return m.t + (i + 0.5) * LH; }
    var used = {};
    frame(box, {
      width: W, height: H, margin: m, xdom: [lo, hi], ydom: [0, 1], ylanes: true, xlabel: "virtual time (s)",
      markers: timelineMarkers(f, tl),
      defs: function (defs) {
        Object.keys(OUTCOME).forEach(function (k, i) {
          var mk = svgEl("marker", { id: "arr" + fi + "_" + i, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" }, defs);
          svgEl("path", { d: "M0,0L10,5L0,10z", fill: OUTCOME[k] }, mk);
        });
      },
      draw: function (g, sx) {
        lanes.forEach(function (n, i) {
          if (i % 2 === 0) svgEl("rect", { x: m.l, y: ly(i) - LH / 2, width: W - m.l - m.r, height: LH, fill: "#f8f9fb" }, g);
        });
        tl.marks.forEach(function (k) {
          if (k[1] === "outage") {
            var upto = k[3][1] === null ? hi : k[3][1];  // null: an outage without end
            var r = svgEl("rect", { x: sx(k[0]), y: ly(k[2]) - LH / 2, width: Math.max(1, sx(Math.min(upto, hi)) - sx(k[0])), height: LH, fill: "#9ca3af", "fill-opacity": 0.3 }, g);
            titled(r, "outage " + lanes[k[2]] + "->" + k[3][0] + " from " + fmt(k[0]) + " s until " + (k[3][1] === null ? "the end" : fmt(k[3][1]) + " s"));
          } else {
            var c = svgEl("circle", { cx: sx(k[0]), cy: ly(k[2]), r: 4, fill: k[1] === "crash" ? "#111827" : "#16a34a" }, g);
            titled(c, k[1] + " " + lanes[k[2]] + " at " + fmt(k[0]) + " s");
          }
        });
        tl.computes.forEach(function (c) {
          var r = svgEl("rect", { x: sx(c[0]), y: ly(c[2]) - 4, width: Math.max(1, sx(c[0] + c[1]) - sx(c[0])), height: 8, fill: "#16a34a", "fill-opacity": 0.55, "class": "compute" }, g);
          titled(r, lanes[c[2]] + " computes, round " + c[3] + ": " + fmt(c[0]) + " s + " + fmt(c[1]) + " s");
        });
        var keys = Object.keys(OUTCOME);
        tl.msgs.forEach(function (mm) {
          var outcome = mm[5], col = OUTCOME[outcome] || "#6b7280", ki = keys.indexOf(outcome);
          used[outcome] = col;
          var x1 = sx(mm[0]), y1 = ly(mm[1]), y2 = ly(mm[3]);
          var arrived = mm[2] !== null, x2 = arrived ? sx(mm[2]) : W - m.r;
          var dropped = outcome !== "delivered" && arrived;
          var ln = svgEl("line", { x1: x1, y1: y1, x2: x2, y2: y2, stroke: col, "stroke-width": 1.1, "stroke-opacity": 0.75,
                                   "stroke-dasharray": dropped || !arrived ? "3,2" : null,
                                   "marker-end": !dropped && ki >= 0 ? "url(#arr" + fi + "_" + ki + ")" : null, "class": "msg" }, g);
          var desc = tl.kinds[mm[4]] + " " + lanes[mm[1]] + " -> " + lanes[mm[3]] + ", round " + mm[7] + ", " + fmtBytes(mm[6]) + "\nsent " + fmt(mm[0]) + " s, " +
                     (arrived ? (outcome === "delivered" ? "delivered " : "dropped (" + outcome + ") ") + fmt(mm[2]) + " s (delay " + fmt(mm[2] - mm[0]) + " s)" : outcome);
          titled(ln, desc);
          if (dropped) {
            var p = svgEl("path", { d: "M" + (x2 - 4) + "," + (y2 - 4) + "L" + (x2 + 4) + "," + (y2 + 4) + "M" + (x2 - 4) + "," + (y2 + 4) + "L" + (x2 + 4) + "," + (y2 - 4),
                                    stroke: col, "stroke-width": 2, "class": "drop" }, g);
            titled(p, desc);
          }
        });
      },
      after: function (svg) {
        var every = Math.ceil(11 / LH);  // every lane labelled while they are tall enough, else every k-th
        lanes.forEach(function (n, i) {
          if (i % every) return;
          var t = svgText(svg, m.l - 6, ly(i) + 3.5, n.length > 16 ? n.slice(0, 15) + "…" : n, { "text-anchor": "end" });
          titled(t, n);
        });
      }
    });
    var items = Object.keys(used).map(function (k) { return { label: k === "delivered" ? "delivered" : k === "in flight" || k.indexOf("pending") === 0 ? k : "dropped: " + k, color: used[k] }; });
    items.push({ label: "compute", color: "#16a34a" });
    var kinds = {};
    tl.marks.forEach(function (k) { kinds[k[1]] = true; });
    if (kinds.crash) items.push({ label: "crash", color: "#111827" });
    if (kinds.recover) items.push({ label: "recover", color: "#16a34a" });
    if (kinds.outage) items.push({ label: "link outage (sender's lane)", color: "#d1d5db" });
    if ((tl.rounds || []).length) items.push({ label: "round start", color: "#6b7280" });
    if (((f.deadlines || {})[tl.algorithm] || []).length) items.push({ label: "deadline", color: "#dc2626", dashed: true });
    legend(box, items);
  }

  function timelineMarkers(f, tl) {
    var out = [], dl = (f.deadlines || {})[tl.algorithm] || [];
    (tl.rounds || []).forEach(function (r) {
      out.push({ x: r[1], kind: "round", label: "round " + r[0] + " starts at " + fmt(r[1]) + " s (its first send)" });
      dl.forEach(function (d) { out.push({ x: r[1] + d[1], kind: "deadline", label: "round " + r[0] + ": " + d[0] + " = " + fmt(d[1]) + " s after its start (" + fmt(r[1] + d[1]) + " s)" }); });
    });
    return out;
  }

  // A window too dense to draw message by message: per time bin and lane group, the share of the
  // group's time spent computing (green, top half of the cell), messages delivered to it (blue, bottom
  // half, darker = more) and dropped on their way to it (a red bar, taller = more).
  function drawDenseTimeline(root, f, title) {
    var tl = f.timeline, a = tl.dense, G = a.groups, nb = a.bins;
    var sent = 0, dropped = 0, delivered = 0, computes = 0;
    G.forEach(function (g, gi) { for (var b = 0; b < nb; b++) { sent += a.sent[gi][b]; delivered += a.delivered[gi][b]; dropped += a.dropped[gi][b]; computes += a.computes[gi][b]; } });
    var per = G.length && G[G.length - 1][1] > 1 ? ", up to " + fmtCount(Math.max.apply(null, G.map(function (g) { return g[1]; }))) + " actors a row" : "";
    var sub = tl.algorithm + ", run " + tl.run + ": " + fmt(tl.since) + " s to " + fmt(tl.until) + " s, " + fmtCount(sent) + " messages sent, " +
              fmtCount(computes) + " compute spans, " + fmtCount(tl.lanes) + " actors — more than " + fmtCount(tl.max_events) + " events (--max-events), so drawn " +
              "aggregated: " + nb + " time bins of " + fmt(a.width) + " s × " + G.length + " rows" + per + "; --since/--until or --actors narrow it to single messages. " +
              "The window ends at " + tl.ends_at + (tl.truncated ? " — truncated" : "");
    var box = chartBox(root, title, sub);
    box.setAttribute("data-dense", "1");
    downloadLink(box, title, function () {
      var rows = [["from", "to", "actors", "first actor … last actor", "sent", "delivered", "dropped", "compute spans started", "share of time computing"]];
      G.forEach(function (g, gi) { for (var b = 0; b < nb; b++) rows.push([tl.since + b * a.width, tl.since + (b + 1) * a.width, g[1], g[0], a.sent[gi][b], a.delivered[gi][b], a.dropped[gi][b], a.computes[gi][b], a.busy[gi][b]]); });
      return rows;
    });
    var maxd = 1, maxx = 1;
    G.forEach(function (g, gi) { for (var b = 0; b < nb; b++) { maxd = Math.max(maxd, a.delivered[gi][b]); maxx = Math.max(maxx, a.dropped[gi][b]); } });
    var LH = Math.max(10, Math.min(22, 900 / Math.max(1, G.length))), m = { l: 150, r: 14, t: 10, b: 38 }, W = 1200;
    var H = m.t + m.b + G.length * LH, lo = tl.since, hi = tl.until > tl.since ? tl.until : tl.since + 1;
    frame(box, {
      width: W, height: H, margin: m, xdom: [lo, hi], ydom: [0, 1], ylanes: true, xlabel: "virtual time (s)", markers: timelineMarkers(f, tl),
      draw: function (g, sx) {
        G.forEach(function (grp, gi) {
          var y = m.t + gi * LH;
          if (gi % 2 === 0) svgEl("rect", { x: m.l, y: y, width: W - m.l - m.r, height: LH, fill: "#f8f9fb" }, g);
          for (var b = 0; b < nb; b++) {
            var x0 = sx(lo + b * a.width), x1 = sx(lo + (b + 1) * a.width), w = Math.max(0.6, x1 - x0);
            var busy = a.busy[gi][b], d = a.delivered[gi][b], x = a.dropped[gi][b];
            if (busy > 0) svgEl("rect", { x: x0, y: y + 1, width: w, height: LH / 2 - 1, fill: "#16a34a", "fill-opacity": Math.min(1, 0.08 + busy * 0.92), "class": "cell-busy" }, g);
            if (d > 0) svgEl("rect", { x: x0, y: y + LH / 2, width: w, height: LH / 2 - 1, fill: "#3b82f6", "fill-opacity": 0.12 + 0.88 * Math.sqrt(d / maxd), "class": "cell-msg" }, g);
            if (x > 0) { var h = Math.max(2, (LH - 2) * Math.sqrt(x / maxx)); svgEl("rect", { x: x0 + w / 2 - 1, y: y + LH - 1 - h, width: 2, height: h, fill: "#dc2626", "class": "cell-drop" }, g); }
          }
        });
      },
      hover: function (t, evt) {
        var svg = box.querySelector("svg"), r = svg.getBoundingClientRect();
        var py = (evt.clientY - r.top) * H / r.height, gi = Math.floor((py - m.t) / LH), b = Math.floor((t - lo) / a.width);
        if (gi < 0 || gi >= G.length || b < 0 || b >= nb) return [];
        return [G[gi][0] + " (" + fmtCount(G[gi][1]) + " actor" + (G[gi][1] > 1 ? "s" : "") + ")", fmt(lo + b * a.width) + " s … " + fmt(lo + (b + 1) * a.width) + " s",
                "computing: " + Math.round(100 * a.busy[gi][b]) + " % of the time", "sent: " + fmtCount(a.sent[gi][b]) + ", delivered to: " + fmtCount(a.delivered[gi][b]) +
                ", dropped on the way to: " + fmtCount(a.dropped[gi][b])];
      },
      after: function (svg) {
        G.forEach(function (grp, gi) {
          var label = grp[0].length > 24 ? grp[0].slice(0, 23) + "…" : grp[0];
          titled(svgText(svg, m.l - 6, m.t + (gi + 0.5) * LH + 3.5, label, { "text-anchor": "end" }), grp[0] + " (" + grp[1] + " actors)");
        });
      }
    });
    legend(box, [{ label: "share of time computing", color: "#16a34a" }, { label: "messages delivered to the row", color: "#3b82f6" },
                 { label: "dropped (" + fmtCount(dropped) + ")", color: "#dc2626" }, { label: "round start", color: "#6b7280" }, { label: "deadline", color: "#dc2626", dashed: true }]);
  }

  // Axis texts drawn (partly) outside their chart's box would be cut off: how many (0 on a good page).
  function clippedLabels() {
    var n = 0;
    Array.prototype.forEach.call(document.querySelectorAll("svg"), function (svg) {
      var box = svg.getBoundingClientRect();
      if (!box.width) return;  // not laid out (a closed section)
      Array.prototype.forEach.call(svg.querySelectorAll(".axis text"), function (t) {
        var r = t.getBoundingClientRect();
        if (r.width && (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)) n++;
      });
    });
    return n;
  }

  function main() {
    drawCurves();
    drawTta();
    drawTraffic();
    drawLoads();
    drawUsage();
    drawActivity();
    drawActors();
    drawPrivacy();
    var root = document.querySelector("[data-chart=timeline]");
    D.folders.forEach(function (f, fi) { drawTimeline(root, f, fi); });
    Array.prototype.forEach.call(document.querySelectorAll("input[name=xaxis]"), function (r) { r.addEventListener("change", drawCurves); r.addEventListener("change", drawActivity); });
    Array.prototype.forEach.call(document.querySelectorAll("input[name=band]"), function (r) { r.addEventListener("change", drawCurves); });
    status.textContent = charts + " charts; hover for values, drag across a chart to zoom, double-click to reset";
    document.body.setAttribute("data-clipped", String(clippedLabels()));
    document.body.setAttribute("data-rendered", "ok");
  }
  try {
    main();
  } catch (err) {
    status.textContent = "the report could not be drawn: " + err;
    status.className = "bad";
    document.body.setAttribute("data-rendered", "error");
    throw err;
  }
})();
"""
