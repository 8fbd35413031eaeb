"""A Flower ServerApp and its ClientApps as netemu actors.

`FlowerServer` runs on the server node: it runs the ServerApp (unchanged) in a worker
thread that alternates with the event loop and gives it a `NetemuGrid`.  Each
`FlowerNode` is one Flower node (a SuperNode with its ClientApp) on one netemu client
node: when an instruction is delivered and the node participates in that round (its
keyed draw), it calls `client_app(message, context)`, spends the virtual compute time
of the work model on its node (speed, slowdown, straggler group, device trace) and
sends the reply back over its uplink.  Bytes on the links are Flower's serialization.

`add_flower(world, server_app, client_app, ...)` puts both on a World.
"""

from __future__ import annotations

import importlib.util
import logging
import random
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
from flwr.app import Context, Error, Message, MetricRecord, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.serverapp.strategy import strategy_utils as _strategy_utils  # samples nodes with `random.sample`
from flwr.supercore.logger import FLOWER_LOGGER
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity

from netemu.engine.actors import Actor
from netemu.engine.net.message import Message as NetemuMessage
from netemu.errors import InputError
from netemu.flower.apps import load_client_app, load_server_app
from netemu.flower.failures import ON_CLIENT_ERROR, FlowerAppFailed
from netemu.flower.grid import NetemuGrid
from netemu.flower.legacy import legacy_hooks
from netemu.flower.appconfig import fused_run_config
from netemu.flower.notes import WAIT_WARNING, Waits, sleep_warning, wall_sleeps
from netemu.flower.tally import Tally
from netemu.flower.turns import Turns
from netemu.flower.waits import Replies
from netemu.flower.wire import from_wire, new_message_id, to_wire
from netemu.flower.work import WorkModel
from netemu.engine.rng import Streams
from netemu.engine.world import World

__all__ = ["FIRST_NODE_ID", "FlowerAppFailed", "FlowerNode", "FlowerServer", "add_flower", "flower_nodes", "flower_run_id"]

FIRST_NODE_ID = 1000  # the i-th client node (topology order) is Flower node 1000 + i
REPLY = "-reply"  # netemu message kind of a reply: the Flower message type + "-reply"
EXCHANGES = ("train", "evaluate", "query")  # message categories whose exchanges are counted as metrics


def flower_run_id(seed: int) -> int:
    """The Flower run id of a netemu run (derived from its seed, never from a clock)."""
    return int(Streams(seed).generator("flower/run-id").integers(1, 2**63))


def flower_nodes(clients: list[str]) -> dict[int, tuple[str, dict[str, Any]]]:
    """Flower node id -> (netemu node, node_config) for `clients` in topology order.
    node_config follows Flower's simulation: "partition-id" and "num-partitions"."""
    n = len(clients)
    return {FIRST_NODE_ID + i: (name, {"partition-id": i, "num-partitions": n}) for i, name in enumerate(clients)}


def _transmit(actor: Actor, dst: str, msg: Message, round: int, kind: str) -> int:
    """Send Flower's bytes of `msg` from `actor` to `dst`; a `flower` log record ties the
    netemu message id to the Flower message and its serialized size."""
    data = to_wire(msg)
    net_id = actor.port.send(dst, kind, data, round=round)
    meta = msg.metadata
    actor.port.note(
        "flower", id=net_id, src=actor.name, dst=dst, message_type=meta.message_type,
        message_id=meta.message_id, reply_to=meta.reply_to_message_id, src_node_id=meta.src_node_id,
        dst_node_id=meta.dst_node_id, flower_bytes=len(data), error=msg.has_error(),
    )
    return net_id


_ONE_FLOWER_RUN = threading.RLock()  # Flower's process state is global: one Flower run at a time per process


@contextmanager
def _torch_seeded(stream: Callable[[str], np.random.Generator]) -> Iterator[None]:
    """When PyTorch is installed, its global generators (CPU, and CUDA if present) are
    seeded from the named stream "flower/torch" for the run and restored after it.  PyTorch
    is not a dependency; an app that wants bit-identical kernels also calls
    `torch.use_deterministic_algorithms(True)` (docs/flower.md)."""
    if importlib.util.find_spec("torch") is None:
        yield
        return
    import torch

    cpu = torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    torch.manual_seed(int(stream("flower/torch").integers(2**63)))
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


