"""Scenario script for quickstart_scripted.toml: events a TOML file cannot say.

netemu calls `setup(world)` once per (Monte Carlo run, algorithm), after the actors are
added and before the run starts.  Everything here happens in virtual seconds; with
round_time = 5 s, round n of the quick start starts at t = 5 n.
"""

ROUND_TIME = 5.0


def setup(world):
    net = world.network

    # client group B (client-0 ... client-4) slows down 5x from t = 100
    def slow_down():
        for k in range(5):
            net.nodes[f"client-{k}"].speed /= 5

    world.at(100.0, slow_down)

    # the uplink of client-7 goes down between t = 120 and t = 150
    net.link("client-7", "server").add_outage(120.0, 150.0)

    # client-2 crashes at round 10 and comes back at round 20
    world.crash("client-2", at=10 * ROUND_TIME, recover_at=20 * ROUND_TIME)
