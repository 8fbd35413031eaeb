"""Delivered messages an algorithm does not use say why: one `unused` record each (late, stale,
duplicate, discarded, unread), counted per round in metrics.csv and per reason and sender in
summary.json, and used + unused = delivered for the updates a server receives."""

import csv
import json
import tomllib
from collections import Counter
from pathlib import Path

import orjson
import pytest
import tomli_w

from helpers import Sender, logged_world, records
from netemu import Actor, Constant, Link, star
from netemu.cli import main
from netemu.coordination import gather

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _log(folder: Path) -> list[dict]:
    return [orjson.loads(line) for line in (folder / "messages.jsonl").read_bytes().splitlines()]


def _metrics(folder: Path) -> dict[str, dict[str, dict[int, float]]]:
    out: dict[str, dict[str, dict[int, float]]] = {}
    with open(folder / "metrics.csv", newline="") as f:
        for r in csv.DictReader(f):
            out.setdefault(r["algorithm"], {}).setdefault(r["metric"], {})[int(r["round"])] = float(r["value"])
    return out


def _run(tmp: Path, scenario: str, labels: list[str], *sets: str) -> Path:
    raw = tomllib.loads((SCENARIOS / scenario).read_text())
    raw["algorithm"] = [a for a in raw["algorithm"] if a.get("label", a["name"]) in labels]
    path = tmp / scenario
    path.write_text(tomli_w.dumps(raw))
    out = tmp / "run"
    assert main(["run", str(path), "--quiet", "--out", str(out), "--set", "output.plots=false", *(x for s in sets for x in ("--set", s))]) == 0
    return out


@pytest.fixture(scope="module")
def stragglers(tmp_path_factory):
    """stragglers_async: ten slow clients that miss FedAvg's 5 s deadline, FedBuff with a staleness bound,
    over-commitment that closes rounds early, partial aggregation that carries late updates over."""
    return _run(tmp_path_factory.mktemp("stragglers"), "stragglers_async.toml",
                ["fedavg", "bounded-staleness", "overcommit", "partial-agg"], "run.rounds=6", "run.runs=1")


def _unused(log, alg, reason=None):
    return [r for r in log if r["event"] == "unused" and r["algorithm"] == alg and (reason is None or r["reason"] == reason)]


def test_a_straggler_update_after_the_deadline_is_late_in_the_log_metrics_and_summary(stragglers):
    log = _log(stragglers)
    late = _unused(log, "fedavg", "late")
    assert late and {r["kind"] for r in late} == {"update"} and {r["dst"] for r in late} == {"server"}
    assert {r["src"] for r in late} <= {f"client-{k}" for k in range(10, 20)}  # the slow ones
    starts = {r["round"]: r["t"] for r in reversed(log) if r["event"] == "send" and r["algorithm"] == "fedavg" and r["kind"] == "model"}
    for r in late:  # how late: after the round's deadline, 5 s after it started (every round runs to its deadline here)
        assert r["late"] == pytest.approx(r["t"] - (starts[r["round"]] + 5.0), abs=1e-9) and r["late"] > 0
        assert r["round"] < max(starts)
    per_round = Counter(r["round"] for r in late)
    metrics = _metrics(stragglers)["fedavg"]
    assert {k: v for k, v in metrics["unused_late"].items() if v} == per_round
    summary = json.loads((stragglers / "summary.json").read_text())["messages"]["fedavg"]
    assert summary["unused"]["late"] == len(late)
    assert sum(c.get("late", 0) for c in summary["unused_by_sender"].values()) == len(late)
    assert summary["unused_by_sender"][late[0]["src"]]["late"] == sum(r["src"] == late[0]["src"] for r in late)


@pytest.mark.parametrize("alg", ["fedavg", "bounded-staleness", "overcommit", "partial-agg"])
def test_updates_used_and_unused_add_up_to_those_delivered_to_the_server(stragglers, alg):
    log = _log(stragglers)
    delivered = Counter(r["round"] for r in log if r["event"] == "deliver" and r["algorithm"] == alg and r["dst"] == "server"
                        and not r.get("duplicate"))
    unused = Counter(r["round"] for r in _unused(log, alg) if r["dst"] == "server")
    used = Counter({k: int(v) for k, v in _metrics(stragglers)[alg]["participants"].items()})
    if alg in ("fedavg", "overcommit"):  # a round's participants are its own updates: per round
        assert delivered - unused == +used
    else:  # FedBuff's and partial aggregation's rounds use updates of earlier rounds too: in total
        assert sum(delivered.values()) - sum(unused.values()) == sum(used.values())


def test_staleness_bounded_drops_are_counted_stale(stragglers):
    log = _log(stragglers)
    stale = _unused(log, "bounded-staleness", "stale")
    metrics = _metrics(stragglers)["bounded-staleness"]
    assert stale and len(stale) == sum(metrics["dropped_stale"].values()) == sum(metrics["unused_stale"].values())
    assert Counter(r["round"] for r in stale) == {k: v for k, v in metrics["unused_stale"].items() if v}
    assert json.loads((stragglers / "summary.json").read_text())["messages"]["bounded-staleness"]["unused"]["stale"] == len(stale)


