"""Device traces: FedScale and FLGo files in their real formats, netemu's own CSV, and
their use in a scenario (online intervals, periodic repetition, speeds, bandwidths)."""

import json
import pickle
import struct
from itertools import islice

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netemu.cli import main
from netemu.devices import (
    DeviceError, DeviceTraceWarning, from_fedscale, from_flgo, from_netemu_csv, load_pickle, offline_windows,
    read_devices, write_devices,
)

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

# FedScale's device_info/README.md: availability client-id -> {duration, inactive, finish_time, active, model};
# capacity client-id -> {computation (ms/sample), communication (kbps)}; both int-keyed pickles.
BEHAVIOUR = {
    3834: {"duration": 200, "inactive": [30, 200], "finish_time": 200, "active": [0, 50], "model": "SM-G930F"},
    17: {"duration": 80, "inactive": [100], "finish_time": 200, "active": [20], "model": "Pixel"},
}
CAPACITY = {1: {"computation": 4.0, "communication": 800.0}, 2: {"computation": 50.0, "communication": 20.0},
            432802: {"computation": 162.0, "communication": 5648.109619499134}}


@pytest.fixture(params=[2, 3, 4, 5], ids=lambda p: f"protocol{p}")
def fedscale(tmp_path, request):
    (tmp_path / "client_behave_trace").write_bytes(pickle.dumps(BEHAVIOUR, protocol=request.param))
    (tmp_path / "client_device_capacity").write_bytes(pickle.dumps(CAPACITY, protocol=request.param))
    return tmp_path


# ------------------------------------------------------------------ FedScale


def test_fedscale_pairs_the_two_files_by_position_as_fedscale_does(fedscale):
    doc = from_fedscale(fedscale / "client_behave_trace", fedscale / "client_device_capacity")
    # 3 devices (the larger file); device i is FedScale client c = i + 1:
    # availability: list(keys)[c % 2] -> 17, 3834, 17;  capacity: key c % 3 -> 1, 2, 0 (missing: FedScale's default)
    assert [d["availability_id"] for d in doc["devices"]] == ["17", "3834", "17"]
    assert [d["capacity_id"] for d in doc["devices"]] == ["1", "2", "0"]
    first = doc["devices"][0]
    assert first["online"] == [[20.0, 100.0]] and first["period"] == 200.0
    assert first["speed"] == pytest.approx(1000 / (3 * 4.0)) and first["bandwidth"] == 800_000.0
    assert doc["devices"][2]["speed"] == pytest.approx(1000 / 3.0) and doc["devices"][2]["bandwidth"] == 1000.0
    assert any("FedScale's default" in n for n in doc["notes"])


def test_fedscale_compute_time_is_three_times_batch_steps_ms(fedscale):
    """FedScale (client_metadata.py): 3 x batch x steps x ms / 1000 s; netemu: work / speed."""
    doc = from_fedscale(None, fedscale / "client_device_capacity", count=1)
    ms, batch, steps = 4.0, 20, 5
    assert batch * steps / doc["devices"][0]["speed"] == pytest.approx(3 * batch * steps * ms / 1000)


def test_fedscale_pairing_by_id_joins_records_with_the_same_id(tmp_path):
    (tmp_path / "b.json").write_text(json.dumps({"7": BEHAVIOUR[3834]}))
    (tmp_path / "c.json").write_text(json.dumps({"7": CAPACITY[1], "8": CAPACITY[2]}))
    doc = from_fedscale(tmp_path / "b.json", tmp_path / "c.json", pairing="id")
    assert [d["id"] for d in doc["devices"]] == ["7", "8"]
    assert doc["devices"][0]["online"] == [[0.0, 30.0], [50.0, 200.0]] and "online" not in doc["devices"][1]
    assert "only one of the two files" in doc["notes"][0]


def test_fedscale_traces_are_periodic_unless_asked_not_to_be(fedscale):
    assert "period" not in from_fedscale(fedscale / "client_behave_trace", None, periodic=False)["devices"][0]
    assert from_fedscale(fedscale / "client_behave_trace", None, time_scale=0.5)["devices"][0]["period"] == 100.0


def test_a_reversed_fedscale_interval_is_refused(tmp_path):
    (tmp_path / "b.pkl").write_bytes(pickle.dumps({5: {"active": [10, 60], "inactive": [40, 50], "finish_time": 100}}))
    with pytest.raises(DeviceError, match=r"b.pkl: client 5: interval 1 is reversed: inactive 50 comes before active 60"):
        from_fedscale(tmp_path / "b.pkl", None)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 0.0])
