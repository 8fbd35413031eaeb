"""Participation fates drawn as a batch (`Network.participations` through the hook's `many`)
are the per-key fates exactly: the same values, the same trace bytes (entries, order, name
entries, section markers, de-duplication across the algorithms of a run), in trace formats
2 and 3; a replay answers a batch as it answers the keys one by one (recorded entries
first, then the run's first value, fresh draws counted as new), whichever way the trace
was recorded."""

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netemu import NodeBehaviour, World, star
from netemu.trace import Trace, TraceWriter

ALGORITHMS = ["a", "b"]
HEADER = {  # a valid header for two algorithms and two runs
    "netemu": "test", "scenario": "t", "scenario_hash": "", "seed": 1, "algorithms": ALGORITHMS,
    "runs": [{"seed": 1, "topology": "x"}, {"seed": 2, "topology": "x"}], "network": {},
}
N = 6  # clients; client-0 also draws compute fates (slowdown), interleaved with the batches

probability = st.one_of(st.just(0.0), st.just(1.0), st.floats(0.01, 0.99))
# one call: (round, nodes asked for — repeats allowed, the server included —, draw a compute fate before it)
call = st.tuples(st.integers(0, 3), st.lists(st.integers(-1, N - 1), max_size=N + 2), st.booleans())
# per run, per algorithm: its calls, each with whether the mixed world makes it a batch
calls = st.lists(st.tuples(call, st.booleans()), max_size=4)
runs = st.lists(st.tuples(calls, calls), min_size=1, max_size=2)


def name(i: int) -> str:
    return "server" if i < 0 else f"client-{i}"


def world(probs, fates=None) -> World:
    behaviours = {f"client-{k}": NodeBehaviour(participation=p, slowdown_sigma=0.5 * (k == 0)) for k, p in enumerate(probs)}
    return World(star(N), seed=3, behaviours=behaviours, **({} if fates is None else {"fates": fates}))


def draw(w: World, round: int, names: list[str], batch: bool, compute: bool) -> list[bool]:
    net = w.network
    if compute:
        net.compute_time("client-0", 1.0, round, len(names))
    if batch:
        out = net.participations(names, round)
        assert out.dtype == bool and out.shape == (len(names),)
        return out.tolist()
    return [net.participates(n, round) for n in names]


def sections(plan):
    """(run, algorithm, its calls) in the order a runner goes through them."""
    for r, per_algorithm in enumerate(plan):
        for alg, its_calls in zip(ALGORITHMS, per_algorithm):
            yield r, alg, its_calls


def record(plan, probs, version: int, mode: str, inner=None) -> tuple[bytes, list]:
    """The trace and the values of `plan` drawn per key, as batches, or mixed (each call's flag);
    `inner(alg, run)`: a replayer the recorder reads from, as `netemu replay` records."""
    buf = io.BytesIO()
    writer = TraceWriter(buf, HEADER, version=version)
    w, values = world(probs), []
    for r, alg, its_calls in sections(plan):
        w.network.fates = writer.fates(alg, r, None if inner is None else inner(alg, r))
        for (round, nodes, compute), flag in its_calls:
            batch = {"batch": True, "per-key": False, "mixed": flag}[mode]
            values.append(draw(w, round, [name(i) for i in nodes], batch, compute))
    writer.close(True)
    return buf.getvalue(), values


def replay(trace: Trace, plan, probs, batch: bool) -> tuple[list, dict]:
    w, values = world(probs), []
    trace.counts.update(replayed=0, new=0)
    for r, alg, its_calls in sections(plan):
        w.network.fates = trace.fates(alg, r)
        for (round, nodes, compute), _ in its_calls:
            values.append(draw(w, round, [name(i) for i in nodes], batch, compute))
    return values, dict(trace.counts)


def read(tmp_path, data: bytes) -> Trace:
    path = tmp_path / "trace.msgpack"
    path.write_bytes(data)
    return Trace.read(path)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(plan=runs, probs=st.lists(probability, min_size=N, max_size=N), version=st.sampled_from([2, 3]))
def test_a_batch_records_the_bytes_and_values_of_one_call_per_key(plan, probs, version):
    per_key = record(plan, probs, version, "per-key")
    assert record(plan, probs, version, "batch") == per_key
    assert record(plan, probs, version, "mixed") == per_key


