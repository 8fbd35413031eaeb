"""The graph-filter family's clients as one cohort (the default) change nothing: every
variant and model writes the same message log, trace and metrics, and ends with the same
models and client state, as with one actor per client — under losses, stragglers,
partial participation, crashes and recoveries — and so do the shipped scenarios."""

import io

import numpy as np
import pytest
from helpers import digits_task, graphfl_split
from test_cohort import shipped_run
from test_graphfl import client_local

from netemu import Bernoulli, Exponential, Link, MessageLog, NodeBehaviour, World, star
from netemu.algorithms.graphfl import build
from netemu.data.federated import FederatedDigits, make_federated_digits

K, ROUNDS = 8, 5


def lossy_links(g):
    return {e: Link(Exponential(0.3, base=0.05), loss=Bernoulli(0.1), bandwidth=2e5, link_class=g.edges[e]["link_class"])
            for e in g.edges}


def harsh_nodes():
    """Partial participation and compute slow-downs; clients 0-1 are stragglers that miss
    deadlines (models queue while they compute); client-3 crashes after sending its
    statistics and sends them again when it recovers; client-4 crashes twice later (in
    the middle of its rounds); client-5 crashes for good."""
    out = {f"client-{k}": NodeBehaviour(participation=0.8, speed=1.0, slowdown_sigma=0.5) for k in range(K)}
    for k in range(2):
        out[f"client-{k}"] = NodeBehaviour(participation=0.9, speed=0.04, slowdown_sigma=0.3)
    out["client-3"] = NodeBehaviour(speed=1.0, crashes=((0.2, 2.5),))
    out["client-4"] = NodeBehaviour(participation=0.9, speed=0.8, crashes=((4.1, 6.3), (9.6, 11.0)))
    out["client-5"] = NodeBehaviour(speed=1.0, crashes=((5.0, None),))
    return out


def graphfl_run(cohort: bool, variant: str, overrides: dict, rooms: bool, rounds: int = ROUNDS, links="harsh", nodes="harsh"):
    """One run of `variant` on the harsh network: (log bytes, trace keys and values, world).
    Under P'' (`optimize`) the links have no delay or loss: its deadline (about 0.4 ms
    here) leaves no time for them, and the rounds are over before any crash.  `links=None`:
    ideal links; `nodes`: one NodeBehaviour's fields for every client instead."""
    keys = []

    def fates(key, draw):
        value = draw()
        keys.append((key, value))
        return value

    g, buf = star(K), io.BytesIO()
    links = None if overrides.get("optimize") or links is None else lossy_links(g)
    behaviours = harsh_nodes() if nodes == "harsh" else {f"client-{k}": NodeBehaviour(**nodes) for k in range(K)}
    world = World(g, seed=3, links=links, behaviours=behaviours, log=MessageLog(buf), fates=fates)
    data = (FederatedDigits(partition="rooms", rooms=3, samples=40, test_samples=20) if rooms else
            FederatedDigits(partition="dirichlet", kappa=0.3, samples=40, test_samples=20))
    task = make_federated_digits(data, [f"client-{k}" for k in range(K)], world.streams)
    params, task_keys = graphfl_split(variant, **{"deadline": 2.5, "epochs": 2, **overrides})
    build(world, params, digits_task(world, task, **task_keys), rounds, cohort=cohort)
    world.run()
    return buf.getvalue(), keys, world


CASES = [
    ("fedpnp-soft", {"metrics": ["accuracy", "f1"]}, False),
    ("fedpnp-soft", {"model": "mlp", "late": "carry"}, False),
    ("fedpnp-soft", {"model": "cnn", "channels": 4}, False),
    ("fedpnp-hard", {"tau": 2}, False),
    ("g-fedfilt", {"sparsity": 0.3}, True),  # positions graph, partial updates with residuals
    ("g-fedfilt", {"system": "table3", "optimize": True}, True),  # per-device α, q (a subset of samples), z
    ("fedpnp-soft", {"system": "table3", "late": "carry"}, False),  # Table III devices, no P''

    ("mean-filter", {"sparsity": 0.2, "late": "carry"}, False),
    ("identity-filter", {}, False),
    ("pfedme", {}, False),  # the personal model θ̂ (probe) per client
    ("perfedavg", {"maml": "hf"}, False),
    ("fedbn", {"model": "mlp_bn"}, False),  # kept entries per client
    ("fedbn", {"model": "cnn_bn", "channels": 4}, False),
]


@pytest.mark.parametrize("variant, overrides, rooms", CASES, ids=[f"{v}-{'-'.join(map(str, o.values())) or 'default'}"
                                                                  for v, o, _ in CASES])
