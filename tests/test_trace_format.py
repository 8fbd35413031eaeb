"""Trace format 3: a compact body (names written once, section markers, small codes) that
records exactly what version 2 did and replays bit-exactly; version-2 traces, such as the
one kept in tests/data/trace_v2 (written by netemu before format 3), are still read."""

import hashlib
import io
import json
import math
import struct
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import netemu.run.runner
from netemu.cli import main
from netemu.trace import Trace, TraceError, TraceWriter

V2 = Path(__file__).parent / "data" / "trace_v2"
QUICKSTART = Path(__file__).parent.parent / "scenarios" / "quickstart.toml"
HEADER = {  # a valid header for two algorithms and two runs
    "netemu": "test", "scenario": "t", "scenario_hash": "", "seed": 1, "algorithms": ["a", "b"],
    "runs": [{"seed": 1, "topology": "x"}, {"seed": 2, "topology": "x"}], "network": {},
}


def run(scenario: Path, out: Path, *sets: str) -> Path:
    args = ["run", str(scenario), "--out", str(out), "--quiet", "--set", "output.plots=false"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return out


def forge(header: dict, body: list, count: int | None = None) -> bytes:
    """A trace with a valid checksum around arbitrary body objects."""
    parts = [msgpack.packb(header), *(msgpack.packb(x) for x in body)]
    end = ["end", len(body) if count is None else count, True]
    digest = hashlib.blake2b(b"".join(parts) + msgpack.packb(end), digest_size=32).digest()
    return b"".join(parts) + msgpack.packb([*end, digest])


def read(tmp_path: Path, data: bytes) -> Trace:
    path = tmp_path / "t.msgpack"
    path.write_bytes(data)
    return Trace.read(path)


def exact(x):
    """A value with every float replaced by its bits: equality that tells 0.1 from its neighbour."""
    if isinstance(x, float):
        return ("f64", struct.pack(">d", x))
    if isinstance(x, (list, tuple)):
        return tuple(exact(v) for v in x)
    if isinstance(x, dict):
        return {k: exact(v) for k, v in x.items()}
    return x


# ------------------------------------------------------------- size and exactness


def test_a_quickstart_trace_takes_at_most_50_bytes_per_message_sent(tmp_path):
    out = run(QUICKSTART, tmp_path / "q", "run.rounds=10", "run.runs=2")
    sent = sum(c["sent"] for c in json.loads((out / "summary.json").read_text())["messages"].values())
    per_message = (out / "trace.msgpack").stat().st_size / sent
    assert per_message <= 50, per_message  # version 2: 72 bytes per message on this run


def test_version_3_records_the_same_fates_as_version_2_bit_for_bit(tmp_path, monkeypatch):
    new = Trace.read(run(V2 / "scenario.toml", tmp_path / "v3") / "trace.msgpack")
    old = Trace.read(V2 / "trace.msgpack")
    assert (old.header["version"], new.header["version"]) == (2, 3)
    assert sum(map(len, old.fates_by_run.values())) > 100
    assert exact(new.fates_by_run) == exact(old.fates_by_run)
    assert exact(new.first_by_run) == exact(old.first_by_run)


def test_a_version_2_trace_replays_to_the_log_a_fresh_run_writes(tmp_path):
    fresh = run(V2 / "scenario.toml", tmp_path / "fresh")
    out = tmp_path / "replayed"
    assert main(["replay", str(V2 / "trace.msgpack"), "--scenario", str(V2 / "scenario.toml"), "--out", str(out), "--quiet",
                 "--set", "output.plots=false"]) == 0
    assert (out / "messages.jsonl").read_bytes() == (fresh / "messages.jsonl").read_bytes()
    replay = json.loads((out / "summary.json").read_text())["replay"]
    assert replay["new"] == 0 and replay["replayed"] > 100
    assert (out / "trace.msgpack").read_bytes() == (fresh / "trace.msgpack").read_bytes()  # re-recorded as version 3


def test_a_version_3_trace_replays_to_a_byte_identical_log(tmp_path):
    a = run(QUICKSTART, tmp_path / "a", "run.rounds=6", "run.runs=2")
    out = tmp_path / "r"
    assert main(["replay", str(a / "trace.msgpack"), "--scenario", str(QUICKSTART), "--set", "run.rounds=6", "--set", "run.runs=2",
                 "--out", str(out), "--quiet", "--set", "output.plots=false"]) == 0
    assert (out / "messages.jsonl").read_bytes() == (a / "messages.jsonl").read_bytes()
    assert json.loads((out / "summary.json").read_text())["replay"]["new"] == 0


def body(data: bytes) -> list:
    """The body objects of a trace, the end marker without its digest (which covers the header)."""
    objects = list(msgpack.Unpacker(io.BytesIO(data), raw=False))[1:]
    return [*objects[:-1], objects[-1][:3]]


def test_the_version_2_writer_writes_what_netemu_wrote_before_format_3(tmp_path, monkeypatch):
    monkeypatch.setattr(netemu.run.runner, "TraceWriter", lambda file, header: TraceWriter(file, header, version=2))
    written = run(V2 / "scenario.toml", tmp_path / "v2") / "trace.msgpack"
    assert body(written.read_bytes()) == body((V2 / "trace.msgpack").read_bytes())
    assert Trace.read(written).header["version"] == 2


fates = st.one_of(
    st.tuples(st.just("msg"), st.text(max_size=6), st.text(max_size=6), st.integers(-(2**63), 2**64 - 1), st.integers(-5, 300)).map(
        lambda k: (k, st.tuples(st.sampled_from([None, "loss", "expired"]), st.floats(0, 1e300) | st.integers(0, 2**40)))
    ),
    st.tuples(st.just("participation"), st.text(max_size=6), st.integers(0, 10**6)).map(lambda k: (k, st.booleans())),
    st.tuples(st.just("compute"), st.text(max_size=6), st.integers(0, 10**6), st.integers(-3, 3)).map(
        lambda k: (k, st.floats(1e-300, 1e300))
    ),
)
drawn = fates.flatmap(lambda kv: st.tuples(st.just(kv[0]), kv[1]))
section = st.lists(drawn, max_size=12, unique_by=lambda kv: kv[0])
sections = st.lists(st.tuples(st.integers(0, 1), st.sampled_from(["a", "b"]), section), max_size=4, unique_by=lambda s: s[:2]).map(
    lambda s: sorted(s, key=lambda x: x[0])  # runs come one after another
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sections=sections, shared=st.lists(drawn, max_size=6, unique_by=lambda kv: kv[0]))
def test_every_drawn_fate_replays_bit_for_bit_from_both_versions(tmp_path, sections, shared):
    """Whatever names, rounds and values are drawn: the replay of each algorithm and run
    answers every key it drew with the very value drawn, and both versions read back alike."""
    keys = {key for key, _ in shared}
    sections = [(r, alg, [kv for kv in drawn_fates if kv[0] not in keys]) for r, alg, drawn_fates in sections]  # a key once per section
    traces = {}
    for version in (2, 3):
        buf = io.BytesIO()
        writer = TraceWriter(buf, HEADER, version=version)
        for r, alg, drawn_fates in sections:
            record = writer.fates(alg, r)
            for key, value in [*shared, *drawn_fates]:  # `shared`: keys every section draws, same values
                assert record(key, lambda v=value: v) is value
        writer.close(True)
        traces[version] = read(tmp_path, buf.getvalue())
    v2, v3 = traces[2], traces[3]
    assert exact(v3.fates_by_run) == exact(v2.fates_by_run) and exact(v3.first_by_run) == exact(v2.first_by_run)
    for r, alg, drawn_fates in sections:
        replay = v3.fates(alg, r)
        for key, value in [*shared, *drawn_fates]:
            again = replay(key, lambda key=key: pytest.fail(f"{key} was not recorded"))
            assert exact(again) == exact(value) and type(again) is type(value)


def test_a_name_is_written_once_and_a_section_marker_once_per_algorithm_and_run():
    buf = io.BytesIO()
    writer = TraceWriter(buf, HEADER)
    for r in (0, 1):
        for alg in ("a", "b"):
            record = writer.fates(alg, r)
            for k in range(3):
                record(("msg", "server", f"client-{k}", r, 0), lambda alg=alg, k=k: (None, 0.25 * k + (alg == "b")))
    writer.close(True)
    objects = body(buf.getvalue())
    names = [o[1] for o in objects if o[0] == 6]
    sections = [o[1:] for o in objects if o[0] == 7]
    assert names == ["a", "server", "client-0", "client-1", "client-2", "b"]
    assert sections == [[0, 0], [0, 5], [1, 0], [1, 5]]
    assert writer.entries == 12 and objects[-1] == ["end", len(objects) - 1, True]


def test_a_fate_the_format_has_no_code_for_is_refused_when_written():
    record = TraceWriter(io.BytesIO(), HEADER).fates("a", 0)
    with pytest.raises(ValueError, match="delivered, 'loss', 'expired', 'corrupt' or 'duplicate'; .* drew \\('outage', 1.0\\)"):
        record(("msg", "x", "y", 0, 0), lambda: ("outage", 1.0))
    with pytest.raises(ValueError, match="writes versions 2 and 3"):
        TraceWriter(io.BytesIO(), HEADER, version=4)


# ------------------------------------------------------------- refused


def test_another_version_is_refused_naming_the_versions_read(tmp_path):
    with pytest.raises(TraceError, match="t.msgpack: trace format version 4; this netemu reads versions 2 and 3"):
        read(tmp_path, forge({**HEADER, "format": "netemu-trace", "version": 4, "checksum": "blake2b-256"}, []))


V3 = {**HEADER, "format": "netemu-trace", "version": 3, "checksum": "blake2b-256"}
NAMES = [[6, "a"], [6, "x"], [7, 0, 0]]  # names 0 = "a", 1 = "x"; then a section: algorithm "a", run 0


@pytest.mark.parametrize(
    "entries, message",
    [
        ([[6, "a"], [4, 0, 0]], "entry 2: a fate before any section marker"),
        ([*NAMES, [0, 1, 5, 0, 0, 1.0]], "entry 4: name number 5 is not one of the 2 names"),
        ([*NAMES, [18, 1, 0]], "entry 4: code 18 is not a fate"),
        ([*NAMES, [11, 1, 0]], "entry 4: a ns3 entry has 6 items, not 3"),
        ([*NAMES, [11, 0, 1, 0, 0, -1.0]], "the time -1.0 of key .* is not a number >= 0"),
        ([*NAMES, [10, 1, 0]], "entry 4: a completeness entry has 4 items, not 3"),
        ([*NAMES, [10, 1, 0, 1.5]], "is not a work fraction in \\(0, 1\\]"),
        ([*NAMES, ["fate", "a", 0, ["participation", "x", 0], True]], "entry 4: code 'fate' is not a fate"),
        ([*NAMES, "x"], "entry 4: x is not an entry"),
        ([*NAMES, [3, 1]], "entry 4: a participation entry has 3 items, not 2"),
        ([[6, 5]], "entry 1: the name 5 is not a string"),
        ([[6, "other"], [7, 0, 0]], "entry 2: algorithm 'other' is not in the header"),
        ([[6, "a"], [7, 2, 0]], "entry 2: run 2 is not one of the header's 2"),
        ([*NAMES, [0, 1, 1, 0, 0, math.nan]], "entry 4: the delay nan of key .* is not a number >= 0"),
        ([*NAMES, [2, 1, 1, 0, 0, -1.0]], "the delay -1.0 of key \\('msg', 'x', 'x', 0, 0\\) is not a number >= 0"),
        ([*NAMES, [1, 1, 1, 0, 0, "1"]], "the delay 1 of key .* is not a number"),
        ([*NAMES, [5, 1, 0, 0, 0.0]], "the value 0.0 of key \\('compute', 'x', 0, 0\\) is not a slowdown factor > 0"),
        ([*NAMES, [4, 1, "r"]], "round and index are not integers"),
        ([*NAMES, [5, 1, 0, True, 1.5]], "round and index are not integers"),
    ],
)
def test_a_well_checksummed_version_3_entry_of_the_wrong_shape_is_refused(tmp_path, entries, message):
    with pytest.raises(TraceError, match=f"t.msgpack: corrupted trace: (entry [0-9]+: .*)?{message}"):
        read(tmp_path, forge(V3, entries))


def test_an_end_marker_that_counts_only_the_fates_is_refused(tmp_path):
    with pytest.raises(TraceError, match="the end marker counts 1 entries, the file has 4"):
        read(tmp_path, forge(V3, [*NAMES, [4, 1, 0]], count=1))


def test_a_section_may_follow_another_and_names_may_come_late(tmp_path):
    trace = read(tmp_path, forge(V3, [*NAMES, [4, 1, 0], [6, "b"], [7, 1, 2], [6, "y"], [5, 3, 0, 0, 1.5], [7, 1, 0], [3, 3, 2]]))
    assert trace.fates_by_run == {("a", 0): {("participation", "x", 0): True},
                                  ("b", 1): {("compute", "y", 0, 0): 1.5}, ("a", 1): {("participation", "y", 2): False}}


atoms = st.one_of(st.integers(-3, 9), st.integers(-(2**63), 2**64 - 1), st.floats(), st.booleans(), st.none(), st.sampled_from(["a", "b", "x", "end", "fate"]))
crafted = st.lists(st.one_of(atoms, st.lists(atoms, max_size=7)), max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=crafted, start=st.sampled_from([[], NAMES]))
def test_any_well_checksummed_body_is_read_or_refused_in_one_clear_error(tmp_path, entries, start):
    try:
        trace = read(tmp_path, forge(V3, [*start, *entries]))
    except TraceError as exc:
        assert str(exc).startswith(str(tmp_path / "t.msgpack")) and "\n" not in str(exc)
    else:  # read: every fate has a known key and a value of its kind
        for fates in trace.fates_by_run.values():
            assert all(k[0] in ("msg", "participation", "compute") for k in fates)
