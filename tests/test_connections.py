"""Persistent connections of the reliable transport (netemu.engine.net.connections)."""

import pytest

from helpers import Sender, Sink, logged_world, records
from netemu import Bernoulli, Constant, Link
from netemu.engine.net import topology as T
from netemu.engine.net.connections import restart_window
from netemu.engine.net.model import NetModel

DELAY = 0.025  # per hop: RTT 0.1 s over client -> router -> server


def stream(plan, model, *, loss=None, seed=0):
    """client-0 sends `plan` = [(t, payload bytes), ...] to the server over 10 Mbit/s links; the
    server's (time, message) deliveries and the log records."""
    g = T.behind_routers(T.star(1), server_link=True)
    links = {(u, v): Link(Constant(DELAY), bandwidth=10e6, link_class=cls, loss=loss if cls == "uplink" else None)
             for u, v, cls in g.edges(data="link_class")}
    world, buf = logged_world(g, seed=seed, links=links, model=model)
    world.add(Sender("client-0", [(t, "server", "up", bytes(n), k) for k, (t, n) in enumerate(plan)], linger=600.0))
    sink = world.add(Sink("server"))
    world.run()
    return sink.got, records(buf)


PERSISTENT = NetModel(sharing="max-min", transport="reliable")
PER_MESSAGE = NetModel(sharing="max-min", transport="reliable", connection="per-message")


def test_back_to_back_messages_on_a_persistent_connection_arrive_in_order_one_after_another():
    got, _ = stream([(0.0, 2000)] * 50, PERSISTENT)
    times = [t for t, _ in got]
    assert [m.round for _, m in got] == list(range(50))  # the order they were sent in
    assert times == sorted(times) and times[-1] - times[0] > 0.05  # a stream: spread out, not all at once
    # one byte stream in slow start: the first 7 messages (~14.3 kB) fit the initial window of
    # 10 x 1448 bytes and arrive together; the 8th waits for the window to grow, about one RTT
    assert times[6] - times[0] < 0.02 and 0.05 < times[7] - times[6] < 0.1
    # per message, all 50 connections start together, share the links and finish together
    together, _ = stream([(0.0, 2000)] * 50, PER_MESSAGE)
    assert max(t for t, _ in together) - min(t for t, _ in together) < 1e-3


def test_a_persistent_connection_pays_the_handshake_once():
    (first, _), (second, _) = stream([(0.0, 1000), (1.0, 1000)], PERSISTENT)[0]
    # 1 kB in the first window: handshake (one RTT) + one way for the first; one way only for the second
    assert first == pytest.approx(0.1 + 0.05, abs=2e-3) and second - 1.0 == pytest.approx(0.05, abs=2e-3)
    (_, _), (again, _) = stream([(0.0, 1000), (1.0, 1000)], PER_MESSAGE)[0]
    assert again - 1.0 == pytest.approx(0.15, abs=2e-3)


def test_the_window_is_kept_across_messages_and_restarted_after_idle_periods():
    big = 2_000_000
    # the first 2 MB leave the sender at ~1.97 s (delivered at 2.02 s); a second sent 0.1 s later
    # (idle < one RTO of 0.2 s) starts at the window the first reached; one sent after 60 s idle
    # starts again from the initial window: slow start to 10 Mbit/s x 0.1 s costs it ~0.27 s
    warm = stream([(0.0, big), (2.07, big)], PERSISTENT)[0]
    cold = stream([(0.0, big), (60.0, big)], PERSISTENT)[0]
    alone = big * 8 / (10e6 * 0.97) + 0.05  # at the link's rate from the first byte, plus one way
    assert warm[1][0] - 2.07 == pytest.approx(alone, abs=2e-3)
    assert cold[1][0] - 60.0 > alone + 0.2


def test_restart_window_halves_once_per_idle_rto_down_to_the_initial_window():
    assert restart_window(64_000, 0.1, 0.2, 14_480) == 64_000  # idle less than an RTO: kept
    assert restart_window(64_000, 0.45, 0.2, 14_480) == 16_000  # two RTOs: halved twice
    assert restart_window(64_000, 10.0, 0.2, 14_480) == 14_480  # never below the initial window
    assert restart_window(64_000, float("inf"), 0.2, 14_480) == 14_480


def test_a_message_after_a_lost_one_waits_for_it():
    # loss 0.5 per packet, single-segment messages: the lost one is resent after a timeout and the
    # ones sent after it are held back until it arrives (in order, as one TCP byte stream)
    got, recs = stream([(0.01 * k, 500) for k in range(12)], PERSISTENT, loss=Bernoulli(0.5), seed=4)
    rounds = [m.round for _, m in got]
    assert rounds == sorted(rounds) and max(r["attempts"] for r in recs if r["event"] == "deliver") > 1
