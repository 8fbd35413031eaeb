"""`netemu report` as a reader of a comparison: a sweep folder as its points, the description
against --set, a colour per compared series, axis labels that fit, servers apart from clients."""

import json
import re
import shutil
from pathlib import Path

import pytest

from netemu.cli import main
from netemu.report.html import collect

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    base = tmp_path_factory.mktemp("compare")
    for name, extra in (("a_long_folder_name_calm", []), ("another_long_folder_lossy", ["--set", "links.uplink.loss.p_gb=0.3"])):
        assert main(["run", str(SCENARIOS / "quickstart.toml"), "--out", str(base / name), "--quiet", "--set", "run.rounds=4",
                     "--set", "run.runs=2", "--set", "output.plots=false", *extra]) == 0
    out = base / "report.html"
    assert main(["report", str(base / "a_long_folder_name_calm"), str(base / "another_long_folder_lossy"), "--out", str(out)]) == 0
    return base, out


def test_the_page_says_when_set_changed_the_scenario_its_description_was_written_for(two):
    base, out = two
    page = out.read_text()
    assert "FedAvg, 20 clients" in page  # the file's description, kept
    assert "this run changed the file with <code>--set</code>" in page and "<code>links.uplink.loss.p_gb=0.3</code>" in page
    assert collect(base / "a_long_folder_name_calm")["summary"]["overrides"] == ["run.rounds=4", "run.runs=2", "output.plots=false"]


def _dump(page: Path, profile: Path) -> str:
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            f"--user-data-dir={profile}", "--window-size=1300,2000", "--dump-dom", page.as_uri()]
    import subprocess

    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False).stdout


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_time_to_accuracy_bars_take_each_series_colour_and_rotated_labels_fit(two, tmp_path):
    _base, out = two
    dom = _dump(out, tmp_path / "profile")
    assert 'data-rendered="ok"' in dom
    assert 'data-clipped="0"' in dom  # long folder names: rotated labels, none outside its chart
    start = dom.index('data-chart="tta"')
    tta = dom[start:dom.index("<section", start)]  # up to the next section
    fills = re.findall(r'<rect[^>]*class="bar"[^>]*>', tta)
    colours = {re.search(r'fill="([^"]+)"', r).group(1) for r in fills}
    assert len(fills) >= 2 and len(colours) == 2  # two series, two colours (as their curves)


def test_report_takes_a_sweep_folder_as_plot_does(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    assert main(["sweep", str(SCENARIOS / "quickstart.toml"), "--grid", "task.lr=0.05,0.2", "--out", str(sweep), "--set",
                 "run.rounds=2", "--set", "run.runs=1", "--set", "output.plots=false", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["plot", str(sweep), "--metric", "mse", "--x", "task.lr", "--out", str(tmp_path / "p.png")]) == 0
    assert main(["report", str(sweep), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "lr=0.05: fedavg" in page and "lr=0.2: fedavg" in page  # one series per point, named by its folder


def test_a_folder_that_is_neither_a_run_nor_a_sweep_is_still_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty"), "--out", str(tmp_path / "r.html")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def _write_run(folder: Path, records: list[dict]) -> Path:
    import orjson

    folder.mkdir()
    (folder / "metrics.csv").write_text("algorithm,run,round,time,metric,value\n")
    (folder / "messages.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return folder


def test_participation_and_availability_over_rounds_count_clients_not_the_server(tmp_path):
    def send(t, src, rnd, i):
        return {"t": t, "event": "send", "id": i, "src": src, "dst": "server", "kind": "update", "round": rnd, "bytes": 10,
                "link": "uplink"}

    records = [
        {"t": 0.0, "event": "send", "id": 0, "src": "server", "dst": "client-0", "kind": "model", "round": 0, "bytes": 10, "link": "downlink"},
        send(1.0, "client-0", 0, 1), send(1.0, "client-1", 0, 2), send(1.0, "client-2", 0, 3),
        {"t": 5.0, "event": "crash", "actor": "client-2"},
        send(10.0, "client-0", 1, 4),
        {"t": 12.0, "event": "recover", "actor": "client-2"},
        send(20.0, "client-1", 2, 5),
    ]
    a = collect(_write_run(tmp_path / "run", records))["activity"][""]
    assert a["round"] == [0, 1, 2] and a["time"] == [0.0, 10.0, 20.0]
    assert a["participating"] == [3, 1, 1] and a["available"] == [3, 2, 3] and a["clients"] == 3  # the server is not a client


def test_the_report_shows_what_the_network_did_per_link_class(tmp_path):
    base = tmp_path
    from test_netstats import LOSSY  # FedAvg over lossy uplinks, reliable transport

    (base / "s.toml").write_text(LOSSY)
    assert main(["run", str(base / "s.toml"), "--out", str(base / "run"), "--quiet", "--set", "output.plots=false"]) == 0
    net = collect(base / "run")["traffic"]["fedavg"]["by_link"]["uplink"]["network"]
    summary = json.loads((base / "run" / "summary.json").read_text())["network"]["fedavg"]["uplink"]
    assert net["retransmissions"] == summary["retransmissions"] > 0 and net["max_attempts"] == summary["max_attempts"]
    assert main(["report", str(base / "run"), "--out", str(base / "r.html")]) == 0
    assert "<th>retransmissions</th>" in (base / "r.html").read_text()