def test_over_commitment_marks_the_answers_after_the_quorum_late_and_partial_aggregation_uses_them(stragglers):
    log = _log(stragglers)
    late = _unused(log, "overcommit", "late")
    assert late and all(r["late"] > 0 for r in late)
    assert len(late) == sum(_metrics(stragglers)["overcommit"]["dropped_stale"].values())
    assert not [r for r in _unused(log, "partial-agg") if r["kind"] == "update"]  # carried into the next round: used


def test_a_run_without_unused_messages_writes_no_unused_rows(stragglers):
    assert "unused_late" not in _metrics(stragglers)["partial-agg"]
    assert json.loads((stragglers / "summary.json").read_text())["messages"]["partial-agg"]["unused_by_sender"] == {}


def test_graph_filter_servers_mark_dropped_late_updates_and_use_carried_ones(tmp_path):
    out = _run(tmp_path, "graphfl_stragglers.toml", ["fedpnp-soft-drop", "fedpnp-soft-carry"], "run.rounds=2", "run.runs=1")
    log = _log(out)
    late = _unused(log, "fedpnp-soft-drop", "late")
    assert len(late) == 5 and {r["round"] for r in late} == {1}  # the five slow clients' round-1 updates, at 25 s
    assert all(r["late"] == pytest.approx(5.0) for r in late)  # 25 s to compute, 20 s deadline
    assert not _unused(log, "fedpnp-soft-carry", "late")
    assert _metrics(out)["fedpnp-soft-drop"]["unused_late"] == {1: 5.0, 2: 0.0}  # rounds 1 and 2 (round 0: the statistics)


def test_the_general_fedavg_beside_them_marks_late_updates_and_partial_aggregation_uses_them(tmp_path):
    out = _run(tmp_path, "graphfl_stragglers.toml", ["fedavg-drop", "fedavg-carry"], "run.rounds=2", "run.runs=1")
    log = _log(out)
    late = _unused(log, "fedavg-drop", "late")
    assert len(late) == 5 and {r["round"] for r in late} == {0}  # the five slow clients' first updates, at 25 s
    assert all(r["late"] == pytest.approx(5.0) for r in late)  # 25 s to compute, 20 s deadline
    assert not _unused(log, "fedavg-carry", "late") and not _unused(log, "fedavg-carry", "stale")
    assert _metrics(out)["fedavg-drop"]["unused_late"] == {0: 5.0, 1: 0.0}  # its first round is round 0


# ------------------------------------------------------------------ the port and the gather


class Gatherer(Actor):
    def __init__(self, rounds, **options):
        super().__init__("server")
        self.rounds, self.options, self.got = rounds, options, []

    async def run(self):
        for r in range(self.rounds):
            self.round = r
            self.got.append(await gather(self, "update", self.now + 5.0, round=r, **self.options))


def _world(gatherer, plans, **link):
    g = star(2)
    world, buf = logged_world(g, seed=0, links={e: Link(Constant(1.0), **link) for e in g.edges})
    world.add(gatherer)
    for k, plan in plans.items():
        world.add(Sender(f"client-{k}", plan, linger=0.0))
    world.run()
    return world, records(buf)


def test_gather_marks_an_answer_to_a_closed_round_late_by_the_time_since_it_closed():
    gatherer = Gatherer(2)
    world, recs = _world(gatherer, {0: [(0.0, "server", "update", None, 0)], 1: [(6.5, "server", "update", None, 0)]})
    (rec,) = [r for r in recs if r["event"] == "unused"]
    assert rec == {"t": 7.5, "event": "unused", "id": 1, "src": "client-1", "dst": "server", "kind": "update", "round": 0,
                   "reason": "late", "late": 2.5}
    assert [len(g) for g in gatherer.got] == [1, 0]
    assert world.engine.unused_tally.counts == {(0, "client-1", "late"): 1}


def test_gather_counts_a_duplicate_copy_once_and_marks_the_copy():
    gatherer = Gatherer(1, quorum=2)
    _, recs = _world(gatherer, {0: [(0.0, "server", "update", None, 0)], 1: [(2.0, "server", "update", None, 0)]}, duplicate=1.0)
    (dup,) = [r for r in recs if r["event"] == "unused"]  # client-1's copy would come after the run ended
    assert (dup["t"], dup["id"], dup["src"], dup["reason"]) == (1.0, 0, "client-0", "duplicate")
    assert [m.src for m in gatherer.got[0].messages] == ["client-0", "client-1"]  # not closed at t = 1 by client-0's copy