def test_every_variant_and_model_runs_the_same_as_a_cohort_as_with_one_actor_per_client(variant, overrides, rooms):
    one_each = graphfl_run(False, variant, overrides, rooms)
    cohort = graphfl_run(True, variant, overrides, rooms)
    assert "graphfl-clients" in cohort[2].actors and "client-0" in one_each[2].actors  # both ways were run
    log = one_each[0]
    assert log.count(b'"kind":"update"') > 2 * K  # the clients trained and replied
    if not overrides.get("optimize"):  # see graphfl_run
        assert b'"event":"crash"' in log and b'"event":"recover"' in log and b'"reason":"loss"' in log
        assert log.count(b'"kind":"stats"') > 2 * K  # sent, delivered, and sent again after a recovery
    assert cohort[0] == log
    assert cohort[1] == one_each[1]
    assert cohort[2].metrics == one_each[2].metrics
    a, b = cohort[2].actors["server"], one_each[2].actors["server"]
    np.testing.assert_array_equal(a.Psi, b.Psi)
    np.testing.assert_array_equal(a.used_models(), b.used_models())
    for name in a.state.clients:
        mine, theirs = client_local(cohort[2], name), client_local(one_each[2], name)
        for field in ("residual", "own"):
            x, y = getattr(mine, field), getattr(theirs, field)
            assert (x is None) == (y is None) and (x is None or np.array_equal(x, y)), (name, field)


def test_the_harsh_network_makes_clients_late_and_queue_models():
    """What the comparisons above cover: updates that miss the deadline and models that
    arrive while their client still computes (they wait in its queue)."""
    world = graphfl_run(True, "fedpnp-soft", {}, False)[2]
    assert sum(v for _, _, _, m, v in world.metrics if m == "late") > 0
    log = graphfl_run(True, "fedpnp-soft", {}, False)[0].decode()
    import orjson
    recs = [orjson.loads(line) for line in log.splitlines()]
    computing = {}  # client -> end of its compute
    queued = 0
    for r in recs:
        if r["event"] == "compute":
            computing[r["actor"]] = r["t"] + r["duration"]
        elif r["event"] == "deliver" and r["kind"] == "model" and r["t"] < computing.get(r["dst"], -1):
            queued += 1
    assert queued > 0


# stragglers and late updates; pFedMe and Per-FedAvg; FedBN with mlp_bn; positions; Table III devices and P''
SHIPPED = ["graphfl_stragglers.toml", "fedpnp_table1_dir02.toml", "fedpnp_table1_fedbn_dir02.toml", "gfedfilt_fig8_setup1.toml",
           "gfedfilt_table7.toml"]
OTHERS = ["fedpnp_cnn_digits.toml", "fedpnp_fig2.toml", "fedpnp_fig3.toml", "fedpnp_fig4.toml", "fedpnp_table1_dir05.toml", "gfedfilt_fig8_setup2.toml",
          "gfedfilt_table4_digits10.toml", "gfedfilt_table4_digits2.toml", "gfedfilt_table4_digits2_paper.toml",
          "gfedfilt_table4_digits4.toml"]


@pytest.mark.parametrize("scenario", SHIPPED + [pytest.param(s, marks=pytest.mark.slow) for s in OTHERS])
def test_shipped_graphfl_scenarios_write_the_same_files_with_a_cohort_as_with_one_actor_per_client(
        monkeypatch, tmp_path, scenario):
    cohorts = shipped_run(scenario, ["run.rounds=2"], tmp_path / "cohort")
    monkeypatch.setitem(build.__kwdefaults__, "cohort", False)
    one_each = shipped_run(scenario, ["run.rounds=2"], tmp_path / "actors")
    assert cohorts.keys() == one_each.keys() and len(cohorts) >= 3
    for name in cohorts:
        assert cohorts[name] == one_each[name], name


def test_clients_trained_together_in_chunks_write_the_same_as_one_actor_per_client(monkeypatch):
    """The cohort trains at most BATCH_CLIENTS clients in one batched call; smaller
    chunks than the clients in progress change nothing either."""
    from netemu.algorithms import graphfl_client

    calls = []
    many = graphfl_client.softmax_sgd_many

    def counted(model, w, *args, **kwargs):
        calls.append(w.shape[0])
        return many(model, w, *args, **kwargs)

    monkeypatch.setattr(graphfl_client, "BATCH_CLIENTS", 3)
    monkeypatch.setattr(graphfl_client, "softmax_sgd_many", counted)
    ideal = {"participation": 1.0}
    one_each = graphfl_run(False, "fedpnp-soft", {}, False, links=None, nodes=ideal)
    cohort = graphfl_run(True, "fedpnp-soft", {}, False, links=None, nodes=ideal)
    assert max(calls) == 3 and calls.count(3) >= 2 * ROUNDS  # 8 clients in progress: chunks of 3, 3 and 2
    assert cohort[0] == one_each[0] and cohort[2].metrics == one_each[2].metrics
    np.testing.assert_array_equal(cohort[2].actors["server"].Psi, one_each[2].actors["server"].Psi)
