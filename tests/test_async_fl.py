"""The asynchronous / straggler-robust family (FedBuff, FedAsync, bounded staleness,
over-commitment, partial aggregation) against its references on an ideal network, and its
parameters and registration."""

import io
import math

import numpy as np
import pytest

from helpers import Trained, linear_task, records
from references import async_fl as async_reference
from references import fedavg as fedavg_reference
from references import sync_fl as sync_reference
from netemu import World, star
from netemu.algorithms.async_fl import SPECS, VARIANTS, AsyncFLParams
from netemu.config import ConfigError
from netemu.log import MessageLog
from netemu.engine.net.nodes import NodeBehaviour
from netemu.plugins import registry

SPEC = {s.name: s for s in SPECS}
# the emulator runs gradient steps, the references affine maps composed in advance: the same
# sums in another order, agreeing to rounding error (measured ≤ 5e-16 relative over 40–250
# sequential server updates; 1e-13 leaves two orders of magnitude of margin)
TOL = 1e-13
LR, STEPS = 0.1, 5  # the clients' local training (the task's)


def ref(params, steps=STEPS):
    """The params as the references read them: with the task's local training."""
    return Trained(params, LR, steps)


def durations(k: int, *, spread: float = 0.1) -> np.ndarray:
    """Distinct compute times, no two answers (nearly) simultaneous in these runs (the
    references check it): a well-defined arrival order."""
    return 1.0 + spread * np.sqrt(np.arange(k) + 1.7)


def emulate(params, n_clients: int, seconds: np.ndarray, rounds: int, completeness=(1.0, 1.0), log=None, steps=STEPS):
    """An ideal network (no delay, no loss, every client participates) where client k's
    training takes exactly `seconds[k]`: its speed is its work / seconds[k].  `completeness`
    = (low, high): each client does a fraction of its work, drawn per (client, round), and
    its training then takes that many steps' share of `seconds[k]`."""
    names = [f"client-{k}" for k in range(n_clients)]
    world = World(star(n_clients), seed=5, behaviours={c: NodeBehaviour(completeness=completeness) for c in names}, log=log)
    task = linear_task(world, names, lr=LR, steps=steps)
    work = np.array([steps * task.parts[c][1].shape[0] for c in names], dtype=float)
    speed = work / seconds
    for c, s in zip(names, speed):
        world.network.nodes[c].speed = float(s)
    SPEC[next(n for n, v in VARIANTS.items() if v["aggregation"] == params.aggregation)].build(world, params, task, rounds)
    world.run()
    parts = [task.parts[c] for c in names]
    per_round = {}
    for *_, name, v in world.metrics:
        per_round.setdefault(name, []).append(v)
    return world.actors["server"].w, parts, work / speed, per_round, world


def assert_matches(got, expected, used, dropped, metrics):
    assert np.linalg.norm(got - expected) <= TOL * np.linalg.norm(expected)
    assert metrics["participants"] == [float(len(u)) for u in used]
    assert metrics["staleness"] == pytest.approx([float(np.mean(u)) if u else 0.0 for u in used], abs=1e-12)
    assert metrics["dropped_stale"] == [float(d) for d in dropped]


ASYNC = {
    "fedbuff, every client training": AsyncFLParams(aggregation="buffer", buffer=4, staleness="polynomial", patience=10),
    "fedbuff, concurrency 4 of 6": AsyncFLParams(aggregation="buffer", buffer=3, concurrency=4, server_lr=0.8,
                                                  staleness="polynomial", patience=10),
    "fedasync, polynomial": AsyncFLParams(aggregation="mix", alpha=0.6, staleness="polynomial", a=0.5, patience=10),
    "fedasync, constant": AsyncFLParams(aggregation="mix", alpha=0.3, concurrency=5, patience=10),
    "bounded staleness, buffer": AsyncFLParams(aggregation="buffer", buffer=2, max_staleness=1, patience=10),
    "bounded staleness, mix": AsyncFLParams(aggregation="mix", alpha=0.5, max_staleness=3, patience=10),
}


@pytest.mark.parametrize("params", ASYNC.values(), ids=ASYNC.keys())
def test_in_an_ideal_network_the_asynchronous_variants_match_the_event_replay(params):
    seconds = durations(6)
    got, parts, took, metrics, _ = emulate(params, 6, seconds, rounds=10)
    expected, used, dropped = async_reference(parts, took, ref(params), rounds=10)
    assert_matches(got, expected, used, dropped, metrics)
    assert sum(map(len, used)) > 100  # many updates, most of them stale: the order matters


