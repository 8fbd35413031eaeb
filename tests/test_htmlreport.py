"""netemu report: the HTML page about run folders — its figures, its escaping, and the page
itself in a real headless Chromium (skipped only outside CI when Chromium is absent)."""

import base64
import fcntl
import hashlib
import json
import math
import os
import re
import select
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import orjson
import pytest

from netemu.cli import main
from netemu.errors import LogError
from netemu.report.html import (
    Window,
    collect,
    embed_json,
    natural_key,
    render,
)
from netemu.report import read_metrics
from netemu.report.series import MAX_CURVE_POINTS, thin as _thin
from netemu.run.runner import execute
from netemu.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"

# Every untrusted field carries a payload that, if it ever ran, would mark the page.
DESCRIPTION = '<script>document.body.setAttribute("data-pwned","description")</script>'
NAME = '<img src=x onerror=document.body.setAttribute("data-pwned","name")><!--'  # a run name has no "/" (it names a folder)
LABEL = "</script><script>document.body.setAttribute('data-pwned','label')</script>\u2028<!--"
HOSTILE = f"""
[run]
name = '{NAME}'
description = '{DESCRIPTION}'
seed = 4
rounds = 3
runs = 1
[topology]
kind = "star"
clients = 4
[links.uplink]
latency = {{ model = "constant", delay = 0.3 }}
[data]
kind = "linear"
dim = 3
[[algorithm]]
name = "fedavg"
label = "{LABEL.replace(chr(0x2028), chr(92) + 'u2028')}"
round_time = 2.0
"""


def _run(scenario: Path, out: Path, overrides: list[str]) -> Path:
    execute(load_scenario(scenario, overrides), out, quiet=True)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two quickstart folders (the second with a lossier uplink) and a hostile one."""
    base = tmp_path_factory.mktemp("report")
    a = _run(SCENARIOS / "quickstart.toml", base / "calm", ["run.rounds=5", "run.runs=2"])
    b = _run(SCENARIOS / "quickstart.toml", base / "lossy", ["run.rounds=5", "run.runs=2", "links.uplink.loss.p_gb=0.3"])
    (base / "hostile.toml").write_text(HOSTILE)
    h = _run(base / "hostile.toml", base / "hostile", [])
    return a, b, h


@pytest.fixture(scope="module")
def private_run(tmp_path_factory):
    return _run(SCENARIOS / "zcdpnfl_stragglers.toml", tmp_path_factory.mktemp("private") / "z", ["run.rounds=3", "run.runs=2"])


@pytest.fixture(scope="module")
def page(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "report.html"
    assert main(["report", *map(str, runs), "--out", str(out)]) == 0
    return out


def _log(run_dir: Path) -> list[dict]:
    return [orjson.loads(line) for line in (run_dir / "messages.jsonl").read_bytes().splitlines()]


# ------------------------------------------------------------------ the figures


def test_learning_curves_against_rounds_and_virtual_time_match_metrics_csv(runs):
    folder = collect(runs[0])
    rows = read_metrics(runs[0])
    c = folder["curves"]["fedavg"]["mse"]
    assert c["round"] == [0, 1, 2, 3, 4]
    for k, rnd in enumerate(c["round"]):
        values = [r[5] for r in rows if r[4] == "mse" and r[2] == rnd]
        times = [r[3] for r in rows if r[4] == "mse" and r[2] == rnd]
        assert c["mean"][k] == pytest.approx(np.mean(values), rel=1e-12)
        assert (c["lo"][k], c["hi"][k]) == (min(values), max(values))
        assert c["time"][k] == pytest.approx(np.mean(times), rel=1e-12)


def test_traffic_per_link_class_agrees_with_the_runners_counts(runs):
    """Counted from the log here, by the network in the runner: two independent tallies."""
    for run_dir in runs[:2]:
        traffic = collect(run_dir)["traffic"]["fedavg"]["by_link"]
        counts = json.loads((run_dir / "summary.json").read_text())["messages"]["fedavg"]
        assert sum(t["sent"] for t in traffic.values()) == counts["sent"]
        assert sum(t["delivered"] for t in traffic.values()) == counts["delivered"]
        assert sum(t["dropped"] for t in traffic.values()) == counts["dropped"]
        reasons: dict = {}
        for t in traffic.values():
            for k, v in t["dropped_by_reason"].items():
                reasons[k] = reasons.get(k, 0) + v
        assert reasons == counts["dropped_by_reason"]
        assert {link: t["bytes"] for link, t in traffic.items()} == counts["bytes"]


def test_delay_figures_come_from_the_logged_delays(runs):
    delays = [r["delay"] for r in _log(runs[1]) if r["event"] == "deliver" and r["link"] == "uplink"]
    d = collect(runs[1])["traffic"]["fedavg"]["by_link"]["uplink"]["delay"]
    assert d["count"] == len(delays)
    assert d["mean"] == pytest.approx(np.mean(delays), rel=1e-12)
    assert (d["min"], d["max"]) == (min(delays), max(delays))
    assert d["cdf"][-1][1] == pytest.approx(1.0)


def _delay_folder(path: Path, delays: np.ndarray) -> Path:
    """A run folder whose log holds one delivered uplink message per delay."""
    path.mkdir()
    (path / "summary.json").write_text(json.dumps({"algorithms": ["fedavg"]}))
    with open(path / "messages.jsonl", "wb") as f:
        for i, d in enumerate(delays):
            common = {"algorithm": "fedavg", "run": 0, "id": i, "src": "client-1", "dst": "server", "kind": "update",
                      "link": "uplink", "round": 0}
            f.write(orjson.dumps({"t": float(i), "event": "send", **common, "bytes": 10}) + b"\n")
            f.write(orjson.dumps({"t": float(i) + float(d), "event": "deliver", **common, "delay": float(d)}) + b"\n")
    return path


def test_the_report_and_log_summary_give_the_same_delay_percentiles(tmp_path):
    """One sketch for both commands: on 10,000 log-normal delays their p50/p90/p99 are equal,
    and each is within the sketch's 1 % of the order statistic of rank floor(q (n - 1))."""
    from netemu.report.logtools import summarize

    x = np.random.default_rng(7).lognormal(-1.0, 1.5, 10_000)
    folder = _delay_folder(tmp_path / "delays", x)
    shown = collect(folder)["traffic"]["fedavg"]["by_kind"]["update / uplink"]["delay"]
    logged = summarize(folder)["traffic"]["update / uplink"]["delay"]
    exact = np.sort(x)
    for q, key in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
        assert shown[key] == logged[key]
        assert shown[key] == pytest.approx(exact[math.floor(q * (len(x) - 1))], rel=0.01)
    assert (shown["min"], shown["max"]) == (exact[0], exact[-1])


