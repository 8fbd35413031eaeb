"""Traces you can trust: a checksum and the network models in the header; damage,
truncation, old versions, crafted sizes and mismatched scenarios are refused.  Version 3
is compact and replays exactly; version 2 (the previous body) is still read."""

import hashlib
import io
import struct
import tracemalloc

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netemu.cli import main
from netemu.trace import Trace, TraceError

SCENARIO = """
[run]
seed = 2
rounds = 3
[topology]
kind = "star"
clients = 3
[links.uplink]
latency = { model = "exponential", mean = 0.5 }
loss = { model = "bernoulli", p = 0.2 }
[nodes]
participation = 0.7
speed = 500.0
[data]
kind = "linear"
dim = 2
[[algorithm]]
name = "fedavg"
round_time = 3.0
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(scenario path, trace bytes) of a small run."""
    d = tmp_path_factory.mktemp("trace")
    scenario = d / "s.toml"
    scenario.write_text(SCENARIO)
    assert main(["run", str(scenario), "--out", str(d / "run"), "--quiet", "--set", "output.plots=false"]) == 0
    return scenario, (d / "run" / "trace.msgpack").read_bytes()


def forge(header: dict, body: list, complete: bool = True) -> bytes:
    """A trace with a valid checksum around arbitrary objects (what a careful forger writes)."""
    parts = [msgpack.packb(header), *(msgpack.packb(x) for x in body)]
    h = hashlib.blake2b(b"".join(parts), digest_size=32)
    h.update(msgpack.packb(["end", len(body), complete]))
    return b"".join(parts) + msgpack.packb(["end", len(body), complete, h.digest()])


def read(tmp_path, data: bytes) -> Trace:
    path = tmp_path / "t.msgpack"
    path.write_bytes(data)
    return Trace.read(path)


def test_a_trace_records_its_checksum_and_scenario(recorded, tmp_path):
    _, data = recorded
    trace = read(tmp_path, data)
    assert trace.header["version"] == 3 and trace.header["checksum"] == "blake2b-256"
    assert len(trace.header["scenario_hash"]) == 24
    assert trace.header["network"]["links"]["uplink"]["loss"] == {"model": "bernoulli", "p": 0.2}
    assert trace.complete and sum(len(f) for f in trace.fates_by_run.values()) > 10


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_any_flipped_bit_is_refused(recorded, tmp_path, position, bit):
    _, data = recorded
    damaged = bytearray(data)
    damaged[int(position * len(data))] ^= 1 << bit
    with pytest.raises(TraceError, match="corrupted|truncated|not a netemu trace|version|header"):
        read(tmp_path, bytes(damaged))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0, 1, exclude_max=True))
def test_any_truncation_is_refused(recorded, tmp_path, cut):
    _, data = recorded
    with pytest.raises(TraceError):
        read(tmp_path, data[: int(cut * len(data))])