def test_bounded_staleness_drops_and_counts_the_updates_staler_than_the_bound():
    params = ASYNC["bounded staleness, mix"]
    _, _, _, metrics, _ = emulate(params, 6, durations(6), rounds=10)
    unbounded = emulate(AsyncFLParams(aggregation="mix", alpha=0.5, patience=10), 6, durations(6), rounds=10)[3]
    assert sum(metrics["dropped_stale"]) > 0 and sum(unbounded["dropped_stale"]) == 0
    assert max(metrics["staleness"]) <= 3 < max(unbounded["staleness"])


#: five clients answer within a 2.5 s round, three a round or two late (no ties: the offsets)
STRAGGLING = np.array([0.7, 1.13, 1.61, 2.93, 3.71, 6.37, 1.37, 4.43]) + 0.001 * np.sqrt(np.arange(8) + 2.0)

SYNC = {
    "over-commitment": (AsyncFLParams(aggregation="sync", clients_per_round=4, overcommit=1.3, round_time=2.5, patience=10),
                        durations(8, spread=0.3)),
    "partial aggregation": (AsyncFLParams(aggregation="sync", carry_late=True, staleness="polynomial", round_time=2.5, patience=10),
                            STRAGGLING),
    "partial aggregation, bounded": (AsyncFLParams(aggregation="sync", carry_late=True, max_staleness=1, round_time=2.5, patience=10),
                                     STRAGGLING),
    "deadline only (fedavg)": (AsyncFLParams(aggregation="sync", round_time=2.5, patience=10),
                               STRAGGLING),
}


@pytest.mark.parametrize(("params", "seconds"), SYNC.values(), ids=SYNC.keys())
def test_in_an_ideal_network_the_round_variants_match_the_vectorized_reference(params, seconds):
    got, parts, took, metrics, world = emulate(params, 8, seconds, rounds=12)
    draws = world.streams.keyed("async_fl/select")
    expected, used, dropped = sync_reference(parts, took, ref(params), rounds=12, draw=lambda k, r: (draws.uniform(f"client-{k}", r), f"client-{k}"))
    assert_matches(got, expected, used, dropped, metrics)


def test_over_commitment_asks_more_clients_than_it_aggregates_and_drops_the_rest():
    params, seconds = SYNC["over-commitment"]
    _, _, _, metrics, _ = emulate(params, 8, seconds, rounds=12)
    assert metrics["participants"] == [4.0] * 12  # K = 4 of ceil(1.3 * 4) = 6 asked
    assert sum(metrics["dropped_stale"]) > 0  # the two slowest of each round answer a closed round


def test_partial_aggregation_mixes_late_updates_into_the_next_round():
    params, seconds = SYNC["partial aggregation"]
    _, _, _, carried, _ = emulate(params, 8, seconds, rounds=12)
    _, _, _, plain, _ = emulate(SYNC["deadline only (fedavg)"][0], 8, seconds, rounds=12)
    assert max(carried["staleness"]) > 0 and sum(carried["dropped_stale"]) == 0
    assert sum(carried["participants"]) > sum(plain["participants"]) and sum(plain["dropped_stale"]) > 0


def test_partial_aggregation_with_patience_one_sends_every_client_the_model_every_round_and_uses_every_late_update():
    """FedAvg with late updates carried over (the graph-filter scenarios' `fedavg-carry`): with
    patience = 1 a straggler still training is asked again the next round, as FedAvg asks every
    client; its late answers are mixed in, none is left unused (models still queued at a straggler
    when the run ends are "unread")."""
    params = AsyncFLParams(aggregation="sync", carry_late=True, round_time=2.5, patience=1)
    buf = io.BytesIO()
    _, _, _, metrics, world = emulate(params, 8, STRAGGLING, rounds=12, log=MessageLog(buf))
    world.log.flush()
    rows = records(buf)
    asked = [sum(1 for r in rows if r.get("kind") == "model" and r.get("src") == "server" and r.get("round") == t and r.get("event") == "send")
             for t in range(12)]
    assert asked == [8] * 12
    assert max(metrics["staleness"]) > 0 and sum(metrics["dropped_stale"]) == 0
    unused = [r for r in rows if r.get("event") == "unused"]
    assert unused and {(r["kind"], r["reason"]) for r in unused} == {("model", "unread")}