def test_the_delay_cdf_rises_to_one_at_the_largest_delay(tmp_path):
    x = np.random.default_rng(8).lognormal(-1.0, 1.5, 2_000)
    cdf = collect(_delay_folder(tmp_path / "delays", x))["traffic"]["fedavg"]["by_link"]["uplink"]["delay"]["cdf"]
    xs, fs = [p[0] for p in cdf], [p[1] for p in cdf]
    assert xs == sorted(xs) and fs == sorted(fs)
    assert cdf[-1] == [x.max(), 1.0]
    for v, f in cdf[::50]:  # each point within one 1 % bucket of the empirical CDF
        assert np.mean(x <= v / 1.0201) - 1e-12 <= f <= np.mean(x <= v) + 1e-12


def test_per_client_figures_are_per_run_means_and_fit_in_the_run(runs):
    """Compute + idle = the run's length (never compute summed over runs); the server takes part in every round."""
    folder = collect(runs[0])
    summary = json.loads((runs[0] / "summary.json").read_text())
    span = float(np.mean(summary["virtual_time"]["fedavg"]))
    rows = {name: (p, c, i) for name, p, c, i in folder["actors"]["fedavg"]["rows"]}
    assert list(rows)[:3] == ["server", "client-0", "client-1"] and list(rows)[-1] == "client-19"
    assert rows["server"][0] == 1.0
    for name, (p, c, i) in rows.items():
        assert 0.0 <= p <= 1.0
        assert 0.0 <= c <= span + 1e-9
        assert c + i == pytest.approx(span), name


def test_participation_counts_the_rounds_a_client_sent_in(runs):
    log = _log(runs[0])
    expected = []
    for run in (0, 1):
        sends = [r for r in log if r["event"] == "send" and r["run"] == run]
        expected.append(len({r["round"] for r in sends if r["src"] == "client-3"}) / len({r["round"] for r in sends}))
    rows = {name: p for name, p, _c, _i in collect(runs[0])["actors"]["fedavg"]["rows"]}
    assert rows["client-3"] == pytest.approx(np.mean(expected))


def test_privacy_spent_per_round_matches_the_summary(private_run):
    folder = collect(private_run)
    summary = json.loads((private_run / "summary.json").read_text())["privacy"]
    for alg, curve in folder["privacy_curves"].items():
        totals = [c["rho_total"] for c in summary[alg].values()]
        assert curve["mean"][-1] == pytest.approx(np.mean(totals), rel=1e-12)
        assert curve["max"][-1] == pytest.approx(max(totals), rel=1e-12)
        assert curve["mean"] == sorted(curve["mean"])  # spending only grows


def test_the_default_timeline_window_is_the_first_three_rounds(runs):
    tl = collect(runs[0])["timeline"]
    log = _log(runs[0])
    end = next(i for i, r in enumerate(log) if r["event"] == "send" and r["run"] == 0 and r["round"] == 3)
    assert (tl["algorithm"], tl["run"], tl["until"]) == ("fedavg", 0, log[end]["t"])
    assert {m[7] for m in tl["msgs"]} == {0, 1, 2}
    # a time window: a straggler's round-2 update sent after round 3 began is outside it
    assert len(tl["msgs"]) == sum(1 for r in log[:end] if r["event"] == "send" and r["run"] == 0)


def _window_counts(run_dir: Path, run: int, since: float, until: float) -> dict:
    log = [r for r in _log(run_dir) if r["run"] == run and since <= r["t"] <= until]
    return {name: sum(1 for r in log if r["event"] == ev) for name, ev in
            (("sent", "send"), ("delivered", "deliver"), ("dropped", "drop"), ("computes", "compute"))}


def test_a_chosen_timeline_window_holds_only_its_events(runs):
    tl = collect(runs[0], Window(since=6.0, until=12.0, run=1))["timeline"]
    assert tl["run"] == 1 and tl["msgs"] and not tl["truncated"] and "dense" not in tl
    assert all(6.0 <= m[0] <= 12.0 for m in tl["msgs"]) and all(6.0 <= c[0] <= 12.0 for c in tl["computes"])