@SETTINGS
@given(plan=runs, probs=st.lists(probability, min_size=N, max_size=N), other=st.lists(probability, min_size=N, max_size=N),
       extra=runs, version=st.sampled_from([2, 3]))
def test_a_batch_replays_the_values_and_counts_of_one_call_per_key(tmp_path, plan, probs, other, extra, version):
    """Recorded per key or as batches, replayed per key or as batches: the same values and
    counts.  The replay asks for the recorded calls and for `extra` ones (keys never
    recorded: drawn, counted as new) under other probabilities (recorded values win)."""
    both = [(a + more_a, b + more_b) for (a, b), (more_a, more_b) in zip(plan, [*extra, ([], [])])]
    recorded = {mode: record(plan, probs, version, mode) for mode in ("per-key", "batch")}
    expected = None
    for mode, (data, _values) in recorded.items():
        for batch in (False, True):
            got = replay(read(tmp_path, data), both, other, batch)
            expected = expected or got
            assert got == expected, (mode, batch)
    # a recorded call replays the values drawn when it was recorded, where both worlds draw
    drawn = lambda i, probs: i >= 0 and 0 < probs[i] < 1
    replayed_values, recorded_values = iter(expected[0]), iter(recorded["per-key"][1])
    for (a, b), (more_a, more_b) in zip(plan, [*extra, ([], [])]):
        for its, more in ((a, more_a), (b, more_b)):
            for (_, nodes, _), _ in its:
                now, then = next(replayed_values), next(recorded_values)
                assert [x for i, x in zip(nodes, now) if drawn(i, probs) and drawn(i, other)] == \
                       [x for i, x in zip(nodes, then) if drawn(i, probs) and drawn(i, other)]
            for _ in more:
                next(replayed_values)


@SETTINGS
@given(plan=runs, probs=st.lists(probability, min_size=N, max_size=N), again=runs, version=st.sampled_from([2, 3]))
def test_recording_while_replaying_writes_the_same_trace_per_key_and_as_batches(tmp_path, plan, probs, again, version):
    """What `netemu replay` does: a recorder reading from a replayer (the run's first algorithm's fates)."""
    trace = read(tmp_path, record(plan, probs, version, "per-key")[0])
    inner = lambda alg, r: trace.fates("a", r)
    per_key = record(again, probs, version, "per-key", inner)
    counts = dict(trace.counts)
    trace.counts.update(replayed=0, new=0)
    assert record(again, probs, version, "batch", inner) == per_key
    assert trace.counts == counts


def test_a_hook_without_many_is_asked_one_key_at_a_time_in_order():
    asked = []

    def hook(key, draw):
        asked.append(key)
        return draw()

    names = [f"client-{k}" for k in range(N)]
    probs = [0.5, 0.0, 1.0, 0.25, 0.75, 0.5]
    hooked, plain = world(probs, hook), world(probs)
    assert hooked.network.participations(names, 7).tolist() == [plain.network.participates(n, 7) for n in names]
    assert asked == [("participation", n, 7) for n, p in zip(names, probs) if 0 < p < 1]


def test_the_first_recorded_value_of_a_round_is_kept_when_another_algorithm_differs():
    """A later algorithm that meets another value (a replay under another source) writes it; a third
    algorithm meeting the first value again writes nothing: the same rule as one key at a time."""
    traces = []
    for batch in (False, True):
        buf = io.BytesIO()
        writer = TraceWriter(buf, {**HEADER, "algorithms": ["a", "b", "c"]})
        for alg, value in (("a", True), ("b", False), ("c", True)):
            fates = writer.fates(alg, 0)
            if batch:
                fates.many("participation", ["x", "y"], 0, lambda index, v=value: np.full(len(index), v))
            else:
                for n in ("x", "y"):
                    fates(("participation", n, 0), lambda v=value: v)
        traces.append(buf.getvalue())
        assert writer.entries == 4
    assert traces[0] == traces[1]


def test_a_recorder_refuses_a_batch_of_fates_other_than_participation():
    fates = TraceWriter(io.BytesIO(), HEADER).fates("a", 0)
    with pytest.raises(ValueError, match="batches of participation fates, not of 'msg'"):
        fates.many("msg", ["x"], 0, lambda index: np.zeros(len(index), dtype=bool))
