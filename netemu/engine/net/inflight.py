"""What a message is in SimPy's queue between its send and its arrival or loss.

`Due` is the scheduled arrival (of a batch) or loss, in the place of a SimPy `Timeout` at a
tenth of its size; `Shared` is the payload that the messages of one broadcast share until
the last of them is delivered.  Used by `netemu.engine.net.network.Network`'s message path.
"""

from __future__ import annotations

from typing import Any

from netemu.wire.codec import decode, fresh

__all__ = ["Due", "Shared"]

_MISSING = object()


class Due:
    """A scheduled arrival or loss, in the event queue where a `Timeout` would be (same time,
    priority and scheduling order, so the same order), at ~60 bytes rather than ~600: a
    broadcast to a million clients puts a million of them there at once.  Processing it
    needs only `callbacks` and `ok` (`netemu.engine.clock.Scheduled`); it never fails."""

    __slots__ = ("_value", "callbacks")
    ok = True

    def __init__(self, callbacks: tuple, value: Any) -> None:
        self.callbacks: tuple | None = callbacks  # a tuple shared by the events of a send: SimPy only reads it
        self._value = value

    @property
    def value(self) -> Any:
        return self._value


class Shared:
    """The payload shared by the messages of a broadcast still to be delivered: decoded at
    the first delivery; every receiver but the last gets a `fresh` copy (equal to a decode
    of the same bytes, at a fraction of its cost), the last one the decoded value itself."""

    __slots__ = ("decoded", "left")

    def __init__(self) -> None:
        self.left = 0  # messages still to arrive
        self.decoded: Any = _MISSING

    def take(self) -> Any:
        """One message of the broadcast arrived: the decoded value if it was the last one."""
        self.left -= 1
        if self.left:
            return _MISSING
        decoded, self.decoded = self.decoded, _MISSING
        return decoded

    def payload(self, data: bytes) -> Any:
        if self.decoded is _MISSING:
            self.decoded = decode(data)
        decoded = self.decoded
        return fresh(decoded) if self.take() is _MISSING else decoded
