"""netem's duplicate and corrupt on links: what each transport makes of them, and that a trace
records and replays them (new trace codes 8 and 9)."""


from helpers import Sender, Sink, logged_world, records
from netemu import Constant, Link
from netemu.cli import main
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel


def run(model=None, **link):
    g = T.star(1)
    links = {("client-0", "server"): Link(Constant(0.01), link_class="uplink", **link)}
    world, buf = logged_world(g, seed=5, links=links, model=model)
    world.add(Sender("client-0", [(0.0, "server", "up", k, k) for k in range(200)], linger=50.0))
    sink = world.add(Sink("server"))
    world.run()
    return sink.got, records(buf)


def test_a_duplicated_datagram_arrives_twice_and_the_copy_is_marked():
    got, recs = run(duplicate=0.25)
    copies = [r for r in recs if r["event"] == "deliver" and r.get("duplicate")]
    assert 30 < len(copies) < 70  # 200 x 0.25, binomial sd ~6
    assert len(got) == 200 + len(copies)
    assert sorted(m.payload for _, m in got) == sorted([*range(200), *(r["round"] for r in copies)])


def test_a_corrupted_datagram_is_dropped_when_it_arrives():
    got, recs = run(corrupt=0.25)
    drops = [r for r in recs if r["event"] == "drop"]
    assert {r["reason"] for r in drops} == {"corrupt"} and len(got) + len(drops) == 200
    assert all(r["t"] >= 0.01 for r in drops)  # at the receiver, after the propagation delay


def test_the_reliable_transport_resends_a_corrupted_message_and_drops_a_copy():
    got, recs = run(NetModel(transport="reliable"), duplicate=0.25, corrupt=0.25)
    assert sorted(m.payload for _, m in got) == list(range(200))
    assert not [r for r in recs if r["event"] == "drop"]


def test_links_without_them_draw_what_they_always_drew():
    # the same Bernoulli losses with and without duplicate = corrupt = 0
    from netemu import Bernoulli
    assert run(loss=Bernoulli(0.3))[1] == run(loss=Bernoulli(0.3), duplicate=0.0, corrupt=0.0)[1]


SCENARIO = """
[run]
seed = 4
rounds = 4
[topology]
kind = "star"
clients = 5
[links.uplink]
latency = { model = "exponential", mean = 0.2 }
duplicate = 0.3
corrupt = 0.3
[nodes]
speed = 500.0
[data]
kind = "linear"
dim = 2
[[algorithm]]
name = "fedavg"
round_time = 3.0
"""


def test_a_replay_of_duplicates_and_corruptions_gives_the_same_log(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    assert main(["run", str(scenario), "--out", str(tmp_path / "run"), "--quiet", "--set", "output.plots=false"]) == 0
    log = (tmp_path / "run" / "messages.jsonl").read_bytes()
    assert b'"duplicate":true' in log and b'"reason":"corrupt"' in log
    assert main(["replay", str(tmp_path / "run" / "trace.msgpack"), "--scenario", str(scenario), "--out", str(tmp_path / "r"),
                 "--quiet", "--set", "output.plots=false"]) == 0
    assert (tmp_path / "r" / "messages.jsonl").read_bytes() == log
