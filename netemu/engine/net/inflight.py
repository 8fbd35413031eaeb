"""What a message is in SimPy's queue between its send and its arrival or loss.

`Due` is the scheduled arrival (of a batch) or loss, in the place of a SimPy `Timeout` at a
tenth of its size; `Arrivals` are the further arrival events of one send call, kept as one
time-ordered column in a single entry of the event queue; `Shared` is the payload that the messages of one
broadcast share until the last of them is delivered, `received` a message's payload for its one receiver.  Used by
`netemu.engine.net.network.Network`'s message path.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from netemu.wire.codec import Unencoded, decode, fresh

if TYPE_CHECKING:
    from netemu.engine.clock import VirtualEnvironment

__all__ = ["Arrivals", "Due", "Shared", "received"]

_time = itemgetter(0)

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


class Arrivals:
    """The arrival events of one send call (a broadcast's, a `send_many`'s) but its first, queued as
    one entry of the event queue.

    Each event keeps the time and scheduling order it was made with (`VirtualEnvironment.reserve`),
    so it is processed exactly where a `Due` of its own would be — merged with every other event by
    time, priority, then order — but the queue holds one entry per call, keyed by the next of its
    events, instead of one per message: a broadcast to 10,000 clients no longer grows the heap that
    every event of the run is pushed into and popped from (issue 40, item 1).  An event is processed
    as its `Due` would be: `callback(self)`, with its value in `_value`; it never fails."""

    __slots__ = ("_callback", "_env", "_i", "_items", "_value", "callbacks")
    ok = True

    def __init__(self, env: VirtualEnvironment, callback: Callable[[Any], object], items: list[tuple[float, int, Any]]) -> None:
        items.sort(key=_time)  # stable: by time, then by the order the events were made in
        self._env, self._callback, self._items, self._i, self._value = env, callback, items, 0, None
        self.callbacks: tuple | None = (self._step,)
        t, order, _ = items[0]
        env.schedule_reserved(self, t, order)

    @property
    def value(self) -> Any:
        return self._value

    def _step(self, _event: Any) -> None:
        items, i = self._items, self._i
        self._value = items[i][2]
        items[i] = None  # type: ignore[call-overload]  # processed: its batch is not kept here
        i += 1
        if i < len(items):  # the next event takes this entry's place in the queue
            self._i = i
            self.callbacks = (self._step,)
            t, order, _ = items[i]
            self._env.schedule_reserved(self, t, order)
        self._callback(self)


def received(data: bytes | Unencoded) -> Any:
    """The payload of a message for its one receiver: decoded from its bytes, or the value an
    `Unencoded` payload holds (already what a decode gives, a copy of the sender's)."""
    return data.take() if type(data) is Unencoded else decode(data)


class Shared:
    """The payload shared by the messages of a broadcast still to be delivered: decoded at
    the first delivery (an `Unencoded` one needs no decoding); every receiver but the last
    gets a `fresh` copy (equal to a decode of the same bytes, at a fraction of its cost),
    the last one the decoded value itself."""

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

    def payload(self, data: bytes | Unencoded) -> Any:
        if self.decoded is _MISSING:
            self.decoded = data.value if type(data) is Unencoded else decode(data)
        decoded = self.decoded
        if self.take() is _MISSING:
            return fresh(decoded)
        if type(data) is Unencoded:
            data.take()  # handed out: no bytes can be made from it any more
        return decoded