def test_non_finite_or_non_positive_capacities_are_refused(tmp_path, value):
    (tmp_path / "c.pkl").write_bytes(pickle.dumps({1: {"computation": value, "communication": 10.0}}))
    with pytest.raises(DeviceError, match=r"c.pkl: client 1: computation = "):
        from_fedscale(None, tmp_path / "c.pkl", pairing="id")


# ------------------------------------------------------------------ pickles are data, never code


class _CreatesAFile:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_pickle_that_would_run_code_is_refused_without_running_it(tmp_path):
    target = tmp_path / "pwned"
    (tmp_path / "trace.pkl").write_bytes(pickle.dumps({1: _CreatesAFile(str(target))}))
    with pytest.raises(DeviceError, match=r"trace.pkl: refused to load (io|builtins)\.open from a pickle"):
        from_fedscale(tmp_path / "trace.pkl", None)
    assert not target.exists()


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_numeric_numpy_values_in_a_pickle_are_read(tmp_path, protocol):
    import numpy as np

    rec = {"active": np.array([0.0, 50.0]), "inactive": [np.float64(30.0), np.int64(200)], "finish_time": np.int32(200)}
    (tmp_path / "b.pkl").write_bytes(pickle.dumps({1: rec}, protocol=protocol))
    assert from_fedscale(tmp_path / "b.pkl", None)["devices"][0]["online"] == [[0.0, 30.0], [50.0, 200.0]]


def test_a_numpy_object_array_in_a_pickle_is_refused(tmp_path):
    import numpy as np

    (tmp_path / "b.pkl").write_bytes(pickle.dumps({1: np.array([1, "x"], dtype=object)}))
    with pytest.raises(DeviceError, match=r"b.pkl: refused NumPy dtype"):
        load_pickle(tmp_path / "b.pkl")


def test_a_pickle_declaring_a_huge_array_is_refused_before_allocating_it(tmp_path):
    # _reconstruct(ndarray, (10**12,), b'b'): NumPy would allocate a terabyte before reading any data
    crafted = (b"\x80\x02cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\n"
               b"\x8a\x06\x00\x10\xa5\xd4\xe8\x00\x85C\x01b\x87R.")
    (tmp_path / "b.pkl").write_bytes(crafted)
    with pytest.raises(DeviceError, match=r"refused a NumPy array reconstruction with shape \(1000000000000,\)"):
        load_pickle(tmp_path / "b.pkl")


def test_a_pickle_calling_ndarray_with_a_huge_shape_is_refused(tmp_path):
    (tmp_path / "b.pkl").write_bytes(b"\x80\x02cnumpy\nndarray\n\x8a\x06\x00\x10\xa5\xd4\xe8\x00\x85\x85R.")
    with pytest.raises(DeviceError, match=r"b.pkl: not a readable pickle"):
        load_pickle(tmp_path / "b.pkl")


def test_a_protocol_5_array_whose_shape_exceeds_its_bytes_is_refused(tmp_path):
    import numpy as np

    data = pickle.dumps(np.arange(3.0), protocol=5).replace(b"K\x03\x85", b"\x8a\x06\x00\x10\xa5\xd4\xe8\x00\x85")
    (tmp_path / "b.pkl").write_bytes(data)
    with pytest.raises(DeviceError, match=r"declared shape \(1000000000000,\) does not match its 24 bytes"):
        load_pickle(tmp_path / "b.pkl")


def test_a_pickle_declaring_a_huge_string_is_refused_as_truncated(tmp_path):
    (tmp_path / "b.pkl").write_bytes(b"\x80\x04\x8d" + struct.pack("<Q", 1 << 60) + b"abc.")
    with pytest.raises(DeviceError, match=r"b.pkl: not a readable pickle"):
        load_pickle(tmp_path / "b.pkl")


def test_a_pickle_declaring_a_huge_memo_index_does_not_allocate_it(tmp_path):
    import tracemalloc

    # LONG_BINPUT 1,560,701,128: the C unpickler would size its memo table to that index
    (tmp_path / "b.pkl").write_bytes(b"\x80\x02]r\xc8h\x06]\x94.")
    tracemalloc.start()
    try:
        assert load_pickle(tmp_path / "b.pkl") == []
        assert tracemalloc.get_traced_memory()[1] < 10_000_000
    finally:
        tracemalloc.stop()


