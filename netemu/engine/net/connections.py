"""Persistent connections of the reliable transport: one per ordered pair of actors.

A connection (``connection = "persistent"``, netemu.engine.net.model) is what gRPC/HTTP2 or any
long-lived TCP socket gives a pair of actors:

- it pays the handshake once, with its first message;
- it keeps its congestion window from one message to the next, restarted after an idle
  period as RFC 2861 sec. 3 says: the window is halved for every retransmission timeout
  that elapsed while the connection sent nothing, down to the initial window (RFC 5681
  sec. 4.1's restart window);
- messages sent back to back form one burst of bytes whose slow start is the burst's, not
  each message's: a message at byte offset B of its burst, S bytes long, waits what slow
  start from the burst's first window costs bytes B .. B + S (`lost(B + S) - lost(B)`,
  `Connection.slow_start`), so a stream of small messages is paced by the growing window;
- it sends its messages one after the other, as one byte stream (`Connection.busy`,
  `waiting`), and delivers them in the order they were sent (`deliver`): a message whose
  last byte arrived before an earlier one's waits for it.

``connection = "per-message"`` opens a connection per message: each pays the handshake and
slow start from the initial window, and messages to the same actor travel side by side.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["Connection", "restart_window"]


def restart_window(cwnd: float, idle: float, rto: float, initial: float) -> float:
    """The window of a connection idle for `idle` seconds: halved once per `rto` elapsed
    (RFC 2861 sec. 3), never below `initial` (RFC 5681 sec. 4.1's restart window)."""
    if idle <= rto or cwnd <= initial:
        return cwnd
    if not math.isfinite(idle):
        return initial
    halvings = int(idle // rto)
    return max(initial, cwnd / 2.0 ** min(halvings, 1024))


class Connection:
    """The state of one ordered pair's connection (see the module docstring)."""

    __slots__ = ("burst", "busy", "cwnd", "first", "floor", "held", "idle_since", "next_seq", "open", "resolved", "waiting")

    def __init__(self, initial: float) -> None:
        self.open = False  # the handshake is done (or under way, with the first message)
        self.cwnd = initial  # bytes: the congestion window the next message starts from
        self.idle_since = -math.inf  # when the last message's last byte left (sharing "none": will leave)
        self.first = initial  # the window the current burst started from ...
        self.burst = 0.0  # ... and the bytes it has sent so far
        self.busy = False  # a message's bytes are on their way (max-min: its flow runs)
        self.waiting: deque | None = None  # messages sent while busy, in order (made when first needed)
        self.next_seq = 0  # the sequence number of the next message sent
        self.resolved = 0  # messages 0 .. resolved - 1 are delivered or dropped
        self.held: dict[int, tuple[float | None, Any]] | None = None  # seq -> (arrival, or None: dropped; what to do)
        self.floor = 0.0  # the latest delivery scheduled: later messages are not delivered before it

    def wait(self, message: Any) -> None:
        """`message` follows the ones on their way (`busy`)."""
        if self.waiting is None:
            self.waiting = deque()
        self.waiting.append(message)

    def sequence(self) -> int:
        seq = self.next_seq
        self.next_seq = seq + 1
        return seq

    def slow_start(self, now: float, size: float, rtt: float, rate: float, rto: float, initial: float,
                   ramp: Callable[[float, float, float, float], tuple[float, float]], cap: float) -> float:
        """Seconds a message of `size` bytes starting at `now` loses to slow start (see the module
        docstring); `ramp(size, rtt, rate, first)` is `NetModel.slow_start`, `cap` the largest window."""
        if not self.busy and now > self.idle_since:  # a new burst, from the window kept (RFC 2861's restart after idle)
            self.first = restart_window(self.cwnd, now - self.idle_since, rto, initial)
            self.burst = 0.0
        before = ramp(self.burst, rtt, rate, self.first)[0] if self.burst else 0.0
        self.burst += size
        lost, after = ramp(self.burst, rtt, rate, self.first)
        self.cwnd = min(after, cap)
        self.idle_since = max(self.idle_since, now)  # busy now: a message sent at this instant joins the burst
        return max(0.0, lost - before)

    def deliver(self, seq: int, at: float | None, now: float, act: Callable[[float | None], None]) -> None:
        """Message `seq` is resolved: it arrives at `at`, or (None) it was dropped; `act(t)` delivers
        it at `t` (or drops it: `act(None)`) once every earlier message is resolved, never before an
        earlier one's delivery."""
        if seq != self.resolved:  # an earlier message is not resolved yet: this one waits for it
            if self.held is None:
                self.held = {}
            self.held[seq] = (at, act)
            return
        self._resolve(at, act, now)
        held = self.held
        while held and self.resolved in held:
            self._resolve(*held.pop(self.resolved), now)
        if held is not None and not held:
            self.held = None

    def _resolve(self, at: float | None, act: Callable[[float | None], None], now: float) -> None:
        self.resolved += 1
        if at is None:
            act(None)
            return
        t = max(at, self.floor, now)
        self.floor = t
        act(t)