@contextmanager
def flower_process_state(stream: Callable[[str], np.random.Generator], run_id: int) -> Iterator[None]:
    """Flower's process-wide state, set for one emulation and restored after it.

    Flower's strategies sample nodes with the `random` module; for the run they get a
    private `random.Random` seeded from a named netemu stream (other threads of the
    process, e.g. a Dask worker's, also draw from the global one, which would make the
    sample depend on timing).  The global `random`, NumPy and (if installed) PyTorch
    generators, which apps and the DP strategies may use, are seeded from named streams
    too.  Only one thread of the ServerApp, or the event loop, runs at a time, so the
    sequence of draws is deterministic.  TaskIdentity is what Flower stamps into the
    messages a ServerApp creates.  Flower runs in other threads of the process wait for
    this one to end."""
    with _ONE_FLOWER_RUN:
        saved = (random.getstate(), np.random.get_state(), TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id)
        saved_sampler: Any = getattr(_strategy_utils, "random", None)
        random.seed(int(stream("flower/random").integers(2**63)))
        np.random.seed(int(stream("flower/numpy-random").integers(2**32)))
        sampler = random.Random(int(stream("flower/sampling").integers(2**63)))
        _strategy_utils.random = sampler  # type: ignore[assignment]  # in place of the module `random` it imported, for this run
        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, run_id, SUPERLINK_NODE_ID
        try:
            with _torch_seeded(stream):
                yield
        finally:
            _strategy_utils.random = saved_sampler
            random.setstate(saved[0])
            np.random.set_state(saved[1])
            TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = saved[2:]