def test_a_set_in_a_pickle_is_refused_by_type(tmp_path):
    (tmp_path / "b.pkl").write_bytes(pickle.dumps({1: {2, 3}}, protocol=4))
    with pytest.raises(DeviceError, match=r"b.pkl: refused a value of type builtins.set"):
        load_pickle(tmp_path / "b.pkl")


# ------------------------------------------------------------------ FLGo


def test_flgo_pings_become_15_second_slots_repeating_after_the_last_timestamp(tmp_path):
    # Kaggle "Users Active Time Prediction" pings.csv: id,timestamp (unix seconds, every 15 s)
    t0 = 1_496_275_200
    rows = [(7, t0), (9, t0), (7, t0 + 15), (7, t0 + 30), (7, t0 + 90), (9, t0 + 300)]
    (tmp_path / "pings.csv").write_text("id,timestamp\n" + "".join(f"{i},{t}\n" for i, t in rows))
    doc = from_flgo(tmp_path / "pings.csv", None)
    assert [d["id"] for d in doc["devices"]] == ["7", "9"]  # most pings first (FLGo's HIGH)
    seven, nine = doc["devices"]
    assert seven["online"] == [[0.0, 45.0], [90.0, 105.0]] and seven["period"] == 300.0
    assert nine["online"] == [[0.0, 15.0]]  # its ping at 300 is the table's end: 300 % 300 = 0
    assert [d["id"] for d in from_flgo(tmp_path / "pings.csv", None, order="LOW")["devices"]] == ["9", "7"]


def test_flgo_time_tables_give_speeds_round_robin(tmp_path):
    # Benchmark-On-Device-Training time_table_<model>.csv: batchsize, expr_train (ms per batch)
    (tmp_path / "time_table_Lenet.csv").write_text("batchsize,expr_train\n1,10\n2,20\n")
    (tmp_path / "time_table_Alexnet.csv").write_text("batchsize,expr_train\n4,400\n")
    (tmp_path / "pings.csv").write_text("id,timestamp\n1,0\n2,15\n3,30\n")
    doc = from_flgo(tmp_path / "pings.csv", [tmp_path / "time_table_Lenet.csv", tmp_path / "time_table_Alexnet.csv"])
    assert [d["speed"] for d in doc["devices"]] == [100.0, 10.0, 100.0]  # 10 ms and 100 ms per sample


def test_a_binary_file_as_csv_is_refused_with_its_name(tmp_path, capsys):
    (tmp_path / "pings.csv").write_bytes(bytes(range(256)))
    assert main(["devices", "import", "--format", "flgo", "--availability", str(tmp_path / "pings.csv"),
                 "--out", str(tmp_path / "d.json")]) == 2
    err = capsys.readouterr().err
    assert "pings.csv: not a UTF-8 text CSV file" in err and "Traceback" not in err


# ------------------------------------------------------------------ netemu's own CSV


def test_netemu_csv_traces_become_the_same_document(tmp_path):
    (tmp_path / "avail.csv").write_text("client,start,end\na,50,200\na,0,30\n")
    (tmp_path / "cap.csv").write_text("client,speed,bandwidth\na,250,800000\n")
    doc = from_netemu_csv(tmp_path / "avail.csv", tmp_path / "cap.csv")
    assert doc["devices"] == [{"id": "a", "online": [[0.0, 30.0], [50.0, 200.0]], "speed": 250.0, "bandwidth": 800000.0}]


@pytest.mark.parametrize(
    "avail, message",
    [("client,start\na,1\n", "missing column"), ("client,start,end\na,5,2\n", "empty or reversed"),
     ("client,start,end\na,x,2\n", "avail.csv: line 2: start = 'x'"),
     ("client,start,end\na,0,nan\n", "end = 'nan' is not finite"), ("client,start,end\na,0,inf\n", "not finite")],
)
def test_bad_netemu_csv_traces_name_the_file_row_and_problem(tmp_path, avail, message):
    (tmp_path / "avail.csv").write_text(avail)
    with pytest.raises(DeviceError, match=message):
        from_netemu_csv(tmp_path / "avail.csv", None)


def test_an_out_file_in_a_missing_folder_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "cap.csv").write_text("client,speed,bandwidth\na,250,800000\n")
    assert main(["devices", "import", "--format", "netemu-csv", "--capacity", str(tmp_path / "cap.csv"),
                 "--out", str(tmp_path / "no" / "d.json")]) == 2
    assert "d.json: cannot write (No such file or directory)" in capsys.readouterr().err


