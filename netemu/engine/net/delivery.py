"""The receiving end of a network: messages delivered at their instant, in send order, or dropped,
each with its record and count.  A mixin of `netemu.engine.net.network.Network`, which schedules
the events (`Due`) these methods handle."""

from __future__ import annotations

from collections import Counter
from simpy.core import URGENT

from netemu.engine.clock import VirtualEnvironment, running_loop
from netemu.engine.net.inflight import Due as _Due
from netemu.engine.net.inflight import Shared as _Shared
from netemu.engine.net.inflight import received
from netemu.engine.net.message import Message
from netemu.engine.net.nodes import Node
from netemu.log import MessageLog
from netemu.wire.codec import Unencoded

__all__ = ["Delivery"]


class Delivery:
    """Arrivals, duplicates and drops of a network's messages (see the module docstring)."""

    env: VirtualEnvironment
    nodes: dict[str, Node]
    emit: MessageLog
    _pending: dict[int, tuple]  # msg id -> (src, dst, kind, round, bytes, link class, sent at)
    _extras: dict[int, dict]
    _tallies: dict[str, list[int]]
    _drops: Counter

    def arrive_at(self, t: float, msg_id: int, payload: bytes | Unencoded, box: _Shared | None, extra: dict) -> None:
        """Deliver general message `msg_id` at `t`, its deliver record with `extra` fields."""
        self._extras[msg_id] = extra
        self.env.schedule_at(_Due((self._arrive,), [(msg_id, payload, box)]), t)

    def copy_at(self, t: float, msg_id: int, payload: bytes | Unencoded) -> None:
        """A duplicate of message `msg_id` arrives at `t`, right after the message itself (netem's duplicate).
        Called before the message is delivered: an `Unencoded` payload's copy is made now, of the value as sent."""
        if type(payload) is Unencoded:
            payload = payload.copy()
        self.env.schedule_at(_Due((self._arrive_copy,), (msg_id, payload, self._pending[msg_id])), t)

    def _arrive_copy(self, event: _Due) -> bool | None:
        """Deliver a duplicate: a second deliver record (``duplicate: true``) and a second Message of the
        same id; counted as `duplicates` of its link class, not as a message."""
        msg_id, data, (src, dst, kind, round, nbytes, cls, sent_at) = event._value  # our own event
        node, now = self.nodes[dst], self.env.now
        self._drops[cls, "duplicates"] += 1
        if not node.up or node.receiver is None:
            self.emit(t=now, event="drop", id=msg_id, src=src, dst=dst, kind=kind, round=round, bytes=nbytes, link=cls,
                      reason="crash", duplicate=True)
            return False
        self.emit(t=now, event="deliver", id=msg_id, src=src, dst=dst, kind=kind, round=round, bytes=nbytes, link=cls,
                  delay=now - sent_at, duplicate=True)
        return node.receiver(Message(msg_id, src, dst, kind, round, received(data), sent_at, now, nbytes))

    def drop_at(self, t: float, msg_id: int, reason: str, box: _Shared | None, extra: dict) -> None:
        """Drop general message `msg_id` at `t` with `reason`, its record with `extra` fields (the hop)."""
        self.env.schedule_at(_Due((self._lose_general,), (msg_id, reason, box, extra)), t)

    def _lose_general(self, event: _Due) -> None:
        msg_id, reason, box, extra = event._value  # our own event
        if box is not None:
            box.take()
        self._drop(msg_id, reason, extra)

    def _lose(self, event: _Due) -> None:
        self._drop(*event._value)  # our own event

    def _drop(self, msg_id: int, reason: str, extra: dict | None = None) -> None:
        src, dst, kind, round, nbytes, cls, sent_at = self._pending.pop(msg_id)
        self._drops[cls, "dropped"] += 1
        self._drops[cls, f"dropped_{reason}"] += 1
        if self._extras:
            extra = {**self._extras.pop(msg_id, {}), **(extra or {})}
        if extra:
            self.emit.message_with(self.env.now, "drop", msg_id, src, dst, kind, round, nbytes, cls, {"reason": reason, **extra})
        else:
            self.emit.message(self.env.now, "drop", msg_id, src, dst, kind, round, nbytes, cls, "reason", reason)

    def _arrive(self, event: _Due) -> None:
        """Deliver the messages of one batch, due at this instant, in send order.

        The messages of a `send_many` call that arrive at the same instant share one
        SimPy event.  One by one they would have been consecutive events, and the
        clock lets asyncio run whatever a delivery woke before it steps the next
        event; so after a delivery that woke a waiter (or may have: a receiver that
        does not return False), the rest of the batch is put back at this instant,
        ahead of every later event, and delivered after the woken code has run —
        the same interleaving, hence the same log, as one event per message.

        Consecutive messages of the batch for distinct nodes that share a batch receiver (the
        members of a cohort that handles messages as arrays, `connect(..., batch=)`) form a
        group, delivered to it in one call when nothing else waits to run at this instant
        (`VirtualTimeLoop.runs_now`: what the receiver's step would otherwise run behind);
        otherwise the first goes to its receiver alone, as one message at a time would, and
        the rest after what is due (docs/formats.md, "Order of records").
        """
        batch = event._value  # our own event
        nodes, pending, message, now = self.nodes, self._pending, self._message, self.env.now  # (one instant: a SimPy step's)
        i, n = 0, len(batch)
        while i < n:
            msg_id, payload, box = batch[i]
            node = nodes[pending[msg_id][1]]
            i += 1
            msg = message(node, msg_id, payload, box, now)
            if msg is None:  # dropped (the node is down): nothing woken
                continue
            many = node.batch
            if many is None or not running_loop().runs_now():  # one at a time (see the docstring)
                woke = node.receiver(msg)  # type: ignore[misc]  # `_message` checked it
            else:
                msgs, seen = [msg], {node.name}
                while i < n:
                    msg_id, payload, box = batch[i]
                    node = nodes[pending[msg_id][1]]
                    if node.batch is not many or node.name in seen:
                        break
                    seen.add(node.name)
                    i += 1
                    msg = message(node, msg_id, payload, box, now)
                    if msg is not None:
                        msgs.append(msg)
                woke = many(msgs)
            if woke is not False and i < n:
                self.env.schedule(_Due((self._arrive,), batch[i:]), URGENT)
                return

    def _message(self, node: Node, msg_id: int, data: bytes | Unencoded, box: _Shared | None, now: float) -> Message | None:
        """The delivered Message `msg_id` for `node` at `now`, its deliver record written and counted; or
        None: the node is down (or has no receiver), and the message is dropped (``crash``).
        `data` is its payload, encoded or `Unencoded`: the envelope's header was sized and counted when
        it was sent, and the receiver needs only the payload.  A payload that a broadcast's messages
        share (`box`) is decoded once."""
        if not node.up or node.receiver is None:
            if box is not None:
                box.take()
            self._drop(msg_id, "crash")
            return None
        src, dst, kind, round, nbytes, cls, sent_at = self._pending.pop(msg_id)
        self._tallies[cls][3] += 1
        extra = self._extras.pop(msg_id, None) if self._extras else None
        if extra is None:
            self.emit.message(now, "deliver", msg_id, src, dst, kind, round, nbytes, cls, "delay", now - sent_at)
        else:
            self.emit.message_with(now, "deliver", msg_id, src, dst, kind, round, nbytes, cls, {"delay": now - sent_at, **extra})
        payload = received(data) if box is None else box.payload(data)
        return Message(msg_id, src, dst, kind, round, payload, sent_at, now, nbytes)