def test_a_window_with_more_events_than_the_limit_is_aggregated_not_cut(runs):
    """Per time bin and lane group, every send, delivery, drop and compute span of the window is counted."""
    tl = collect(runs[1], Window(since=6.0, until=12.0, run=1, max_events=10))["timeline"]
    d = tl["dense"]
    assert not tl["truncated"] and (tl["since"], tl["until"]) == (6.0, 12.0)
    counts = {k: int(np.sum(d[k])) for k in ("sent", "delivered", "dropped", "computes")}
    assert counts == _window_counts(runs[1], 1, 6.0, 12.0) and counts["dropped"] > 0
    assert [g[0] for g in d["groups"]][:3] == ["server", "client-0", "client-1"] and sum(g[1] for g in d["groups"]) == tl["lanes"]
    assert all(0.0 <= b <= 1.0 for row in d["busy"] for b in row)


def test_the_share_of_time_computing_is_the_compute_spans_overlap_with_each_bin(runs):
    tl = collect(runs[0], Window(since=0.0, until=15.0, run=0, max_events=10))["timeline"]
    d = tl["dense"]
    spans = [r for r in _log(runs[0]) if r["event"] == "compute" and r["run"] == 0 and r["t"] <= 15.0]
    g = [x[0] for x in d["groups"]].index("client-12")
    mine = [(r["t"], r["t"] + r["duration"]) for r in spans if r["actor"] == "client-12"]
    for b in range(0, d["bins"], 7):
        lo, hi = b * d["width"], (b + 1) * d["width"]
        busy = sum(max(0.0, min(hi, e) - max(lo, s)) for s, e in mine) / d["width"]
        assert d["busy"][g][b] == pytest.approx(min(busy, 1.0), abs=1e-3)  # rounded to 3 decimals


def test_a_timeline_of_an_algorithm_the_folder_lacks_says_so(runs):
    assert "no records of algorithm 'nope'" in collect(runs[0], Window(algorithm="nope"))["timeline"]["empty"]


def test_the_cli_passes_the_timeline_window(runs, tmp_path):
    out = tmp_path / "w.html"
    assert main(["report", str(runs[0]), "--out", str(out), "--since", "6", "--until", "12", "--run", "1", "--max-events", "10"]) == 0
    tl = _data(out.read_text())["folders"][0]["timeline"]
    assert (tl["run"], tl["since"], tl["until"], tl["max_events"]) == (1, 6.0, 12.0, 10)
    assert int(np.sum(tl["dense"]["sent"])) == _window_counts(runs[0], 1, 6.0, 12.0)["sent"]


def test_a_window_that_ends_before_it_starts_is_refused(runs, tmp_path, capsys):
    assert main(["report", str(runs[0]), "--out", str(tmp_path / "w.html"), "--since", "6", "--until", "2"]) == 2
    assert "netemu: --until 2.0 is before --since 6.0" in capsys.readouterr().err


def test_long_curves_are_thinned_to_a_bounded_number_of_points_keeping_the_last():
    keep = _thin(4001)
    assert len(keep) <= MAX_CURVE_POINTS + 1 and keep[0] == 0 and keep[-1] == 4000
    assert _thin(MAX_CURVE_POINTS) == list(range(MAX_CURVE_POINTS))


def test_actors_sort_naturally():
    assert sorted(["client-10", "client-2", "client-1"], key=natural_key) == ["client-1", "client-2", "client-10"]


# ------------------------------------------------------------------ the page, as text


def test_comparison_puts_every_folder_side_by_side(page, runs):
    text = page.read_text()
    data = _data(text)
    assert [s["label"] for s in data["series"]] == ["calm: fedavg", "lossy: fedavg", f"hostile: {LABEL}"]
    for run_dir in runs:
        assert f"<h3>{run_dir.name}</h3>" in text


def test_the_page_is_self_contained(page):
    text = page.read_text()
    assert set(re.findall(r"https?://[^\s\"'<>)]+", text)) == {"http://www.w3.org/2000/svg"}  # a namespace, never fetched
    assert not re.search(r"<(link|img|iframe|object|embed)\b", text) and not re.search(r"<[^>]*\b(src|href)=", text)
    script = re.search(r"<script>(.*?)</script>", text, re.DOTALL).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'" in text


def test_untrusted_strings_reach_the_page_only_escaped(page):
    text = page.read_text()
    for payload in (DESCRIPTION, NAME, "<script>document", "<img src", "<!--"):
        assert payload not in text
    assert html_escape(DESCRIPTION) in text and html_escape(NAME) in text
    assert text.count("<script") == 2  # the data block and the page's own script


def test_embedded_json_cannot_close_its_script_block():
    data = {"label": LABEL, "amp": "a&b", "seps": "\u2028\u2029", "nan": math.nan, "inf": [math.inf]}
    text = embed_json(data)
    assert not re.search("[<>&\u2028\u2029]", text)
    assert json.loads(text) == {"label": LABEL, "amp": "a&b", "seps": "\u2028\u2029", "nan": None, "inf": [None]}