# ------------------------------------------------------------------ the devices file


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity"])
def test_read_devices_refuses_non_finite_numbers(tmp_path, bad):
    (tmp_path / "d.json").write_text('{"format": "netemu-devices", "version": 2, "horizon": 1, '
                                     f'"devices": [{{"id": "a", "speed": {bad}}}]}}')
    with pytest.raises(DeviceError, match=f"d.json: {bad} is not a number netemu accepts"):
        read_devices(tmp_path / "d.json")


def test_read_devices_refuses_reversed_intervals_and_bad_speeds(tmp_path):
    doc = {"format": "netemu-devices", "version": 2, "horizon": 1, "devices": [{"id": "a", "online": [[5, 2]]}]}
    (tmp_path / "d.json").write_text(json.dumps(doc))
    with pytest.raises(DeviceError, match=r"device 0: online\[0\] = \[5, 2\] is empty or reversed"):
        read_devices(tmp_path / "d.json")
    doc["devices"] = [{"id": "a", "speed": -3}]
    (tmp_path / "d.json").write_text(json.dumps(doc))
    with pytest.raises(DeviceError, match=r"device 0: speed = -3 must be > 0"):
        read_devices(tmp_path / "d.json")


def test_a_devices_file_over_the_size_limit_is_refused_before_reading(tmp_path, monkeypatch):
    from netemu import devices

    monkeypatch.setitem(devices.LIMITS, "file_bytes", 100)
    (tmp_path / "d.json").write_text(" " * 101)
    with pytest.raises(DeviceError, match="101 bytes is more than the limit of 100 bytes"):
        read_devices(tmp_path / "d.json")


def test_write_devices_never_writes_nan(tmp_path):
    with pytest.raises(DeviceError, match="non-finite"):
        write_devices({"devices": [{"speed": float("nan")}]}, tmp_path / "d.json")
    assert not (tmp_path / "d.json").exists()


def test_validate_refuses_a_devices_file_with_nan(tmp_path, capsys):
    (tmp_path / "devices.json").write_text('{"format": "netemu-devices", "version": 1, "horizon": 1, '
                                           '"devices": [{"id": "a", "speed": NaN}]}')
    (tmp_path / "s.toml").write_text(SCENARIO)
    assert main(["validate", str(tmp_path / "s.toml")]) == 2
    assert "NaN is not a number netemu accepts" in capsys.readouterr().err


def test_offline_windows_complement_the_online_intervals():
    assert list(offline_windows([[50, 200], [0, 30]])) == [(30, 50), (200, None)]
    assert list(offline_windows([[20, 100]])) == [(0.0, 20), (100, None)]


def test_periodic_offline_windows_repeat_and_merge_across_the_period_boundary():
    windows = offline_windows([[10, 20], [25, 30]], period=30)
    assert list(islice(windows, 4)) == [(0.0, 10), (20, 25), (30, 40), (50, 55)]
    assert list(offline_windows([[0, 30]], period=30)) == []  # always online
    assert list(offline_windows([], period=30)) == [(0.0, None)]  # never online


# ------------------------------------------------------------------ in a scenario


def _records(run):
    return [orjson.loads(x) for x in (run / "messages.jsonl").read_bytes().splitlines()]


def test_a_scenario_runs_clients_only_in_their_online_intervals(fedscale, capsys):
    assert main(["devices", "import", "--format", "fedscale", "--availability", str(fedscale / "client_behave_trace"),
                 "--capacity", str(fedscale / "client_device_capacity"), "--out", str(fedscale / "devices.json")]) == 0
    (fedscale / "s.toml").write_text(SCENARIO)
    assert main(["run", str(fedscale / "s.toml"), "--out", str(fedscale / "run"), "--quiet"]) == 0
    recs = _records(fedscale / "run")
    # client-1 is FedScale client 2: availability record 3834, online [0, 30) and [50, 200) of every 200 s
    got = [r["t"] for r in recs if r["event"] == "deliver" and r["dst"] == "client-1"]
    assert got and all(t % 200 < 30 or 50 <= t % 200 < 200 for t in got)
    # client-0 is FedScale client 1: capacity key 1, 4 ms per sample -> speed 1000 / 12 work units/s
    comp = [r for r in recs if r["event"] == "compute" and r["actor"] == "client-0"]
    assert comp and all(r["duration"] == pytest.approx(r["work"] * 3 * 4.0 / 1000) for r in comp)
    # client-0's uplink runs at 800 kbps
    up = [r for r in recs if r["event"] == "deliver" and r["src"] == "client-0"]
    assert up and all(r["delay"] == pytest.approx(r["bytes"] * 8 / 800_000.0) for r in up)


