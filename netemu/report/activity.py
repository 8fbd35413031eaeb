"""Participation and availability over time, for `netemu report`: per algorithm and round, how
many clients sent in that round (participating) and how many were up when it started
(available: the clients of the log minus those crashed or offline then, from its `crash` and
`recover` records), as the mean over the Monte Carlo runs, against rounds and the virtual time
of each round's first send.  Servers (actors named server…) are not clients."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

__all__ = ["Lifecycle", "activity"]

MAX_POINTS = 1500  # rounds kept per curve (every k-th beyond, as the learning curves)


class Lifecycle:
    """The crash and recover records of one (algorithm, run), in time order."""

    def __init__(self) -> None:
        self.events: list[tuple[float, str, bool]] = []  # (t, actor, up after it)

    def add(self, t: float, actor: str, up: bool) -> None:
        self.events.append((t, actor, up))

    def down_at(self, times: list[float], clients: set[str]) -> list[int]:
        """How many of `clients` were down at each of the (sorted) `times`."""
        down: set[str] = set()
        out, i = [], 0
        for t in times:
            while i < len(self.events) and self.events[i][0] <= t:
                _, actor, up = self.events[i]
                (down.discard if up else down.add)(actor)
                i += 1
            out.append(len(down & clients))
        return out


def _client(name: str) -> bool:
    return not name.startswith("server")


def activity(runs: list[tuple[dict[str, set], dict[int, float], Lifecycle]]) -> dict:
    """From each run's rounds each actor sent in, each round's first send time and its lifecycle:
    per round the mean over runs of the participating and available clients, and the mean start time."""
    per: dict[int, list[tuple[float, int, int]]] = defaultdict(list)
    clients_seen = []
    for sent, starts, life in runs:
        clients = {a for a in sent if _client(a)}
        clients_seen.append(len(clients))
        rounds = sorted(starts)
        down = life.down_at([starts[r] for r in rounds], clients)
        counts: dict[int, int] = defaultdict(int)
        for a in clients:
            for r in sent[a]:
                counts[r] += 1
        for r, d in zip(rounds, down):
            per[r].append((starts[r], counts[r], len(clients) - d))
    ks = sorted(per)
    step = max(1, -(-len(ks) // MAX_POINTS))
    ks = ks[::step] if ks else ks
    return {
        "round": ks,
        "time": [float(np.mean([x[0] for x in per[k]])) for k in ks],
        "participating": [float(np.mean([x[1] for x in per[k]])) for k in ks],
        "available": [float(np.mean([x[2] for x in per[k]])) for k in ks],
        "clients": int(max(clients_seen, default=0)),
        "runs": len(runs),
    }
