"""What a Flower run tells its reader beyond the metrics, as summary.json warnings (also on
stderr): the ServerApp waiting on Flower's default timeouts, a wait that lasted longer than
`wait_warning` virtual seconds, and ClientApps that slept in wall-clock time; and, for a run
stopped at its horizon, what the ServerApp was waiting for.  None of it reaches the message
log, so a run's log does not depend on whether anything was noticed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from netemu.flower.tally import Tally

__all__ = ["MESSAGE_TTL", "WAIT_WARNING", "STRATEGY_TIMEOUT", "Waits", "horizon_of", "sleep_warning", "wall_sleeps"]

WAIT_WARNING = 600.0       # virtual seconds: a longer wait of the ServerApp is worth a warning
STRATEGY_TIMEOUT = 3600.0  # Flower's `Strategy.start(timeout=3600)` default (flwr.serverapp.strategy)
MESSAGE_TTL = 43200.0      # Flower's default message TTL, 12 h (flwr.app.constants.DEFAULT_TTL)
FIX = "set a round timeout, e.g. strategy.start(..., timeout=30.0) or ServerConfig(round_timeout=30.0) (docs/flower.md)"


def horizon_of(length: float) -> str | None:
    """Which Flower default a wait of `length` virtual seconds is, if any."""
    for default, what in ((STRATEGY_TIMEOUT, "Flower's default round timeout of 3600 s"),
                          (MESSAGE_TTL, "Flower's default message TTL of 12 h")):
        if abs(length - default) <= 1.0:  # a TTL counts from the message's creation, a moment before the wait
            return what
    return None


@dataclass
class Waits:
    """The ServerApp's waits: how many ran on a Flower default, which lasted longer than
    `threshold`, and the one in progress (for a stop at the horizon)."""

    threshold: float
    defaults: dict[str, list[int]] = field(default_factory=dict)  # default -> rounds that waited on it
    long: list[tuple[float, int]] = field(default_factory=list)   # (seconds waited, round)
    current: str | None = None

    def start(self, now: float, end: float | None, count: int, category: str, rnd: int) -> float:
        """A wait begins at `now` for `count` replies, until `end` (None: no end known)."""
        default = horizon_of(end - now) if end is not None else None
        if default is not None:
            self.defaults.setdefault(default, []).append(rnd)
        why = f" ({default})" if default else ""
        until = f"until t = {end:g} s{why}" if end is not None else "with no deadline"
        self.current = f"its ServerApp, for replies to {count} {category!r} message(s) of round {rnd}, {until}"
        return now

    def end(self, started: float, now: float, rnd: int) -> None:
        self.current = None
        if now - started > self.threshold:
            self.long.append((now - started, rnd))

    def warnings(self) -> list[str]:
        out = []
        for default, rounds in self.defaults.items():
            shown = ", ".join(map(str, sorted(set(rounds))[:8])) + (" …" if len(set(rounds)) > 8 else "")
            out.append(f"flower: the ServerApp waited on {default} in {len(rounds)} exchange(s) (rounds {shown}): in virtual "
                       f"time every round that loses a reply lasts that long; {FIX}")
        if self.long:
            worst, rnd = max(self.long)
            out.append(f"flower: {len(self.long)} wait(s) of the ServerApp lasted more than {self.threshold:g} virtual seconds "
                       f"(the longest {worst:g} s, in round {rnd}; flower.wait_warning sets this threshold)")
        return out


def sleep_warning(tally: Tally) -> list[str]:
    if not tally.sleeps:
        return []
    calls = int(sum(c for c, _ in tally.sleeps.values()))
    seconds = sum(s for _, s in tally.sleeps.values())
    nodes = list(tally.sleeps)
    shown = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
    return [f"flower: ClientApps called time.sleep {calls} time(s), {seconds:g} s of wall-clock time in all ({shown}): wall time "
            "passed, virtual time did not; model a node's compute time with the work model and its speed instead (docs/flower.md)"]


@contextmanager
def wall_sleeps(tally: Tally, node: str) -> Iterator[None]:
    """Meanwhile, every `time.sleep` of this thread (a ClientApp's) is counted for `node`, and still sleeps."""
    real, me = time.sleep, threading.get_ident()

    def sleep(seconds: Any) -> None:
        if threading.get_ident() == me:
            tally.slept(node, seconds)
        real(seconds)

    time.sleep = sleep
    try:
        yield
    finally:
        time.sleep = real
