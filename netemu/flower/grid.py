"""`NetemuGrid`: Flower's `Grid` whose messages cross netemu's simulated links.

The ServerApp runs in a worker thread that alternates with the event loop
(`handoff.AppThread`).  Grid calls that need no waiting (`get_node_ids`,
`push_messages`, a `pull_messages` with something to return) run directly in that
thread while the loop is parked; a call that must wait for replies hands the wait to
the server actor, which waits in virtual time and hands control back.

Semantics (docs/flower.md):

* `push_messages` stamps each Message (a seeded UUID as message id, `created_at` =
  virtual time), serializes it with Flower's protobuf serde and sends those bytes from
  the server node to the client node of `dst_node_id`.  A destination node that is down
  gets a Flower NODE_UNAVAILABLE error reply at once, as the SuperLink gives one.
* `send_and_receive(messages, timeout=T)` waits at most T virtual seconds (no limit if
  None) and returns the replies that arrived, in the order the messages were pushed.
  Replies lost on a link or still on their way are missing; those whose node is down
  when the wait ends come back as NODE_UNAVAILABLE error replies; a message whose TTL
  (Flower's, 12 h by default) runs out without a reply gets a REPLY_MESSAGE_UNAVAILABLE
  error reply, as the SuperLink's.
* `pull_messages(ids)` returns the replies that have arrived; if none of `ids` has one
  yet it first waits in virtual time for the next reply or expiry (a polling
  ServerApp therefore advances the emulation instead of spinning).
* `get_node_ids()` lists every Flower node of the topology (the SuperLink's registry).
  Flower's own background threads (the legacy node-registry poll, every 5 s of wall time)
  get the same list at once, and their calls count for nothing; after the run they get
  Flower's RunNotRunningException, which ends them.
* A reply that matches no instruction of the run (a ClientApp or mod that answered
  another message) is dropped, as the SuperLink drops it, and counted (the metric
  `warn_unmatched_replies`, in the summary's warnings).

Calls come from the ServerApp's threads, which take turns with the event loop
(`turns.Turns`): one runs at a time, so the order of pushes, message ids and replies is
the program's own.  Pushes and waits from any other thread are refused.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from flwr.app import Error, Message, RecordDict
from flwr.common.constant import ErrorCode
from flwr.proto.node_pb2 import NodeInfo  # pylint: disable=E0611
from flwr.serverapp import Grid
from flwr.supercore.run import Run, RunNotRunningException

from netemu.errors import InputError
from netemu.flower.wire import new_message_id

if TYPE_CHECKING:
    from netemu.flower.actors import FlowerServer

__all__ = ["NetemuGrid", "node_up"]

_NODE_POLLS_LIMIT = 3  # consecutive get_node_ids() calls without a send: the app waits for nodes that never come


def node_up(server: FlowerServer, node: str) -> bool:
    """Whether netemu node `node` is up (not crashed, not offline in its device trace): the
    one place the Grid reads node liveness, through the port's control-plane call (as a
    SuperLink knows which SuperNodes are connected)."""
    return bool(server.port.available([node]))


class NetemuGrid(Grid):
    """The Grid a ServerApp gets under netemu; built by `FlowerServer`."""

    def __init__(self, server: FlowerServer, run: Run) -> None:
        self._server = server
        self._run = run
        self._node_polls = 0
        self._seq = 0  # push order of instruction messages
        self._pending: dict[str, tuple[int, Message, str]] = {}  # message id -> (seq, instruction, node name)
        self._replies: dict[str, Message] = {}  # instruction message id -> its reply
        self.exchanges = 0  # push batches so far (the netemu round of messages that carry no round)
        self._seen: set[str] = set()  # every instruction id of the run (a late reply is not an unmatched one)
        self._pool_replies: list[Message] = []  # replies taken by the legacy pool's threads since their last join
        self._closed = False

    # ------------------------------------------------------------ Grid API

    def set_run(self, run: Run) -> None:
        if not isinstance(run, Run):
            raise TypeError(f"`run` must be an instance of Run, got {type(run).__name__}")
        self._run = run

    @property
    def run(self) -> Run:
        return Run(**vars(self._run))

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str, ttl: float | None = None) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        if self._closed:
            raise RunNotRunningException  # ends Flower's background polling thread
        if not self._scheduled():
            return list(self._server.nodes)  # a background thread of Flower's: it decides nothing, counts for nothing
        self._node_polls += 1
        if self._node_polls > _NODE_POLLS_LIMIT:
            raise InputError(
                f"the Flower ServerApp asked for the node ids {self._node_polls} times without sending a message: it waits "
                f"for more nodes than the {len(self._server.nodes)} Flower nodes of the topology (check min_available_nodes, "
                "min_train_nodes and min_evaluate_nodes of its strategy)"
            )
        return list(self._server.nodes)

    def get_nodes(self) -> Iterable[NodeInfo]:
        return [NodeInfo(node_id=node_id) for node_id in self.get_node_ids()]

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        self._require_scheduled("push_messages")
        self._node_polls = 0
        self.exchanges += 1
        server = self._server
        ids = []
        for msg in messages:
            if not isinstance(msg, Message):
                raise TypeError(f"push_messages: expected flwr.app.Message objects, got {type(msg).__name__}")
            meta = msg.metadata
            node = server.nodes.get(meta.dst_node_id)
            if node is None:
                raise ValueError(f"push_messages: no Flower node {meta.dst_node_id} (the nodes are {sorted(server.nodes)})")
            if meta.reply_to_message_id != "" or not meta.ttl > 0:
                raise ValueError(f"push_messages: invalid instruction message {msg!r}")
            assert server.ids is not None  # drawn when the server starts
            msg.metadata.__dict__["_message_id"] = new_message_id(server.ids)
            meta.created_at = server.now
            self._pending[meta.message_id] = (self._seq, msg, node)
            self._seen.add(meta.message_id)
            self._seq += 1
            ids.append(meta.message_id)
            server.last_category, server.last_round = meta.message_type.split(".", 1)[0], self.round_of(msg)
            if not node_up(server, node):
                self._replies[meta.message_id] = self._error_reply(msg, ErrorCode.NODE_UNAVAILABLE, f"node {node!r} is down")
                continue
            server.transmit(node, msg, self.round_of(msg))
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        self._require_scheduled("pull_messages")
        ids = self._in_push_order(message_ids)
        self._ingest()
        if ids and not any(i in self._replies for i in ids) and any(i in self._pending for i in ids):
            self._server.wait(ids, until=None, any_reply=True)
        return self._take(ids)

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        ids = list(self.push_messages(messages))
        until = None if timeout is None else self._server.now + timeout
        self._ingest()
        if any(i not in self._replies for i in ids):
            self._server.wait(ids, until=until, any_reply=False)
        self._unavailable_nodes(ids)
        replies = self._take(ids)
        for key in ids:  # answered by no reply in time: the call is over, a reply now is late (`accept`)
            self._pending.pop(key, None)
        turns = self._server.turns
        assert turns is not None
        if ids and turns.current() is turns.main:
            self._server.exchange_done(replies)
        elif ids:
            self._pool_replies.extend(replies)  # one exchange per join of the legacy pool (`pool_joined`)
        return replies

    # ------------------------------------------------------------ used by the server actor

    def round_of(self, msg: Message) -> int:
        """The netemu round of an instruction: its group id if numeric, else the
        "server-round" Flower's strategies put in the ConfigRecord, else the push batch."""
        group = msg.metadata.group_id
        if group.isdigit():
            return int(group)
        if msg.has_content():
            for record in msg.content.config_records.values():
                value = record.get("server-round")
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
        return self.exchanges

    def accept(self, reply: Message) -> str | None:
        """A reply delivered to the server node: keep it if its instruction still waits (None);
        else why it is not used (`NodePort.unused`): "late" when its instruction was answered
        already — by an error reply (TTL, node down) or by the call that returned without it —,
        "duplicate" when a reply to it waits already, "discarded" when it answers no instruction
        of the run (counted as `unmatched_replies` too)."""
        key = reply.metadata.reply_to_message_id
        if key in self._pending:
            kept = self._replies.get(key)
            if kept is None:
                self._replies[key] = reply
                return None
            return "late" if kept.has_error() else "duplicate"
        if key in self._seen:
            return "late"
        self._server.tally.count("unmatched_replies", self._server.last_round)
        return "discarded"

    def pool_joined(self) -> None:
        """The legacy server's pool of send_and_receive calls was joined: one exchange."""
        replies, self._pool_replies = self._pool_replies, []
        if replies:
            self._server.exchange_done(replies)

    def close(self) -> None:
        """The run is over: Flower's background threads get RunNotRunningException."""
        self._closed = True

    def outstanding(self, ids: list[str]) -> list[str]:
        return [i for i in ids if i in self._pending and i not in self._replies]

    def next_expiry(self, ids: list[str]) -> float | None:
        times = [self._expiry(self._pending[i][1]) for i in self.outstanding(ids)]
        return min(times) if times else None

    def expire(self, now: float) -> None:
        """Error replies for instructions whose TTL ran out without a reply."""
        for key, (_, msg, node) in self._pending.items():
            if key not in self._replies and self._expiry(msg) <= now:
                self._replies[key] = self._error_reply(
                    msg, ErrorCode.REPLY_MESSAGE_UNAVAILABLE, f"no reply from node {node!r} within the message's TTL of {msg.metadata.ttl:g} s"
                )

    # ------------------------------------------------------------ internals

    @staticmethod
    def _expiry(msg: Message) -> float:
        return msg.metadata.created_at + msg.metadata.ttl

    def _scheduled(self) -> bool:
        turns = self._server.turns
        return turns is not None and turns.current() is not None

    def _require_scheduled(self, call: str) -> None:
        if not self._scheduled():
            raise InputError(f"Grid.{call} called from thread {threading.current_thread().name!r}, which netemu does not run in "
                             "turns with the emulation: call the Grid from the ServerApp's own thread (or Flower's legacy server pool)")

    def _ingest(self) -> None:
        self._server.ingest()
        self.expire(self._server.now)

    def _in_push_order(self, message_ids: Iterable[str]) -> list[str]:
        known = [i for i in message_ids if i in self._pending]
        return sorted(known, key=lambda i: self._pending[i][0])

    def _unavailable_nodes(self, ids: list[str]) -> None:
        for key in self.outstanding(ids):
            msg, node = self._pending[key][1:]
            if not node_up(self._server, node):
                self._replies[key] = self._error_reply(msg, ErrorCode.NODE_UNAVAILABLE, f"node {node!r} is down")

    def _take(self, ids: list[str]) -> list[Message]:
        out = []
        for key in ids:
            reply = self._replies.pop(key, None)
            if reply is not None:
                del self._pending[key]
                out.append(reply)
        return out

    def _error_reply(self, msg: Message, code: int, reason: str) -> Message:
        now = self._server.now
        reply = Message(Error(code=code, reason=f"netemu at virtual time {now:g}: {reason}"), reply_to=msg)
        reply.metadata.created_at = now
        reply.metadata.ttl = max(self._expiry(msg) - now, 0.0)
        assert self._server.ids is not None
        reply.metadata.__dict__["_message_id"] = new_message_id(self._server.ids)
        return reply