def _devices_run(tmp_path, device, rounds=10):
    (tmp_path / "devices.json").write_text(json.dumps(
        {"format": "netemu-devices", "version": 2, "horizon": 30.0, "devices": [device]}))
    (tmp_path / "s.toml").write_text(SCENARIO.replace("rounds = 10", f"rounds = {rounds}"))
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    return _records(tmp_path / "run")


def test_a_periodic_device_comes_back_every_period(tmp_path):
    recs = _devices_run(tmp_path, {"id": "a", "online": [[0.0, 12.0]], "period": 30.0})
    got = [r["t"] for r in recs if r["event"] == "deliver" and r["dst"] == "client-0"]
    assert got and all(t % 30 < 12 for t in got) and max(got) > 60  # still delivered after two periods


def test_a_run_that_outlasts_a_non_periodic_trace_warns(tmp_path):
    with pytest.warns(DeviceTraceWarning, match=r"reached t = 30 s, the end of its device trace"):
        recs = _devices_run(tmp_path, {"id": "a", "online": [[0.0, 30.0]]})
    assert not [r for r in recs if r["event"] == "deliver" and r["dst"] == "client-0" and r["t"] > 30]


def test_a_run_within_a_non_periodic_trace_does_not_warn(tmp_path, recwarn):
    _devices_run(tmp_path, {"id": "a", "online": [[0.0, 1000.0]]}, rounds=2)
    assert not [w for w in recwarn if issubclass(w.category, DeviceTraceWarning)]


def test_the_run_folder_scenario_names_the_devices_file_absolutely(tmp_path):
    _devices_run(tmp_path, {"id": "a", "online": [[0.0, 1000.0]]}, rounds=2)
    text = (tmp_path / "run" / "scenario.toml").read_text()
    assert f'file = "{(tmp_path / "devices.json").resolve()}"' in text
    assert main(["validate", str(tmp_path / "run" / "scenario.toml")]) == 0


def test_a_missing_devices_file_is_a_scenario_error(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(SCENARIO)
    assert main(["validate", str(tmp_path / "s.toml")]) == 2
    assert "devices.file = 'devices.json'" in capsys.readouterr().err


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 99), st.integers(1, 30)), max_size=6),
    st.integers(20, 100),
    st.floats(0, 500, allow_nan=False),
)
def test_periodic_windows_say_offline_exactly_when_t_mod_period_is_outside_every_interval(spans, period, t):
    online = [[a, min(a + d, period)] for a, d in spans if a < period]
    inside = any(a <= t % period < b for a, b in online)
    windows = offline_windows(online, period=period)
    offline = False
    for start, end in windows:
        if start > t:
            break
        if end is None or t < end:
            offline = True
            break
    assert offline == (not inside)


def test_the_restricted_unpickler_is_a_module_of_its_own_below_devices(tmp_path):
    """netemu.safepickle holds the unpickler and the reading limits; devices re-exports them (the same
    objects, so a limit set through either applies to both) and safepickle imports only netemu.errors."""
    import re
    from pathlib import Path

    import netemu.devices as devices
    import netemu.safepickle as safepickle

    assert devices.load_pickle is safepickle.load_pickle and devices.LIMITS is safepickle.LIMITS
    text = Path(safepickle.__file__).read_text()
    assert set(re.findall(r"^(?:from|import) (netemu[\w.]*)", text, re.M)) == {"netemu.errors"}
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps(print))
    with pytest.raises(DeviceError, match="refused to load builtins.print"):
        safepickle.load_pickle(tmp_path / "evil.pkl")


def test_the_devices_file_is_below_the_importers_and_devices_keeps_every_public_name():
    """netemu.devicefile (format, checks, scheduling) imports neither the importers nor the
    unpickler's users above it; netemu.devices re-exports its names, so callers import one module."""
    import re
    from pathlib import Path

    import netemu.devicefile as devicefile
    import netemu.devices as devices

    text = Path(devicefile.__file__).read_text()
    assert set(re.findall(r"^(?:from|import) (netemu[\w.]*)", text, re.M)) == {"netemu.errors", "netemu.safepickle"}
    for name in ("read_devices", "write_devices", "attach_devices", "offline_windows", "DeviceTraceWarning"):
        assert getattr(devices, name) is getattr(devicefile, name)
    assert set(devices.__all__) <= set(dir(devices))