class _StrategyMetrics(logging.Handler):
    """Records the MetricRecords Flower's strategies report (aggregated client metrics
    after each exchange, server-side evaluations) as netemu metrics, with virtual time.

    A strategy reports them only through Flower's logger, with the MetricRecord as the
    log argument; records from other threads are ignored."""

    def __init__(self, server: FlowerServer) -> None:
        super().__init__(logging.DEBUG)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        server = self.server
        if server.turns is None or server.turns.current() is None:  # another thread of the process
            return
        args = record.args
        metrics: MetricRecord | None
        if isinstance(args, MetricRecord):  # logging unwraps a single mapping argument
            metrics = args
        else:
            metrics = next((a for a in args or () if isinstance(a, MetricRecord)), None)
        if metrics is None:
            return
        text = str(record.msg)
        if "Initial global evaluation" in text:
            prefix, rnd = "server", 0
        elif "Aggregated" in text:
            prefix, rnd = server.last_category, server.last_round
        else:
            prefix, rnd = "server", server.last_round
        values = [(f"{prefix}_{key}", v) for key, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        server.report(values, rnd)


@contextmanager
def _capture_metrics(server: FlowerServer) -> Iterator[None]:
    """The strategies' MetricRecords reach `_StrategyMetrics` even if Flower's logger is
    set above INFO; its other handlers are raised to that level meanwhile, so what the
    console shows does not change.  With `server.console` set (e.g. WARNING under
    `netemu run`), Flower's console handlers show only records from that level up."""
    handler = _StrategyMetrics(server)
    level, effective = FLOWER_LOGGER.level, FLOWER_LOGGER.getEffectiveLevel()
    others = [(h, h.level) for h in FLOWER_LOGGER.handlers]
    if server.console is not None:
        for h, h_level in others:
            h.setLevel(max(h_level, server.console))
    if effective > logging.INFO:
        for h, h_level in others:
            h.setLevel(max(h_level, effective))
        FLOWER_LOGGER.setLevel(logging.INFO)
    FLOWER_LOGGER.addHandler(handler)
    try:
        yield
    finally:
        FLOWER_LOGGER.removeHandler(handler)
        FLOWER_LOGGER.setLevel(level)
        for h, h_level in others:
            h.setLevel(h_level)


class FlowerServer(Actor):
    """Runs a Flower ServerApp on the server node, through a `NetemuGrid`."""

    def __init__(self, name: str, server_app: Any, nodes: Mapping[int, str], run_config: Mapping[str, Any], run_id: int,
                 console: int | None = None, wait_warning: float = WAIT_WARNING) -> None:
        super().__init__(name)
        self.waits = Waits(wait_warning)  # the ServerApp's waits: on Flower's defaults, longer than wait_warning, current
        self.round0 = False  # the app numbers its rounds from 0 (it exchanged messages in round 0)
        self.console = console  # the lowest level Flower's console handlers show during the run (None: as configured)
        self.server_app = server_app
        self.nodes = dict(nodes)  # Flower node id -> netemu node
        self.run_config = dict(run_config)
        self.run_id = run_id
        self.turns: Turns | None = None
        self.tally = Tally()  # what the run counts for its summary (shared with the nodes by add_flower)
        self.grid: NetemuGrid | None = None
        self.ids: np.random.Generator | None = None
        self.context: Context | None = None  # the ServerApp's Context; Flower apps leave results in its `state`
        self.last_category, self.last_round = "train", 0

    async def run(self) -> None:
        self.ids = self.port.stream(f"flower/message-ids/{self.name}")
        run = Run.create_empty(self.run_id)
        run.override_config = dict(self.run_config)
        grid = self.grid = NetemuGrid(self, run)
        context = self.context = Context(run_id=self.run_id, node_id=0, node_config={}, state=RecordDict(), run_config=dict(self.run_config))
        turns = self.turns = Turns(lambda: self.server_app(grid, context), name=f"netemu-flower-{self.name}")
        with flower_process_state(self.port.stream, self.run_id), _capture_metrics(self), legacy_hooks(self):
            try:
                kind, exc = await self._drive(turns)
            finally:
                turns.stop()
                grid.close()
        self._report_tally()
        if kind == "raised":
            line = (f"Flower ServerApp on node {self.name!r} raised {type(exc).__name__}: {_first_line(exc)} "
                    f"at virtual time {self.now:g} (last message type {self.last_category!r}, round {self.last_round})")
            raise FlowerAppFailed(line, "".join(traceback.format_exception(exc)))

    async def _drive(self, turns: Turns) -> tuple[str, Any]:
        """Run the ServerApp's threads in turns; between turns, wait in virtual time until
        a blocked thread's request is met (a reply, an expiry, a deadline) and wake it."""
        grid = self.grid
        assert grid is not None
        while True:
            turns.run_ready()
            if turns.outcome is not None:
                return turns.outcome
            self.ingest()
            grid.expire(self.now)
            blocked = turns.blocked()
            met = [thread for thread, request in blocked if request.met(grid, self.now)]
            for thread in met:
                turns.wake(thread)
            if met:
                continue
            deadlines = [d for _, request in blocked if (d := request.deadline(grid, self.now)) is not None]
            if not any(isinstance(request, Replies) for _, request in blocked) and not deadlines:
                raise RuntimeError(f"the ServerApp's threads wait for each other: {[r for _, r in blocked]}")
            msg = await self.recv(until=min(deadlines, default=None))
            if msg is not None:
                self.accept(msg)

    # ---------------------------------------------------------- for the Grid (the app's threads)

    def transmit(self, node: str, msg: Message, round: int) -> None:
        _transmit(self, node, msg, round, msg.metadata.message_type)

    def wait(self, ids: list[str], *, until: float | None, any_reply: bool) -> None:
        """Block the calling thread of the ServerApp until replies for `ids` are in (all,
        or any one), the virtual time `until` passes, or their TTLs run out."""
        assert self.turns is not None and self.grid is not None
        end = until if until is not None else self.grid.next_expiry(ids)
        started = self.waits.start(self.now, end, len(ids), self.last_category, self.last_round)
        self.turns.call(Replies(ids, until, any_reply))
        self.waits.end(started, self.now, self.last_round)

    def host_waits(self) -> dict[str, str | None]:
        """What the server waits for, as a stop at the horizon names it: the ServerApp's wait, if any."""
        waits = super().host_waits()
        if self.waits.current is not None:
            waits[self.name] = self.waits.current
        return waits

    def summary_warnings(self) -> list[str]:
        """summary.json warnings of this run (netemu/flower/notes.py): waits on Flower's default timeouts,
        waits longer than `wait_warning`, ClientApps sleeping in wall-clock time."""
        return self.waits.warnings() + sleep_warning(self.tally)

    def ingest(self) -> None:
        """Take every reply delivered so far into the Grid."""
        assert self.grid is not None
        while (msg := self.inbox.take(None)) is not None:
            self.accept(msg)

    def accept(self, msg: NetemuMessage) -> None:
        """A reply received: into the Grid, or marked `unused` with the Grid's reason (late, duplicate, discarded)."""
        assert self.grid is not None
        reason = self.grid.accept(from_wire(msg.payload))
        if reason is not None:
            self.unused(msg, reason)

    def initial_metrics(self, values: list[tuple[str, float]]) -> None:
        """The strategy's initial evaluation (Flower's round 0: the starting model, before
        any round) as metrics of round 0, which do not count as a round done: a run of N
        server rounds does N rounds (`rounds_done`), and the progress bar counts those."""
        for name, value in values:
            self.metric(name, value, round=0, done=False)

    def report(self, values: list[tuple[str, float]], round: int) -> None:
        """Metrics of `round` (round 0: before the first round, `initial_metrics`, unless the app
        numbers its rounds from 0: then round 0 is a round like the others)."""
        if round == 0 and not self.round0:
            self.initial_metrics(values)
        else:
            for name, value in values:
                self.metric(name, value, round=round)

    def exchange_done(self, replies: list[Message]) -> None:
        """Per exchange (a send_and_receive, or the legacy server's pool of them): how many
        replies carried content, how many were errors (train and evaluate messages)."""
        category, rnd = self.last_category, self.last_round
        if category in EXCHANGES and rnd == 0 and replies:
            self.round0 = True  # messages went out in round 0: the app counts its rounds from 0 (Flower's own start at 1)
        if category in EXCHANGES:
            self.report([(f"{category}_replies", sum(1 for r in replies if not r.has_error())),
                         (f"{category}_failures", sum(1 for r in replies if r.has_error()))], rnd)

    def _report_tally(self) -> None:
        """The run's counted events as `warn_<what>` metrics, one row per round (`Tally`)."""
        for name, rnd, value in self.tally.warnings():
            self.report([(name, value)], self.last_round if rnd < 0 else rnd)


class FlowerNode(Actor):
    """One Flower node: its ClientApp, Context and work model on a netemu client node.

    When the ClientApp (or one of its mods) raises, `on_error` decides: "reply" sends the
    error reply Flower's runtime sends (CLIENT_APP_RAISED_EXCEPTION, the reason in Flower's
    format), logs a `flower_client_error` record and counts it (`Tally`); "stop" stops the run."""

    daemon = True

    def __init__(self, name: str, client_app: Any, node_id: int, node_config: Mapping[str, Any],
                 run_config: Mapping[str, Any], run_id: int, work: WorkModel, on_error: str = "reply",
                 tally: Tally | None = None) -> None:
        super().__init__(name)
        self.client_app, self.node_id, self.work, self.on_error = client_app, node_id, work, on_error
        self.tally = tally if tally is not None else Tally()
        # the node's Context lives as long as the run (Flower keeps `state` across messages)
        self.context = Context(run_id=run_id, node_id=node_id, node_config=dict(node_config), state=RecordDict(), run_config=dict(run_config))
        self._ids: np.random.Generator | None = None

    async def run(self) -> None:
        if self._ids is None:  # once per run, not per incarnation: ids never repeat after a recovery
            self._ids = self.port.stream(f"flower/message-ids/{self.name}")
        while True:
            msg = await self.recv()
            self.round = msg.round
            if not self.participates():
                continue  # dropped out of this round: no reply, the strategy's timeout handles it
            ins = from_wire(msg.payload)
            reply = self._call(ins)
            if not reply.has_error():
                self.tally.replies += 1
                self.tally.with_examples += self.work.examples(reply) is not None
                await self.compute(self.work.work(ins, reply, self.context.run_config))
            meta = reply.metadata
            meta.created_at = self.now
            meta.ttl = ins.metadata.created_at + ins.metadata.ttl - self.now
            meta.__dict__["_message_id"] = new_message_id(self._ids)
            _transmit(self, msg.src, reply, msg.round, ins.metadata.message_type + REPLY)

    def _call(self, ins: Message) -> Message:
        """The ClientApp's reply to `ins`; a reply to another message is sent as it is (the
        Grid drops it, as the SuperLink does, and counts it)."""
        kind = ins.metadata.message_type
        try:
            with wall_sleeps(self.tally, self.name):  # a wall-clock sleep is counted and reported, not made virtual
                reply = self.client_app(ins, self.context)
            if not isinstance(reply, Message):
                raise TypeError(f"the ClientApp returned {type(reply).__name__}, not a Message (Message(content, reply_to=message))")
        except Exception as exc:  # noqa: BLE001 - Flower's runtime turns it into an error reply; "stop" reports it
            if self.on_error == "stop":
                where = f"Flower ClientApp on node {self.name!r} (Flower node {self.node_id})"
                when = f"at virtual time {self.now:g} while handling a {kind!r} message (round {self.round})"
                raise FlowerAppFailed(f"{where} raised {type(exc).__name__}: {_first_line(exc)} {when}",
                                      "".join(traceback.format_exception(exc))) from None
            self.tally.count("client_app_errors", self.round)
            self.port.note("flower_client_error", node=self.name, message_id=ins.metadata.message_id,
                           message_type=kind, error=f"{type(exc).__name__}: {_first_line(exc)}")
            reason = str(type(exc)) + ":<'" + str(exc) + "'>"  # Flower's format (flwr.supernode.runtime.run_clientapp)
            return Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=reason), reply_to=ins)
        return reply


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def add_flower(
    world: World,
    server_app: Any,
    client_app: Any,
    *,
    run_config: Mapping[str, Any] | None = None,
    work: WorkModel | None = None,
    app_dir: str | None = None,
    console: int | None = None,
    on_client_error: str = "reply",
    wait_warning: float = WAIT_WARNING,
) -> dict[int, str]:
    """Put a Flower ServerApp on the world's one server node and a Flower node with the
    ClientApp on every client node.  Apps are objects or "package.module:attribute".
    `run_config` goes on top of the app's `[tool.flwr.app.config]` (pyproject.toml in `app_dir`),
    merged as `flwr run` merges them.  `console` (a logging level) quiets Flower's console output
    below it during the run.  `on_client_error`: "reply" (a ClientApp that raises sends Flower's
    error reply) or "stop" (the run stops).  `wait_warning`: a wait of the ServerApp longer than
    this many virtual seconds is a summary warning.  Returns Flower node id -> netemu node."""
    server_app = load_server_app(server_app, setting="server_app", app_dir=app_dir)
    client_app = load_client_app(client_app, setting="client_app", app_dir=app_dir)
    roles = world.network.nodes
    servers = [n for n, node in roles.items() if node.role == "server"]
    if len(servers) != 1:
        raise InputError(f"a Flower app needs a topology with exactly one node of role server (this one has {len(servers)})")
    clients = [n for n, node in roles.items() if node.role == "client"]
    if not clients:
        raise InputError("a Flower app needs client nodes (role client) in the topology")
    if on_client_error not in ON_CLIENT_ERROR:
        raise InputError(f"on_client_error = {on_client_error!r}: accepted: {' or '.join(map(repr, ON_CLIENT_ERROR))}")
    run_config = fused_run_config(app_dir, run_config or {})  # the app's pyproject.toml defaults, as `flwr run` merges them
    work = work or WorkModel()
    run_id = flower_run_id(world.streams.seed)
    nodes = flower_nodes(clients)
    server = FlowerServer(servers[0], server_app, {i: name for i, (name, _) in nodes.items()}, run_config, run_id, console, wait_warning)
    world.add(server)
    for node_id, (name, node_config) in nodes.items():
        world.add(FlowerNode(name, client_app, node_id, node_config, run_config, run_id, work, on_client_error, server.tally))
    return {i: name for i, (name, _) in nodes.items()}
