"""The style sheet and the script of the `netemu report` page (netemu/reportpage.py).

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
  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
    return String(+v.toPrecision(4));
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
      xt.forEach(function (v) {
        var x = sx(v);
        if (x < m.l - 0.5 || x > W - m.r + 0.5) return;
        svgEl("line", { x1: x, x2: x, y1: m.t, y2: H - m.b }, grid);
        svgText(axis, x, H - m.b + 14, fmt(v), { "text-anchor": "middle" });
      });
      if (sy) {
        var yt = spec.logy ? logTicks(ydom[0], ydom[1]) : ticks(ydom[0], ydom[1], 5);
        yt.forEach(function (v) {
          var y = sy(v);
          svgEl("line", { x1: m.l, x2: W - m.r, y1: y, y2: y }, grid);
          svgText(axis, m.l - 5, y + 3.5, fmt(v), { "text-anchor": "end" });
        });
      }
      svgEl("path", { d: "M" + m.l + "," + m.t + "V" + (H - m.b) + "H" + (W - m.r), fill: "none" }, axis);
      if (spec.xlabel) svgText(axis, (m.l + W - m.r) / 2, H - 6, spec.xlabel, { "text-anchor": "middle" });
      if (spec.ylabel) svgText(axis, 12, (m.t + H - m.b) / 2, spec.ylabel, { "text-anchor": "middle", transform: "rotate(-90 12 " + (m.t + H - m.b) / 2 + ")" });
      var g = svgEl("g", { "clip-path": "url(#" + id + ")" }, svg);
      spec.draw(g, sx, sy, dom, svg);
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
      var yd = extent(vis.length ? vis : ys, logy);
      if (!logy) { var pad = (yd[1] - yd[0]) * 0.05; yd = [yd[0] - pad, yd[1] + pad]; }
      return yd;
    }
    var xd = extent(xs, opts.logx);
    frame(box, {
      xdom: xd, ydomFor: ydomFor, logx: opts.logx, logy: logy, xlabel: opts.xlabel, ylabel: opts.ylabel, integerx: opts.integerx,
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
          lines.push(s.label + ": " + fmt(s.y[i]) + band + "  at " + (opts.xname || "x") + " " + fmt(s.x[i]) + extra);
        });
        return lines;
      }
    });
    legend(box, series.map(function (s) { return { label: s.label, color: s.color, dashed: s.dashed }; }));
  }

  // Bars: categories along x; per category one bar per group, stacked by `stacks`.
  // values[c][g] = [v per stack]
  function barChart(parent, title, sub, categories, groups, stacks, values, ylabel, legendByGroup) {
    var box = chartBox(parent, title, sub);
    var W = 600, longest = 0;
    categories.forEach(function (c) { longest = Math.max(longest, Math.min(28, c.length)); });
    var cw0 = (W - 72) / Math.max(1, categories.length), rotate = longest * 6.2 > cw0;
    var m = { l: 58, r: 14, t: 10, b: rotate ? Math.min(150, 26 + longest * 4.6) : 40 }, H = 260 + m.b;
    var top = 0;
    values.forEach(function (row) { row.forEach(function (st) { var s = st.reduce(function (a, b) { return a + b; }, 0); if (s > top) top = s; }); });
    top = top > 0 ? top * 1.05 : 1;
    var svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H }, box);
    var sy = scale(0, top, H - m.b, m.t, false);
    var grid = svgEl("g", { "class": "grid" }, svg), axis = svgEl("g", { "class": "axis" }, svg);
    ticks(0, top, 5).forEach(function (v) {
      svgEl("line", { x1: m.l, x2: W - m.r, y1: sy(v), y2: sy(v) }, grid);
      svgText(axis, m.l - 5, sy(v) + 3.5, fmt(v), { "text-anchor": "end" });
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
                                  fill: st.color || gr.color, "fill-opacity": st.opacity, "class": "bar" }, svg);
          titled(r, c + "\n" + gr.label + (stacks.length > 1 ? " · " + st.label : "") + ": " + fmt(v));
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
    var items = stacks.length > 1 && !legendByGroup ? stacks : groups;
    legend(box, items.map(function (it) { return { label: it.label, color: it.color }; }));
  }

  function colorOf(i) { return PALETTE[i % PALETTE.length]; }

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
    metrics.forEach(function (mname) {
      var series = [];
      S.forEach(function (s, i) {
        var c = (folderOf(s).curves[s.algorithm] || {})[mname];
        if (!c) return;
        series.push({ label: s.label + (c.step > 1 ? " (every " + c.step + " rounds: the page holds at most 1500 points a curve)" : ""), color: colorOf(i), x: xaxis === "time" ? c.time : c.round,
                      y: c.mean, lo: c.lo, hi: c.hi, c: c });
      });
      var db = /_db$/.test(mname);
      lineChart(root, mname + (db ? " (dB)" : ""), "", series, {
        xlabel: xaxis === "time" ? "virtual time (s)" : "round", integerx: xaxis !== "time", xname: xaxis === "time" ? "t" : "round", ylabel: mname,
        extra: function (s, i) { return xaxis === "time" ? " (round " + s.c.round[i] + ")" : " (t " + fmt(s.c.time[i]) + " s)"; }
      });
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
      links.map(function (l) { return rows.map(function (r) { var x = r.t.by_link[l]; return [x ? x.bytes_per_run : 0]; }); }), "bytes / run");
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
      { logx: false, logy: false, xlabel: "virtual time (s)", ylabel: "Mbit/s", xname: "t", nomarkers: true });
  }

  function drawActors() {
    var root = document.querySelector("[data-chart=actors]");
    var rows = [];
    S.forEach(function (s, i) { var a = folderOf(s).actors[s.algorithm]; if (a && a.rows.length) rows.push({ s: s, i: i, a: a }); });
    if (!rows.length) { htmlEl("p", "muted", root, "no message log"); return; }
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
    var sub = tl.algorithm + ", run " + tl.run + ": " + fmt(tl.since) + " s to " + fmt(tl.until) + " s, " + tl.msgs.length + " messages, " +
              tl.computes.length + " compute spans; the window ends at " + tl.ends_at + (tl.truncated ? " — truncated" : "");
    var box = chartBox(root, title, sub);
    var lanes = tl.lanes, LH = Math.max(3, Math.min(16, 2400 / Math.max(1, lanes.length))), m = { l: 100, r: 14, t: 10, b: 38 };
    var H = m.t + m.b + Math.max(3, lanes.length) * LH, W = 1200;
    var lo = tl.since, hi = tl.until > tl.since ? tl.until : tl.since + 1;
    function ly(i) { return m.t + (i + 0.5) * LH; }
    var used = {};
    frame(box, {
      width: W, height: H, margin: m, xdom: [lo, hi], ydom: [0, 1], ylanes: true, xlabel: "virtual time (s)",
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
          var desc = tl.kinds[mm[4]] + " " + lanes[mm[1]] + " -> " + lanes[mm[3]] + ", round " + mm[7] + ", " + mm[6] + " bytes\nsent " + fmt(mm[0]) + " s, " +
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
    legend(box, items);
  }

  function main() {
    drawCurves();
    drawTraffic();
    drawLoads();
    drawActors();
    drawPrivacy();
    var root = document.querySelector("[data-chart=timeline]");
    D.folders.forEach(function (f, fi) { drawTimeline(root, f, fi); });
    Array.prototype.forEach.call(document.querySelectorAll("input[name=xaxis]"), function (r) { r.addEventListener("change", drawCurves); });
    status.textContent = charts + " charts; hover for values, drag across a chart to zoom, double-click to reset";
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