def test_a_changed_delay_that_still_decodes_is_refused_by_the_checksum(recorded, tmp_path):
    _, data = recorded
    i = data.index(b"\xcb", len(data) // 2)  # a float64: a delay
    (delay,) = struct.unpack(">d", data[i + 1 : i + 9])
    changed = data[: i + 1] + struct.pack(">d", delay + 0.25) + data[i + 9 :]
    with pytest.raises(TraceError, match="checksum is .* the end marker records .* changed after it was written"):
        read(tmp_path, changed)


def test_a_run_marked_complete_that_was_not_is_refused(recorded, tmp_path):
    _, data = recorded
    assert data[-35] == 0xC3  # the end marker: [..., true, bin8 32 digest]
    with pytest.raises(TraceError, match="checksum"):
        read(tmp_path, data[:-35] + b"\xc2" + data[-34:])


def test_a_version_1_trace_is_refused_naming_its_version(tmp_path):
    old = msgpack.packb({"format": "netemu-trace", "version": 1, "seed": 1}) + msgpack.packb(["end", 0, True])
    with pytest.raises(TraceError, match="trace format version 1 .*not read any more; this netemu reads versions 2 and 3"):
        read(tmp_path, old)


def header(recorded_data: bytes) -> dict:
    return next(iter(msgpack.Unpacker(io.BytesIO(recorded_data), raw=False)))


@pytest.mark.parametrize(
    "entry, message",
    [
        (["fate", "fedavg", 0, ["msg", "a", "b", 0, 0], [None, float("nan")]], "is not \\[nil"),
        (["fate", "fedavg", 0, ["msg", "a", "b", 0, 0], [None, -1.0]], "delay >= 0"),
        (["fate", "fedavg", 7, ["participation", "a", 0], True], "run 7 is not one of the header's 1"),
        (["fate", "other", 0, ["participation", "a", 0], True], "algorithm 'other' is not in the header"),
        (["fate", "fedavg", 0, ["compute", "a", 0, 0], 0.0], "slowdown factor > 0"),
        (["fate", "fedavg", 0, ["msg", "a", "b", "x", 0], [None, 1.0]], "shape of a msg key"),
        (["fate", "fedavg", 0, ["ping"], 1], "not a msg, participation, compute, completeness or ns3 key"),
    ],
)
def test_a_well_checksummed_version_2_entry_of_the_wrong_shape_is_refused(recorded, tmp_path, entry, message):
    with pytest.raises(TraceError, match=f"entry 1: .*{message}"):
        read(tmp_path, forge({**header(recorded[1]), "version": 2}, [entry]))


def test_a_header_of_the_wrong_shape_is_refused(recorded, tmp_path):
    h = {**header(recorded[1]), "seed": "one"}
    with pytest.raises(TraceError, match="corrupted trace header: header key 'seed' is 'one': expected an integer >= 0"):
        read(tmp_path, forge(h, []))


# ------------------------------------------------------------- bounded decoding


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


HUGE_ARRAY = b"\xdd\xff\xff\xff\xff"  # an array header declaring 2**32 - 1 items
HUGE_MAP = b"\xdf\xff\xff\xff\xff"


@pytest.mark.parametrize("declared", [HUGE_ARRAY, HUGE_MAP, HUGE_ARRAY * 500, b"\xdb\xff\xff\xff\xff"],
                         ids=["array", "map", "nested-arrays", "str"])
def test_a_header_declaring_a_huge_container_is_refused_without_allocating_it(recorded, tmp_path, declared):
    h = msgpack.packb({"format": "netemu-trace", "version": 2})
    # the header map declares one more key, whose value claims a huge size but has no items
    crafted = b"\x83" + h[1:] + msgpack.packb("runs") + declared
    path = tmp_path / "t.msgpack"
    path.write_bytes(crafted)
    with pytest.raises(TraceError, match="not a netemu trace"):
        Trace.read(path)
    assert peak_bytes(lambda: pytest.raises(TraceError, Trace.read, path)) < 2**20


@pytest.mark.parametrize("declared", [HUGE_ARRAY, HUGE_MAP, HUGE_ARRAY * 500, b"\xdb\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xff"],
                         ids=["array", "map", "nested-arrays", "str", "bin"])
@pytest.mark.parametrize("version", [2, 3])
def test_a_body_entry_declaring_a_huge_container_is_refused_without_allocating_it(recorded, tmp_path, declared, version):
    h = msgpack.packb({**header(recorded[1]), "version": version})
    path = tmp_path / "t.msgpack"
    path.write_bytes(h + b"\x95\xa4fate" + declared + b"\x00" * 64)
    with pytest.raises(TraceError, match="(corrupted|truncated) trace"):
        Trace.read(path)
    assert peak_bytes(lambda: pytest.raises(TraceError, Trace.read, path)) < 4 * 2**20


# ------------------------------------------------------------- the scenario


def test_replay_refuses_a_scenario_with_other_random_models_and_names_the_key(recorded, tmp_path, capsys):
    scenario, data = recorded
    trace = tmp_path / "t.msgpack"
    trace.write_bytes(data)
    out = tmp_path / "r"
    code = main(["replay", str(trace), "--scenario", str(scenario), "--set", "links.uplink.loss.p=0.3", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "links.uplink.loss.p: 0.2 in the trace, 0.3 in the scenario" in err and "Traceback" not in err


def test_replay_accepts_other_deterministic_parts_a_what_if(recorded, tmp_path):
    scenario, data = recorded
    trace = tmp_path / "t.msgpack"
    trace.write_bytes(data)
    args = ["--set", "links.uplink.bandwidth=1e5", "--set", "nodes.speed=50.0", "--set", "task.lr=0.3"]
    assert main(["replay", str(trace), "--scenario", str(scenario), *args, "--out", str(tmp_path / "r"), "--quiet"]) == 0
