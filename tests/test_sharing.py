"""Max-min fair sharing (netemu.engine.net.sharing): rates against closed forms and a brute-force
progressive filling over single transfers; finish times against hand-computed schedules."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netemu.engine.net.sharing import MaxMin


def filling(capacity, routes, bounds):
    """Reference: progressive filling over transfers one by one (no classes, no private links)."""
    rate = [0.0] * len(routes)
    frozen = [False] * len(routes)
    left = dict(capacity)
    while not all(frozen):
        live = [i for i in range(len(routes)) if not frozen[i]]
        steps = [bounds[i] - rate[i] for i in live]
        for link, cap in left.items():
            n = sum(1 for i in live if link in routes[i])
            if n:
                steps.append(cap / n)
        step = min(steps)
        for i in live:
            rate[i] += step
            for link in routes[i]:
                left[link] -= step
        for i in live:
            if rate[i] >= bounds[i] - 1e-12 or any(left[link] <= 1e-9 * capacity[link] for link in routes[i]):
                frozen[i] = True
    return rate


def test_two_transfers_on_one_link_get_half_each():
    m = MaxMin({"L": 10.0})
    m.add(0.0, 0, ["L"], 100.0)
    m.add(0.0, 1, ["L"], 100.0)
    assert m.rates() == {0: 5.0, 1: 5.0}


def test_a_transfer_held_by_its_own_link_leaves_the_rest_of_the_shared_one():
    m = MaxMin({"shared": 10.0, "slow": 2.0})
    m.add(0.0, 0, ["slow", "shared"], 100.0)
    m.add(0.0, 1, ["shared"], 100.0)
    assert m.rates() == {0: 2.0, 1: 8.0}


def test_parking_lot_rates_are_max_min_fair():
    # A (cap 1) carries transfers 0 and 1; B (cap 2) carries 0 and 2: 0 and 1 get 1/2, 2 gets the rest of B
    m = MaxMin({"A": 1.0, "B": 2.0})
    m.add(0.0, 0, ["A", "B"], 10.0)
    m.add(0.0, 1, ["A"], 10.0)
    m.add(0.0, 2, ["B"], 10.0)
    assert m.rates() == pytest.approx({0: 0.5, 1: 0.5, 2: 1.5})


def test_the_window_bound_caps_a_rate_and_the_others_take_what_it_leaves():
    m = MaxMin({"L": 10.0})
    m.add(0.0, 0, ["L"], 100.0, bound=1.0)
    m.add(0.0, 1, ["L"], 100.0)
    assert m.rates() == {0: 1.0, 1: 9.0}


def test_equal_transfers_on_one_link_all_finish_at_n_size_over_capacity():
    m = MaxMin({"L": 4.0})
    for i in range(8):
        m.add(0.0, i, ["L"], 10.0)
    assert m.next_finish() == pytest.approx(8 * 10.0 / 4.0)
    assert m.finished(m.next_finish()) == list(range(8))
    assert len(m) == 0 and m.next_finish() == math.inf


def test_a_short_transfer_ends_first_and_the_long_one_speeds_up():
    # capacity 1: both at 1/2 until the short one (1 byte) ends at t=2; the long one (3 bytes) has 2 left at rate 1
    m = MaxMin({"L": 1.0})
    m.add(0.0, 0, ["L"], 1.0)
    m.add(0.0, 1, ["L"], 3.0)
    t = m.next_finish()
    assert t == pytest.approx(2.0) and m.finished(t) == [0]
    assert m.rates() == {1: 1.0} and m.next_finish() == pytest.approx(4.0)


def test_a_late_arrival_slows_the_transfer_already_running():
    m = MaxMin({"L": 2.0})
    m.add(0.0, 0, ["L"], 4.0)  # alone: rate 2 until t=1 (2 bytes sent)
    m.add(1.0, 1, ["L"], 1.0)  # then both at 1: transfer 1 ends at t=2
    assert m.remaining(0) == pytest.approx(2.0)
    assert m.next_finish() == pytest.approx(2.0) and m.finished(2.0) == [1]
    assert m.next_finish() == pytest.approx(2.5)  # 1 byte left at rate 2


def test_ten_thousand_transfers_through_one_server_link_form_one_class():
    m = MaxMin({"server": 1e6, **{f"access-{i}": 1e4 for i in range(10_000)}})
    for i in range(10_000):
        m.add(0.0, i, [f"access-{i}", "server"], 1000.0)
    assert len(m._classes) == 1  # the access links are each transfer's own bound, not constraints
    assert set(m.rates().values()) == {100.0}  # 1e6 / 10,000 < 1e4


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_rates_equal_progressive_filling_over_single_transfers(data):
    n_links = data.draw(st.integers(1, 4))
    capacity = {f"l{j}": data.draw(st.floats(0.5, 10.0)) for j in range(n_links)}
    n = data.draw(st.integers(1, 7))
    routes = [data.draw(st.lists(st.sampled_from(sorted(capacity)), min_size=1, max_size=n_links, unique=True)) for _ in range(n)]
    bounds = [data.draw(st.sampled_from([math.inf, 0.7, 3.0])) for _ in range(n)]
    m = MaxMin(capacity)
    for i, (route, bound) in enumerate(zip(routes, bounds)):
        m.add(0.0, i, route, 100.0, bound)
    got = m.rates()
    assert np.allclose([got[i] for i in range(n)], filling(capacity, routes, bounds), rtol=1e-9)


def test_time_may_not_run_backwards():
    m = MaxMin({"L": 1.0})
    m.add(2.0, 0, ["L"], 1.0)
    with pytest.raises(ValueError, match="backwards"):
        m.advance(1.0)


def test_a_transfer_taken_out_and_put_back_at_the_same_instant_ends_once():
    # put back into its old class with the same finish tag: its old heap entry must stay stale
    m = MaxMin({"L": 10.0})
    for i in range(3):
        m.add(0.0, i, ["L"], 30.0)
    left = m.remove(1.0, 1)
    m.add(1.0, 1, ["L"], left)
    ends = []
    while len(m):
        ends += m.finished(m.next_finish())
    assert ends == [0, 1, 2]
