"""What a Flower run counts for its summary, beside the metrics its strategy reports.

Replies, and how many reported their examples (the work model's input: if none did, the
ClientApps got no compute time); per round, ClientApps that raised (their error replies)
and replies that matched no instruction (dropped by the Grid).  The server reports them at
the end of the run as metrics `warn_<what>`, one row per round, which the summary's
warnings total.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

__all__ = ["Tally"]


@dataclass
class Tally:
    replies: int = 0
    with_examples: int = 0
    events: defaultdict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    # wall-clock time.sleep calls of the ClientApps, per node: [calls, seconds] (summary warnings only,
    # never metrics: the message log stays the same however long an app sleeps)
    sleeps: dict[str, list[float]] = field(default_factory=dict)

    def slept(self, node: str, seconds: float) -> None:
        s = self.sleeps.setdefault(node, [0, 0.0])
        s[0] += 1
        s[1] += float(seconds)

    def count(self, what: str, round: int) -> None:
        self.events[what][round] += 1

    def warnings(self) -> list[tuple[str, int, float]]:
        """(metric, round, value) of every counted event, and `warn_no_work_reported` (round
        -1: placed by the caller) when replies were sent and none reported its examples."""
        out = [(f"warn_{what}", rnd, float(n)) for what, per_round in sorted(self.events.items()) for rnd, n in sorted(per_round.items())]
        if self.replies and not self.with_examples:
            out.append(("warn_no_work_reported", -1, 1.0))
        return out
