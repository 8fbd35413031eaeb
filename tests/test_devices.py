"""Device traces: FedScale and FLGo-style files, converted and used in a scenario."""

import json
import pickle

import orjson
import pytest

from netemu.cli import main
from netemu.devices import DeviceError, from_csv, from_fedscale, offline_windows

SCENARIO = """
[run]
rounds = 10
[topology]
kind = "star"
clients = 3
[devices]
file = "devices.json"
[data]
kind = "linear"
dim = 2
[[algorithm]]
name = "fedavg"
round_time = 10.0
"""


@pytest.fixture
def fedscale(tmp_path):
    behaviour = {
        "7": {"active": [0, 50], "inactive": [30, 200], "finish_time": 200, "duration": 200},
        "12": {"active": [20], "inactive": [100], "finish_time": 200, "duration": 200},
    }
    capacity = {"7": {"computation": 4.0, "communication": 800.0}, "12": {"computation": 50.0, "communication": 20.0}}
    (tmp_path / "behave.pkl").write_bytes(pickle.dumps(behaviour))
    (tmp_path / "capacity.json").write_text(json.dumps(capacity))
    return tmp_path


def test_fedscale_traces_become_online_intervals_speeds_and_bandwidths(fedscale):
    doc = from_fedscale(fedscale / "behave.pkl", fedscale / "capacity.json")
    assert [d["id"] for d in doc["devices"]] == ["7", "12"] and doc["horizon"] == 200
    seven = doc["devices"][0]
    assert seven["online"] == [[0.0, 30.0], [50.0, 200.0]]
    assert seven["speed"] == 250.0 and seven["bandwidth"] == 800_000.0  # 4 ms/sample, 800 kbps


def test_csv_traces_become_the_same_document(tmp_path):
    (tmp_path / "avail.csv").write_text("client,start,end\na,50,200\na,0,30\n")
    (tmp_path / "cap.csv").write_text("client,speed,bandwidth\na,250,800000\n")
    doc = from_csv(tmp_path / "avail.csv", tmp_path / "cap.csv")
    assert doc["devices"] == [{"id": "a", "online": [[0.0, 30.0], [50.0, 200.0]], "speed": 250.0, "bandwidth": 800000.0}]


@pytest.mark.parametrize(
    "avail, message",
    [("client,start\na,1\n", "missing column"), ("client,start,end\na,5,2\n", "0 <= start < end"), ("client,start,end\na,x,2\n", "avail.csv:2: start = 'x'")],
)
def test_bad_csv_traces_name_the_file_row_and_problem(tmp_path, avail, message):
    (tmp_path / "avail.csv").write_text(avail)
    with pytest.raises(DeviceError, match=message):
        from_csv(tmp_path / "avail.csv", None)


def test_offline_windows_complement_the_online_intervals():
    assert offline_windows([[50, 200], [0, 30]]) == [(30, 50), (200, None)]
    assert offline_windows([[20, 100]]) == [(0.0, 20), (100, None)]


def test_a_scenario_runs_clients_only_in_their_online_intervals(fedscale, capsys):
    assert main(["devices", "import", "--format", "fedscale", "--availability", str(fedscale / "behave.pkl"),
                 "--capacity", str(fedscale / "capacity.json"), "--out", str(fedscale / "devices.json")]) == 0
    (fedscale / "s.toml").write_text(SCENARIO)
    assert main(["run", str(fedscale / "s.toml"), "--out", str(fedscale / "run"), "--quiet"]) == 0
    recs = [orjson.loads(x) for x in (fedscale / "run" / "messages.jsonl").read_bytes().splitlines()]
    # client-1 has device "12": online only in [20, 100)
    got = [r["t"] for r in recs if r["event"] == "deliver" and r["dst"] == "client-1"]
    assert got and all(20 <= t < 100 for t in got)
    assert any(r["event"] == "drop" and r["dst"] == "client-1" and r["reason"] == "crash" for r in recs)
    # client-0 has device "7": 4 ms per sample -> speed 250 work units/s
    comp = [r for r in recs if r["event"] == "compute" and r["actor"] == "client-0"]
    assert comp and all(r["duration"] == pytest.approx(r["work"] / 250.0) for r in comp)
    # client-2 wraps around to device "7" again; its uplink runs at 800 kbps
    up = [r for r in recs if r["event"] == "deliver" and r["src"] == "client-2"]
    assert up and all(r["delay"] == pytest.approx(r["bytes"] * 8 / 800_000.0) for r in up)


def test_a_missing_devices_file_is_a_scenario_error(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(SCENARIO)
    assert main(["validate", str(tmp_path / "s.toml")]) == 2
    assert "devices.file = 'devices.json'" in capsys.readouterr().err