@pytest.mark.parametrize(("values", "key"), [
    ({"aggregation": "fedprox"}, "aggregation"),
    ({"buffer": 0}, "buffer"),
    ({"alpha": 1.5}, "alpha"),
    ({"staleness": "hinge"}, "staleness"),
    ({"max_staleness": -2}, "max_staleness"),
    ({"overcommit": 1.3}, "overcommit"),  # over-commitment needs rounds
    ({"aggregation": "mix", "carry_late": True}, "carry_late"),
    ({"aggregation": "sync", "overcommit": 0.5}, "overcommit"),
])
def test_parameters_out_of_range_are_refused_naming_the_key(values, key):
    with pytest.raises(ConfigError) as err:
        AsyncFLParams(**values)
    assert key in str(err.value)


def test_every_variant_is_registered_with_its_preset():
    algorithms = registry().algorithms
    for name, preset in VARIANTS.items():
        spec = algorithms[name]
        params = spec.make_params({})
        assert all(getattr(params, k) == v for k, v in preset.items())
        assert spec.task and spec.roles == ("server", "client")
    assert math.isclose(VARIANTS["overcommit"]["overcommit"], 1.3)


def test_rounds_whose_clients_all_answer_in_time_are_fedavg():
    params = AsyncFLParams(aggregation="sync", round_time=2.5)
    got, parts, _, metrics, _ = emulate(params, 6, durations(6), rounds=8, steps=3)
    expected = fedavg_reference(parts, 5, rounds=8, lr=0.1, steps=3)
    assert np.linalg.norm(got - expected) <= TOL * np.linalg.norm(expected)
    assert metrics["participants"] == [6.0] * 8 and metrics["staleness"] == [0.0] * 8


# ------------------------------------------------------------------ partial work (completeness)

PARTIAL = (0.3, 1.0)


def drawn_steps(world, local_steps: int, low: float, high: float):
    """steps(k, r): client k's local steps when asked in round r, from the keyed stream Network.work_fraction
    draws from (stream `completeness`, coordinates (node, round)), written out independently of it."""
    draws = world.streams.keyed("completeness")

    def steps(k: int, r: int) -> int:
        f = low + (high - low) * draws.uniform(f"client-{k}", r)
        return max(1, math.floor(f * local_steps))
    return steps


@pytest.mark.parametrize("params", [ASYNC["fedbuff, concurrency 4 of 6"], ASYNC["fedasync, polynomial"],
                                    ASYNC["bounded staleness, buffer"]], ids=["fedbuff", "fedasync", "bounded staleness"])
def test_with_partial_work_the_asynchronous_variants_match_the_replay_with_the_drawn_steps(params):
    got, parts, took, metrics, world = emulate(params, 6, durations(6), rounds=10, completeness=PARTIAL)
    steps = drawn_steps(world, STEPS, *PARTIAL)
    expected, used, dropped = async_reference(parts, took, ref(params), rounds=10, steps=steps)
    assert_matches(got, expected, used, dropped, metrics)
    full = async_reference(parts, took, ref(params), rounds=10)[0]
    assert np.linalg.norm(got - full) > 1e-6 * np.linalg.norm(full)  # the partial work changed the run


@pytest.mark.parametrize("name", ["over-commitment", "partial aggregation"])
def test_with_partial_work_the_round_variants_match_the_vectorized_reference_with_the_drawn_steps(name):
    params, seconds = SYNC[name]
    got, parts, took, metrics, world = emulate(params, 8, seconds, rounds=12, completeness=PARTIAL)
    draws = world.streams.keyed("async_fl/select")
    steps = drawn_steps(world, STEPS, *PARTIAL)
    expected, used, dropped = sync_reference(parts, took, ref(params), rounds=12, steps=steps,
                                             draw=lambda k, r: (draws.uniform(f"client-{k}", r), f"client-{k}"))
    assert_matches(got, expected, used, dropped, metrics)
    full = sync_reference(parts, took, ref(params), rounds=12, draw=lambda k, r: (draws.uniform(f"client-{k}", r), f"client-{k}"))[0]
    assert np.linalg.norm(got - full) > 1e-6 * np.linalg.norm(full)  # the partial work changed the run


def test_with_partial_work_each_compute_is_the_drawn_steps_times_the_clients_samples():
    params = ASYNC["fedbuff, every client training"]
    buf = io.BytesIO()
    _, parts, took, _, world = emulate(params, 6, durations(6), rounds=4, completeness=PARTIAL, log=MessageLog(buf))
    world.log.flush()
    computes = [r for r in records(buf) if r.get("event") == "compute"]
    assert len(computes) > 20
    fractions = set()
    for r in computes:
        k = int(r["actor"].split("-")[1])
        f = world.network.work_fraction(r["actor"], r["round"])
        fractions.add(f)
        assert 0.3 <= f <= 1.0 and r["work"] == max(1, math.floor(f * STEPS)) * parts[k][1].shape[0]
    assert len(fractions) > 6  # drawn per (client, round)
