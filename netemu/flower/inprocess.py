"""The reference: the same ServerApp and ClientApp with no network at all.

`InProcessGrid.send_and_receive` calls the ClientApp of each destination node directly,
in push order, and returns every reply (Flower's own in-process simulation needs Ray,
which netemu does not install).  Messages still go through Flower's serialization both
ways, so apps never share objects, exactly as under netemu.  Node ids, node configs,
contexts, run id and the seeding of Flower's global random state are netemu's, so in an
ideal network (no delay, no loss, everyone participates) netemu must give the same model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from flwr.app import Context, Message, RecordDict
from flwr.proto.node_pb2 import NodeInfo  # pylint: disable=E0611
from flwr.serverapp import Grid
from flwr.supercore.run import Run

from netemu.flower.actors import flower_nodes, flower_process_state, flower_run_id
from netemu.flower.apps import load_client_app, load_server_app
from netemu.flower.wire import from_wire, new_message_id, to_wire
from netemu.engine.rng import Streams

__all__ = ["InProcessGrid", "run_inprocess"]


class InProcessGrid(Grid):
    def __init__(self, client_app: Any, contexts: Mapping[int, Context], run: Run, streams: Streams) -> None:
        self._client_app, self._contexts, self._run = client_app, dict(contexts), run
        self._ids = streams.generator("flower/message-ids/in-process")
        self._replies: dict[str, Message] = {}

    def set_run(self, run: Run) -> None:
        self._run = run

    @property
    def run(self) -> Run:
        return Run(**vars(self._run))

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str, ttl: float | None = None) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self._contexts)

    def get_nodes(self) -> Iterable[NodeInfo]:
        return [NodeInfo(node_id=i) for i in self._contexts]

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        ids = []
        for msg in messages:
            msg.metadata.__dict__["_message_id"] = new_message_id(self._ids)
            msg.metadata.created_at = 0.0
            ins = from_wire(to_wire(msg))
            reply = self._client_app(ins, self._contexts[ins.metadata.dst_node_id])
            self._replies[ins.metadata.message_id] = from_wire(to_wire(reply))
            ids.append(ins.metadata.message_id)
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        wanted = set(message_ids)
        keys = [k for k in self._replies if k in wanted]  # push order
        return [self._replies.pop(k) for k in keys]

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        ids = list(self.push_messages(messages))
        return [self._replies.pop(k) for k in ids]


def run_inprocess(server_app: Any, client_app: Any, clients: list[str], *, run_config: Mapping[str, Any] | None = None,
                  seed: int = 0, app_dir: str | None = None) -> Context:
    """Run the apps with `InProcessGrid` over Flower nodes for `clients` (netemu node names,
    topology order) as a netemu run with `seed` would; returns the ServerApp's Context."""
    server_app = load_server_app(server_app, setting="server_app", app_dir=app_dir)
    client_app = load_client_app(client_app, setting="client_app", app_dir=app_dir)
    run_config = dict(run_config or {})
    streams = Streams(seed)
    run_id = flower_run_id(seed)
    contexts = {i: Context(run_id=run_id, node_id=i, node_config=dict(cfg), state=RecordDict(), run_config=dict(run_config))
                for i, (_, cfg) in flower_nodes(clients).items()}
    run = Run.create_empty(run_id)
    run.override_config = dict(run_config)
    context = Context(run_id=run_id, node_id=0, node_config={}, state=RecordDict(), run_config=dict(run_config))
    with flower_process_state(streams.generator, run_id):
        server_app(InProcessGrid(client_app, contexts, run, streams), context)
    return context
