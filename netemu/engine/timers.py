"""The virtual-time loop's timers and their order: by time, then by scheduling sequence.

asyncio orders timers due at the same instant by the history of its heap (`TimerHandle`
compares `_when` only), so which of two simultaneous timers runs first depends on every timer
pushed and popped before them.  `VirtualTimeLoop` (netemu.engine.clock) makes every timer a
`Timer` carrying a sequence number drawn from the loop's one counter when it is scheduled:
timers due at the same virtual time run in the order they were scheduled (issue 40).
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["Timer"]


class Timer(asyncio.TimerHandle):
    """An asyncio timer ordered by (when, seq): seq is its place in the loop's scheduling order."""

    __slots__ = ("_seq",)
    _seq: int

    def __lt__(self, other: Any) -> bool:
        return self._when < other._when or (self._when == other._when and self._seq < other._seq)  # type: ignore[attr-defined]

    def __gt__(self, other: Any) -> bool:
        return self._when > other._when or (self._when == other._when and self._seq > other._seq)  # type: ignore[attr-defined]