def test_a_message_never_received_is_unread_when_the_run_ends():
    class Deaf(Actor):
        async def run(self):
            await self.sleep(10.0)

    world, recs = _world(Deaf("server"), {0: [(0.0, "server", "update", None, 3)]})
    (rec,) = [r for r in recs if r["event"] == "unused"]
    assert rec["reason"] == "unread" and rec["round"] == 3 and rec["t"] == 10.0 and "late" not in rec
    assert recs.index(rec) < len(recs) and [r["event"] for r in recs].count("deliver") == 1


def test_an_unknown_reason_is_refused_naming_the_node_and_the_reasons():
    class Picky(Actor):
        async def run(self):
            msg = await self.recv("update")
            self.unused(msg, "boring")

    with pytest.raises(Exception, match=r"server: unused message 0: reason 'boring'; accepted: late, stale, duplicate"):
        _world(Picky("server"), {0: [(0.0, "server", "update", None, 0)]})


# ------------------------------------------------------------------ the tools that read a run


def test_the_report_counts_per_round_the_updates_used_late_and_lost(stragglers):
    from netemu.report.html import collect

    usage = collect(stragglers)["usage"]["fedavg"]
    log, metrics = _log(stragglers), _metrics(stragglers)["fedavg"]
    lost = Counter(r["round"] for r in log if r["event"] in ("drop", "in_flight") and r["algorithm"] == "fedavg" and r["kind"] == "update")
    assert usage["kinds"] == ["update"] and usage["runs"] == 1
    for k, rnd in enumerate(usage["round"]):
        assert usage["used"][k] == metrics["participants"][rnd]
        assert usage["late"][k] == metrics["unused_late"][rnd]
        assert usage["lost"][k] == lost[rnd]
    assert sum(usage["late"]) > 0 and sum(usage["stale"]) == sum(usage["discarded"]) == 0


@pytest.mark.skipif(__import__("shutil").which("chromium") is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_report_draws_the_used_late_lost_chart_in_a_browser(stragglers, tmp_path):
    import re
    import subprocess

    out = tmp_path / "report.html"
    assert main(["report", str(stragglers), "--out", str(out)]) == 0
    page = out.read_text()
    assert "Updates used, late and lost per round" in page
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", out.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False).stdout
    assert 'data-rendered="ok"' in dom
    start = dom.index('data-chart="usage"')
    section = dom[start:dom.index("</section>", start)]
    fills = Counter(re.findall(r'<rect[^>]*fill="([^"]+)"[^>]*class="bar"', section))
    assert fills["#2ca02c"] > 0 and fills["#ff7f0e"] > 0 and fills["#bcbd22"] > 0 and fills["#d62728"] > 0  # used, late, stale, lost
    assert section.count("updates used vs late vs lost") == 4  # one chart per algorithm
    curves = dom[dom.index('data-chart="curves"'):dom.index("</section>", dom.index('data-chart="curves"'))]
    assert "unused_late" not in curves  # the counts are not drawn as learning curves


def test_log_summary_and_export_count_the_unused_records(stragglers, tmp_path, capsys):
    from netemu.report.export import export_log
    from netemu.report.logtools import summarize

    log = _log(stragglers)
    want: dict = {}
    for r in log:
        if r["event"] == "unused":
            by = want.setdefault(r["algorithm"], {}).setdefault(r["kind"], {})
            by[r["reason"]] = by.get(r["reason"], 0) + 1
    assert summarize(stragglers)["unused_by_algorithm"] == want
    assert main(["log", "summary", str(stragglers)]) == 0
    assert "delivered, not used" in capsys.readouterr().out
    written = {w.table: w for w in export_log(stragglers, tmp_path / "export", "csv")}
    rows = list(csv.DictReader(open(written["unused"].path, newline="")))
    assert len(rows) == sum(r["event"] == "unused" for r in log)
    assert {r["reason"] for r in rows} == {"late", "stale", "unread"} and all(r["late"] for r in rows if r["reason"] == "late")


@pytest.mark.slow  # ~9 s: the online data of 256 clients
def test_pao_fed_updates_delayed_beyond_l_max_are_stale(tmp_path):
    raw = tomllib.loads((SCENARIOS / "paofed_fig4_2a.toml").read_text())
    raw["algorithm"] = [{**raw["algorithm"][0], "l_max": 1}]  # the uplink delays up to 10 iterations; the server weighs 0 and 1
    path = tmp_path / "paofed.toml"
    path.write_text(tomli_w.dumps(raw))
    out = tmp_path / "run"
    assert main(["run", str(path), "--quiet", "--out", str(out), "--set", "output.plots=false", "--set", "run.rounds=15", "--set", "data.iterations=15",
                 "--set", "run.runs=1"]) == 0
    stale = [r for r in _log(out) if r["event"] == "unused"]
    assert stale and {r["reason"] for r in stale} == {"stale"}
    assert all(int(r["t"]) - r["round"] > 1 for r in stale)  # arrived (and aggregated at n + T/2) more than l_max = 1 iterations late
    metrics = _metrics(out)[raw["algorithm"][0]["name"]]
    assert Counter(r["round"] for r in stale) == {k: v for k, v in metrics["unused_stale"].items() if v}