def test_a_folder_that_is_not_a_run_folder_is_refused(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 2
    assert f"netemu: {tmp_path}: not a run folder" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_a_malformed_log_record_names_the_file_and_line(runs, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(runs[0], bad)
    lines = (bad / "messages.jsonl").read_text().splitlines()
    lines[4] = '{"t": 1.0, "event": "send"}'
    (bad / "messages.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(LogError, match=r"messages.jsonl:5: a record without a usable 'algorithm'|messages.jsonl:5: a record without a usable 'kind'"):
        collect(bad)


def test_the_page_stays_small_for_a_long_run(runs, tmp_path):
    """Only summaries and one bounded window are embedded: 8x the rounds, far less than 8x the page."""
    long = _run(SCENARIOS / "quickstart.toml", tmp_path / "long", ["run.rounds=40", "run.runs=2"])
    short_size = len(render([collect(runs[0])]))
    long_size = len(render([collect(long)]))
    log_ratio = (long / "messages.jsonl").stat().st_size / (runs[0] / "messages.jsonl").stat().st_size
    assert log_ratio > 7 and long_size < 1.5 * short_size


def html_escape(s: str) -> str:
    import html

    return html.escape(s, quote=True)


def _data(text: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="netemu-data">(.*?)</script>', text, re.DOTALL).group(1))


# ------------------------------------------------------------------ the page in a real browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HEADLESS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--hide-scrollbars")  # nothing fetched, nothing kept


@pytest.fixture
def chromium():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed, but CI must run the browser tests (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium); CI runs these tests")
    return CHROMIUM


def _browse(chromium: str, page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [chromium, *HEADLESS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra, page.as_uri()]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


class _Dom(HTMLParser):
    """Elements (tag, attributes) and the text under each class of interest, from a dumped DOM."""

    def __init__(self):
        super().__init__()
        self.elements: list[tuple[str, dict]] = []
        self.stack: list[str] = []
        self.text: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        self.stack.append(a.get("class") or "")

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self.stack and self.stack[-1]:
            self.text[self.stack[-1]] = self.text.get(self.stack[-1], "") + data

    def count(self, tag, cls=None):
        return sum(1 for t, a in self.elements if t == tag and (cls is None or cls in (a.get("class") or "").split()))


@pytest.fixture(scope="module")
def rendered(page, tmp_path_factory):
    if CHROMIUM is None:
        return None
    done = _browse(CHROMIUM, page, tmp_path_factory.mktemp("profile"), "--dump-dom")
    dom = _Dom()
    dom.feed(done.stdout)
    return done, dom


def test_the_page_loads_in_chromium_without_console_messages(chromium, rendered):
    done, dom = rendered
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line for line in done.stderr.splitlines() if ":CONSOLE" in line] == []  # errors, CSP violations, logs
    body = next(a for t, a in dom.elements if t == "body")
    assert body.get("data-rendered") == "ok"


def test_the_plots_render_as_svg(chromium, rendered, page):
    _done, dom = rendered
    data = _data(page.read_text())
    curves = sum(len(f["curves"].get(s["algorithm"], {})) for s in data["series"] for f in [data["folders"][s["folder"]]])
    assert dom.count("path", "curve") >= curves  # a mean line per series and metric, plus the delay distributions
    assert dom.count("path", "band") >= 4  # min–max bands of the two-run folders
    assert dom.count("rect", "bar") > 40  # bytes, outcomes, participation, compute/idle
    assert dom.count("line", "msg") == sum(len(f["timeline"]["msgs"]) for f in data["folders"])
    assert dom.count("rect", "compute") == sum(len(f["timeline"]["computes"]) for f in data["folders"])


def test_a_script_in_a_scenario_shows_as_text_and_runs_nothing(chromium, rendered):
    _done, dom = rendered
    assert not any("data-pwned" in a for _t, a in dom.elements)
    assert not any(t == "img" for t, _a in dom.elements)
    assert DESCRIPTION in dom.text["desc"]
    assert NAME in dom.text["scn-name"]


def test_screenshot_of_the_report(chromium, page, tmp_path):
    from PIL import Image

    shot = tmp_path / "report.png"
    done = _browse(chromium, page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,1600")
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    img = np.asarray(Image.open(shot).convert("RGB"))
    assert img.shape == (1600, 1280, 3)
    colors = {tuple(c) for c in img.reshape(-1, 3)[::7]}
    assert len(colors) > 200  # text, charts and bands, not a blank or an error page
    # the learning curves of the first two series, in the first and second palette colours
    assert (img == (31, 119, 180)).all(axis=2).sum() > 200 and (img == (255, 127, 14)).all(axis=2).sum() > 200
    if os.environ.get("NETEMU_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["NETEMU_KEEP_SCREENSHOT"])


class _DevTools:
    """Chromium driven over the DevTools protocol on --remote-debugging-pipe (fd 3: commands in,
    fd 4: replies out, NUL-separated JSON): no port, no extra dependency."""

    def __init__(self, chromium: str, page: Path, profile: Path):
        cmd_r, cmd_w = os.pipe()
        out_r, out_w = os.pipe()
        # the child's ends, moved above 9 so that bash's 3<& and 4>& cannot clobber them
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (cmd_r, out_w)]
        for fd in (cmd_r, out_w):
            os.close(fd)
        redirect = f'exec "$0" "$@" 3<&{high[0]} 4>&{high[1]} {high[0]}<&- {high[1]}>&-'
        args = ["bash", "-c", redirect, chromium, *HEADLESS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
                "--window-size=1280,1000", page.as_uri()]
        self.proc = subprocess.Popen(args, pass_fds=high, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in high:
            os.close(fd)
        self.w, self.r, self.buf, self.n, self.session = cmd_w, out_r, b"", 0, None
        target = next(t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]

    def send(self, method: str, params: dict | None = None, timeout: float = 30.0) -> dict:
        self.n += 1
        msg = {"id": self.n, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.n:
                    assert "error" not in reply, (method, reply["error"])
                    return reply["result"]
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"chromium did not answer {method}")
            if select.select([self.r], [], [], left)[0]:
                chunk = os.read(self.r, 1 << 16)
                if not chunk:
                    raise EOFError("chromium closed the DevTools pipe")
                self.buf += chunk

    def eval(self, expression: str):
        return self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"].get("value")

    def mouse(self, kind: str, x: float, y: float, clicks: int = 0) -> None:
        params = {"type": kind, "x": x, "y": y}
        if clicks:
            params.update(button="left", clickCount=clicks)
        self.send("Input.dispatchMouseEvent", params)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (OSError, TimeoutError, EOFError, AssertionError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)


@pytest.fixture
def devtools(chromium, page, tmp_path):
    tools = _DevTools(chromium, page, tmp_path / "profile")
    try:
        deadline = time.monotonic() + 20
        while tools.eval("document.body && document.body.getAttribute('data-rendered')") != "ok":
            assert time.monotonic() < deadline, "the page did not render"
            time.sleep(0.05)
        yield tools
    finally:
        tools.close()


CURVE_CHART = "document.querySelector('[data-chart=curves] svg')"
X_TICKS = (f"Array.from({CURVE_CHART}.querySelectorAll('.axis text')).filter(function (t) {{ return !t.getAttribute('transform') &&"
           " t.getAttribute('text-anchor') === 'middle'; }).map(function (t) { return t.textContent; })")


def test_the_learning_curves_switch_to_virtual_time(devtools, page):
    assert devtools.eval(X_TICKS)[-1] == "round"
    devtools.eval("document.querySelector('input[name=xaxis][value=time]').click()")
    ticks = devtools.eval(X_TICKS)
    assert ticks[-1] == "virtual time (s)"
    data = _data(page.read_text())
    times = [t for f in data["folders"] for c in f["curves"].values() for t in c["mse"]["time"]]
    assert min(times) <= float(ticks[0]) < float(ticks[-2]) <= max(times) == 25.0  # quickstart: 5 rounds of 5 s


def test_hover_shows_values_and_dragging_zooms(devtools):
    tools, chart = devtools, CURVE_CHART
    x, y, w, h = tools.eval(f"(function () {{ var r = {chart}.querySelector('rect[fill=transparent]'); r.scrollIntoView();"
                            " var b = r.getBoundingClientRect(); return [b.x, b.y, b.width, b.height]; })()")
    x_ticks = X_TICKS + ".map(Number).filter(isFinite)"
    full = tools.eval(x_ticks)
    assert full[0] == 0 and full[-1] == 4  # rounds 0..4

    tools.mouse("mouseMoved", x + w / 2, y + h / 2)  # hover: every series' value at the nearest round
    tip = tools.eval("document.getElementById('tooltip').style.display + '|' + document.getElementById('tooltip').textContent")
    assert tip.startswith("block|") and "calm: fedavg: " in tip and "lossy: fedavg: " in tip and "at round 2" in tip

    tools.mouse("mousePressed", x + 0.05 * w, y + h / 2, clicks=1)  # drag over rounds ~0.2 .. ~2
    tools.mouse("mouseMoved", x + 0.5 * w, y + h / 2)
    tools.mouse("mouseReleased", x + 0.5 * w, y + h / 2, clicks=1)
    zoomed = tools.eval(x_ticks)
    assert zoomed != full and zoomed[0] > 0 and zoomed[-1] <= 2

    for clicks in (1, 2):  # double-click: back to every round
        tools.mouse("mousePressed", x + w / 2, y + h / 2, clicks=clicks)
        tools.mouse("mouseReleased", x + w / 2, y + h / 2, clicks=clicks)
    assert tools.eval(x_ticks) == full


def test_the_outcome_per_algorithm_and_run_is_shown_when_the_summary_has_it(runs, tmp_path):
    folder = tmp_path / "stopped"
    shutil.copytree(runs[0], folder)
    summary = json.loads((folder / "summary.json").read_text())
    summary.update(complete=False, stopped_by="fedavg run 1: run.until = 12 virtual seconds reached after 2 of 5 rounds",
                   outcome={"fedavg": [{"run": 0, "rounds_planned": 5, "rounds_done": 5, "complete": True, "stopped_by": None},
                                       {"run": 1, "rounds_planned": 5, "rounds_done": 2, "complete": False,
                                        "stopped_by": "run.until = 12 virtual seconds reached after 2 of 5 rounds"}]},
                   warnings=["fedavg: <b>no</b> client participated"])
    (folder / "summary.json").write_text(json.dumps(summary))
    text = render([collect(folder)])
    assert '<span class="bad">incomplete</span>' in text and "stopped by: <code>fedavg run 1: run.until = 12" in text
    assert "<td>fedavg</td><td>1</td><td>2 / 5</td><td><span class='bad'>no</span></td>" in text
    assert "<li>fedavg: &lt;b&gt;no&lt;/b&gt; client participated</li>" in text


def test_a_folder_without_a_message_log_still_reports_its_curves_and_outcome(tmp_path):
    run_dir = _run(SCENARIOS / "quickstart.toml", tmp_path / "quiet", ["run.rounds=3", "run.runs=1", "output.log=false"])
    folder = collect(run_dir)
    assert folder["curves"]["fedavg"]["mse"]["round"] == [0, 1, 2]
    assert folder["traffic"] == {} and folder["timeline"]["empty"] and "no message log (messages.jsonl or messages.arrows)" in folder["log"]
    assert "no message log (messages.jsonl or messages.arrows) in this run folder" in render([folder])


def test_the_timeline_marks_crashes_recoveries_and_outages(tmp_path):
    """quickstart_scripted: client-2 is down from t = 50 to 100; client-7's uplink from 120 to 150."""
    run_dir = _run(SCENARIOS / "quickstart_scripted.toml", tmp_path / "s", ["run.rounds=26", "run.runs=1"])
    tl = collect(run_dir, Window(since=45.0, until=130.0))["timeline"]
    marks = [(t, what, tl["lanes"][lane], extra) for t, what, lane, extra in tl["marks"]]
    assert marks == [(50.0, "crash", "client-2", None), (100.0, "recover", "client-2", None),
                     (120.0, "outage", "client-7", ["server", 150.0])]
    crashed = [m for m in tl["msgs"] if m[5] == "crash"]
    assert crashed and all(tl["lanes"][m[3]] == "client-2" and 50.0 <= m[2] <= 100.0 for m in crashed)


# ------------------------------------------------------------------ malformed shared folders (issue 19)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
_SUMMARY_KEYS = ["scenario", "complete", "stopped_by", "rounds_planned", "rounds_done", "netemu", "seed", "runs",
                 "algorithms", "outcome", "final", "messages", "virtual_time", "wall_time_s", "warnings", "privacy"]
_RECORD_KEYS = ["t", "event", "algorithm", "run", "id", "src", "dst", "actor", "kind", "link", "round", "bytes",
                "delay", "reason", "duration", "until"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    return _run(SCENARIOS / "quickstart.toml", tmp_path_factory.mktemp("small") / "run", ["run.rounds=2", "run.runs=2"])


def _report_exit(folder: Path, capsys) -> int:
    """`netemu report` on the folder; any exception (a traceback for the user) fails the test."""
    code = main(["report", str(folder), "--out", str(folder / "r.html")])
    err = capsys.readouterr().err
    assert code in (0, 2), err
    if code == 2:
        assert err.startswith("netemu: ") and err.count("\n") == 1, err
    return code


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_summary_never_crashes_the_report(small_run, tmp_path_factory, capsys, data):
    folder = tmp_path_factory.mktemp("mut") / "run"
    shutil.copytree(small_run, folder)
    doc = json.loads((folder / "summary.json").read_text())
    key = data.draw(st.sampled_from(_SUMMARY_KEYS))
    inner = doc.get(key)
    if isinstance(inner, dict) and inner and data.draw(st.booleans()):  # one level down: an algorithm's entry
        inner[data.draw(st.sampled_from(sorted(inner)))] = data.draw(_JSON)
    else:
        doc[key] = data.draw(_JSON)
    (folder / "summary.json").write_text(json.dumps(doc))
    _report_exit(folder, capsys)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_log_record_never_crashes_the_report(small_run, tmp_path_factory, capsys, data):
    folder = tmp_path_factory.mktemp("mut") / "run"
    shutil.copytree(small_run, folder)
    lines = (folder / "messages.jsonl").read_bytes().splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    record = orjson.loads(lines[i])
    key = data.draw(st.sampled_from(_RECORD_KEYS))
    if key in record and data.draw(st.booleans()):
        del record[key]
    else:
        record[key] = data.draw(_JSON)
    lines[i] = orjson.dumps(record)
    (folder / "messages.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    _report_exit(folder, capsys)


@pytest.mark.parametrize("key, value", [("final", 5), ("algorithms", 1.5), ("virtual_time", 1.5)])
def test_a_summary_field_of_the_wrong_type_is_refused_naming_file_and_key(small_run, tmp_path, capsys, key, value):
    folder = tmp_path / "run"
    shutil.copytree(small_run, folder)
    doc = json.loads((folder / "summary.json").read_text())
    doc[key] = value
    (folder / "summary.json").write_text(json.dumps(doc))
    assert _report_exit(folder, capsys) == 2


@pytest.mark.parametrize("key, value", [("kind", None), ("src", True), ("actor", True)])
def test_a_non_string_name_or_kind_in_the_log_is_reported_as_text(small_run, tmp_path, capsys, key, value):
    """`netemu log summary` accepts such records; so does the report, showing the value as text."""
    folder = tmp_path / "run"
    shutil.copytree(small_run, folder)
    lines = [orjson.loads(x) for x in (folder / "messages.jsonl").read_bytes().splitlines()]
    event = "compute" if key == "actor" else "send"
    first = next(r for r in lines if r["event"] == event)
    first[key] = value
    (folder / "messages.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    assert _report_exit(folder, capsys) == 0


# ------------------------------------------------------------------ the report at scale (1,000 clients)

from netemu.report.page import fmt_bytes, fmt_number  # noqa: E402
from netemu.report.target import DEFAULT_FACTOR  # noqa: E402


@pytest.fixture(scope="module")
def big_run(tmp_path_factory):
    """1,000 quick-start clients, 3 rounds, log on (a few seconds); its metrics gain a staleness
    column, as an asynchronous family would write one."""
    run_dir = _run(SCENARIOS / "quickstart.toml", tmp_path_factory.mktemp("big") / "thousand",
                   ["topology.clients=1000", "run.rounds=3", "run.runs=1"])
    with open(run_dir / "metrics.csv", "a") as f:
        for rnd in range(3):
            f.write(f"fedavg,0,{rnd},{5.0 * (rnd + 1)},staleness,{rnd * 0.5}\n")
    return run_dir


@pytest.fixture(scope="module")
def big_page(big_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("bigpage") / "big.html"
    assert main(["report", str(big_run), "--out", str(out), "--target", "mse=2.5"]) == 0
    return out


def _per_actor(run_dir: Path) -> dict[str, tuple[float, float]]:
    """Participation and compute time per client of a one-run folder, straight from its log."""
    log = _log(run_dir)
    end = json.loads((run_dir / "summary.json").read_text())["virtual_time"]["fedavg"][0]
    rounds = {r["round"] for r in log if r["event"] == "send"}
    sent: dict[str, set] = {}
    comp: dict[str, float] = {}
    for r in log:
        if r["event"] == "send":
            sent.setdefault(r["src"], set()).add(r["round"])
            sent.setdefault(r["dst"], set())
        elif r["event"] == "compute":
            comp[r["actor"]] = comp.get(r["actor"], 0.0) + min(r["t"] + r["duration"], end) - r["t"]
    return {a: (len(sent.get(a, ())) / len(rounds), comp.get(a, 0.0)) for a in set(sent) | set(comp)}


def test_past_50_actors_the_page_holds_distributions_and_the_slowest_not_every_actor(big_run):
    view = collect(big_run)["actors"]["fedavg"]
    truth = _per_actor(big_run)
    assert view["actors"] == len(truth) == 1001 and view["rows"] == []
    clients = {name: v for name, v in truth.items() if name != "server"}  # the server is no client: not in the distributions
    part = np.array([p for p, _ in clients.values()])
    comp = np.array([c for _, c in clients.values()])
    assert sum(view["hist"]["participation"]["counts"]) == sum(view["hist"]["compute"]["counts"]) == 1000 and view["servers"] == 1
    assert view["quantiles"]["participation"] == pytest.approx(np.quantile(part, [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]))
    assert view["quantiles"]["compute"] == pytest.approx(np.quantile(comp, [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]))
    slowest = sorted(truth.items(), key=lambda kv: -kv[1][1])[:20]
    assert [r[2] for r in view["slowest"]] == pytest.approx([c for _, (_, c) in slowest])


def test_a_thousand_client_page_stays_small(big_run, big_page):
    """Only aggregates: the page is a small fraction of the log and does not grow with the actors."""
    size = big_page.stat().st_size
    assert size < 250_000 and size < (big_run / "messages.jsonl").stat().st_size / 8
    tl = _data(big_page.read_text())["folders"][0]["timeline"]
    assert "dense" in tl and len(tl["dense"]["groups"]) <= 40


def test_the_actors_filter_keeps_only_matching_actors_and_their_messages(big_run):
    folder = collect(big_run, actors="server,client-1?")
    rows = folder["actors"]["fedavg"]["rows"]
    assert [r[0] for r in rows] == ["server"] + [f"client-{i}" for i in range(10, 20)]
    tl = folder["timeline"]
    assert tl["lanes"] == [r[0] for r in rows] and "dense" not in tl
    log = [r for r in _log(big_run) if r["event"] == "send" and r["src"] in tl["lanes"] and r["dst"] in tl["lanes"]]
    assert len(tl["msgs"]) == len(log)
    assert folder["traffic"]["fedavg"]["by_link"]["uplink"]["sent"] > len(log)  # traffic still counts everyone


def test_round_starts_come_from_the_log_and_deadlines_from_the_algorithms_parameters(big_run):
    folder = collect(big_run)
    log = _log(big_run)
    first = {}
    for r in log:
        if r["event"] == "send":
            first.setdefault(r["round"], r["t"])
    assert [tuple(x) for x in folder["timeline"]["rounds"]] == sorted(first.items())
    assert [tuple(x) for x in folder["rounds"]["fedavg"]] == sorted(first.items())
    assert folder["deadlines"] == {"fedavg": [["round_time", 5.0]]}


def test_bytes_have_one_format_with_si_prefixes():
    assert [fmt_bytes(v) for v in (0, 126, 999, 1000, 389_286, 2_415_646, 1.5e9)] == \
        ["0 B", "126 B", "999 B", "1 kB", "389 kB", "2.42 MB", "1.5 GB"]
    assert [fmt_number(v) for v in (2415646, 2415646.0, 0.25, 1.5e-5)] == ["2,415,646", "2.42 M", "0.25", "1.50e-5"]


def test_the_page_title_is_the_scenarios_name(big_page):
    text = big_page.read_text()
    assert "<title>quickstart — netemu report</title>" in text and '<h1 id="title">quickstart</h1>' in text
    assert not re.search(r"\d\.\d+e\+\d", text.split("<script")[0])  # no 2.4e+06 in the tables
    assert re.search(r"<td>\d+(\.\d+)? kB</td>", text)


def test_time_to_accuracy_is_the_first_report_reaching_the_target_and_the_bytes_sent_until_then(runs):
    folder = collect(runs[0])
    tta = __import__("netemu.report.target", fromlist=["x"]).time_to_target([folder], [{"folder": 0, "algorithm": "fedavg"}], ("mse", 1.0))
    log = _log(runs[0])
    rows = read_metrics(runs[0])
    x = tta["series"][0]
    for h in x["per_run"]:
        hit = min((r[2], r[3]) for r in rows if r[1] == h["run"] and r[4] == "mse" and r[5] <= 1.0)
        assert (h["round"], h["time"]) == hit
        at = next(i for i, r in enumerate(log) if r["event"] == "metric" and r["run"] == h["run"] and r["round"] == hit[0])
        assert h["bytes"] == sum(r["bytes"] for r in log[:at] if r["event"] == "send" and r["run"] == h["run"])
    assert x["time"] == pytest.approx(np.mean([h["time"] for h in x["per_run"]]))


def test_the_default_target_is_the_best_final_value_relaxed_by_the_documented_factor(runs):
    from netemu.report.target import time_to_target

    folders = [collect(runs[0]), collect(runs[1])]
    series = [{"folder": 0, "algorithm": "fedavg"}, {"folder": 1, "algorithm": "fedavg"}]
    tta = time_to_target(folders, series, None)
    finals = [json.loads((r / "summary.json").read_text())["final"]["fedavg"]["mse"] for r in runs[:2]]
    assert tta["metric"] == "mse" and not tta["given"]
    assert tta["target"] == pytest.approx(min(finals) * (1 + DEFAULT_FACTOR))


def test_a_malformed_target_is_refused(runs, tmp_path, capsys):
    assert main(["report", str(runs[0]), "--out", str(tmp_path / "r.html"), "--target", "mse"]) == 2
    assert "--target 'mse': expected METRIC=VALUE" in capsys.readouterr().err


@pytest.fixture(scope="module")
def big_rendered(big_page, tmp_path_factory):
    if CHROMIUM is None:
        return None
    done = _browse(CHROMIUM, big_page, tmp_path_factory.mktemp("profile"), "--dump-dom")
    dom = _Dom()
    dom.feed(done.stdout)
    return done, dom


def test_the_thousand_client_page_renders_aggregated_views_in_chromium(chromium, big_rendered, big_page):
    done, dom = big_rendered
    assert done.returncode == 0 and [line for line in done.stderr.splitlines() if ":CONSOLE" in line] == []
    assert next(a for t, a in dom.elements if t == "body").get("data-rendered") == "ok"
    assert dom.count("rect", "hbar") > 10 and dom.count("rect", "bar") < 200  # histograms, not a bar per actor
    assert dom.count("rect", "cell-busy") > 100 and dom.count("line", "msg") == 0
    assert dom.count("line", "mark-round") == 3 and dom.count("line", "mark-deadline") == 3  # the timeline's rounds 0..2
    assert dom.count("line", "target") == 1  # the target on the metric-against-bytes chart
    assert sum(1 for t, a in dom.elements if t == "a" and "download" in (a.get("class") or "")) >= 10
    assert len(dom.elements) < 20_000
    staleness = re.search(r"<section id=.staleness.*?</section>", done.stdout, re.DOTALL).group(0)
    assert "staleness" in staleness and 'class="curve"' in staleness


def test_screenshot_of_the_thousand_client_report(chromium, big_page, tmp_path):
    from PIL import Image

    shot = tmp_path / "big.png"
    done = _browse(chromium, big_page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,7000")
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    img = np.asarray(Image.open(shot).convert("RGB"))
    assert len({tuple(c) for c in img.reshape(-1, 3)[::11]}) > 200
    if os.environ.get("NETEMU_KEEP_SCREENSHOT"):
        shutil.copy(shot, Path(os.environ["NETEMU_KEEP_SCREENSHOT"]).with_suffix(".big.png"))


def test_download_data_saves_the_charts_series_as_csv(chromium, big_page, tmp_path):
    tools = _DevTools(chromium, big_page, tmp_path / "profile")
    try:
        deadline = time.monotonic() + 20
        while tools.eval("document.body && document.body.getAttribute('data-rendered')") != "ok":
            assert time.monotonic() < deadline, "the page did not render"
            time.sleep(0.05)
        session, tools.session = tools.session, None
        tools.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path / "dl")})
        tools.session = session
        tools.eval("document.querySelector('[data-chart=curves] a.download').click()")
        target = tmp_path / "dl" / "mse.csv"
        while not target.is_file():
            assert time.monotonic() < deadline + 20, "no download"
            time.sleep(0.05)
        time.sleep(0.2)
        rows = target.read_text().splitlines()
    finally:
        tools.close()
    curve = _data(big_page.read_text())["folders"][0]["curves"]["fedavg"]["mse"]
    assert rows[0] == "series,round,y,min,max"
    assert [tuple(map(float, r.split(",")[1:])) for r in rows[1:]] == \
        [(k, m, lo, hi) for k, m, lo, hi in zip(curve["round"], curve["mean"], curve["lo"], curve["hi"])]
