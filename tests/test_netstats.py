"""Network statistics from what a run records: retransmissions, attempts per message, timeouts,
queue drops and duplicates per link class (summary.json, `netemu log summary`), and the log
tools' view of a log holding several algorithms."""

import json

import orjson
import pytest

from netemu.cli import main
from netemu.report.logtools import summarize, timeline

LOSSY = """
[run]
name = "lossy"
seed = 3
rounds = 4
runs = 1
[topology]
kind = "star"
clients = 6
[network]
transport = "reliable"
rto_min = 0.2
connect_timeout = 4.0
[links.uplink]
latency = { model = "constant", delay = 0.05 }
loss = { model = "bernoulli", p = 0.4 }
bandwidth = 1e6
[nodes]
speed = 200.0
[data]
kind = "linear"
dim = 3
samples_min = 20
samples_max = 40
[[algorithm]]
name = "fedavg"
round_time = 5.0
[[algorithm]]
name = "fedavg"
label = "fedavg-fast"
round_time = 2.5
"""


@pytest.fixture(scope="module")
def lossy(tmp_path_factory):
    base = tmp_path_factory.mktemp("netstats")
    (base / "s.toml").write_text(LOSSY)
    assert main(["run", str(base / "s.toml"), "--out", str(base / "run"), "--quiet", "--set", "output.plots=false"]) == 0
    return base / "run"


def test_summary_json_counts_retransmissions_per_link_class_as_the_log_does(lossy):
    net = json.loads((lossy / "summary.json").read_text())["network"]["fedavg"]
    up = net["uplink"]
    assert up["retransmissions"] > 0 and up["max_attempts"] >= 2  # 40 % loss on a reliable uplink
    assert up["attempts_per_message"] == pytest.approx(1 + up["retransmissions"] / up["messages"])
    assert net["downlink"]["retransmissions"] == 0 and net["downlink"]["attempts_per_message"] == 1.0
    from_log = summarize(lossy, algorithm="fedavg")["traffic"]["update / uplink"]["network"]
    assert from_log["retransmissions"] == up["retransmissions"] and from_log["max_attempts"] == up["max_attempts"]


def test_log_summary_keeps_two_algorithms_apart(lossy, capsys):
    s = summarize(lossy)
    per = s["traffic_by_algorithm"]
    assert sorted(per) == ["fedavg", "fedavg-fast"]
    both = s["traffic"]["update / uplink"]["sent"]
    assert per["fedavg"]["update / uplink"]["sent"] + per["fedavg-fast"]["update / uplink"]["sent"] == both
    assert main(["log", "summary", str(lossy)]) == 0
    out = capsys.readouterr().out
    assert "algorithm fedavg:" in out and "algorithm fedavg-fast:" in out and "retrans." in out


def _record(t, event, i, **extra):
    return {"t": t, "event": event, "id": i, "src": "client-0", "dst": "server", "kind": "update", "round": 0, "bytes": 10,
            "link": "uplink", **extra}


def test_a_duplicate_copy_is_counted_as_a_duplicate_not_as_a_second_delivery(tmp_path):
    log = tmp_path / "m.jsonl"
    recs = [_record(0.0, "send", 0), _record(0.5, "deliver", 0, delay=0.5), _record(0.5, "deliver", 0, delay=0.5, duplicate=True),
            _record(1.0, "send", 1), _record(3.0, "drop", 1, reason="timeout", attempts=3)]
    log.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    t = summarize(log)["traffic"]["update / uplink"]
    assert (t["sent"], t["delivered"], t["dropped"]) == (2, 1, 1)
    assert t["network"] == {"retransmissions": 2, "attempts_per_message": 2.0, "max_attempts": 3, "timeouts": 1,
                            "queue_drops": 0, "duplicates": 1}


def test_a_timeline_of_some_actors_counts_only_their_messages_against_the_limit(lossy, tmp_path):
    notes: list[str] = []
    timeline(lossy, tmp_path / "all.png", max_messages=20, notes=notes)
    assert notes  # every actor: more than 20 messages, the window is cut
    notes = []
    timeline(lossy, tmp_path / "one.png", actors=["server", "client-0"], max_messages=20, notes=notes)
    assert notes == []  # server <-> client-0: 8 messages in 4 rounds, all drawn
