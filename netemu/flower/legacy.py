"""Flower's compatibility layer (`ServerApp(server_fn=...)`, `DefaultWorkflow`) on netemu.

Flower's legacy server runs each client's exchange in a thread of a
`concurrent.futures.ThreadPoolExecutor` and joins them with `concurrent.futures.wait`;
its client manager samples with the `random` module and waits for clients on a
condition with a one-day wall-clock timeout; its results go to a `History`.  For one
run, `legacy_hooks` changes these in Flower's modules (and restores them after):

* the pool: each task is a thread of the ServerApp's `Turns` (all at once unless the
  server sets `max_workers`; Flower's default pool size is the machine's CPU count + 4,
  which would make the timing depend on the machine), joined in virtual time; `wait`
  returns the finished tasks in submission order, so results are aggregated in an order
  that does not depend on thread scheduling;
* `SimpleClientManager.wait_for`: the registry is every Flower node of the topology
  from the start, so waiting for more can only fail: it says so at once;
* the client manager's sampling: a private `random.Random` seeded from a named stream;
* `time.sleep` in the Message-API strategies' `sample_nodes`: a virtual sleep;
* `History`: the legacy strategies' aggregated metrics become netemu metrics
  (`train_<key>`, `evaluate_loss`, `evaluate_<key>`, `server_loss`, `server_<key>`).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import random
import time
import types
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ALL_COMPLETED, Future
from concurrent.futures._base import DoneAndNotDoneFutures
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

import flwr.server.client_manager as _client_manager
import flwr.server.server as _server
from flwr.server.history import History
from flwr.serverapp.strategy import strategy_utils as _strategy_utils

from netemu.errors import InputError
from netemu.flower.handoff import Stopped
from netemu.flower.waits import Sleep, ThreadsDone

if TYPE_CHECKING:
    from netemu.flower.actors import FlowerServer

__all__ = ["legacy_hooks"]

# History method -> (metric prefix, whether its value is a loss rather than a dict of metrics)
_HISTORY = {
    "add_loss_distributed": ("evaluate", True),
    "add_loss_centralized": ("server", True),
    "add_metrics_distributed_fit": ("train", False),
    "add_metrics_distributed": ("evaluate", False),
    "add_metrics_centralized": ("server", False),
}


class _Pool:
    """A ThreadPoolExecutor whose tasks are threads of the ServerApp's `Turns`."""

    def __init__(self, server: FlowerServer, max_workers: int | None = None, *_: Any, **__: Any) -> None:
        self._server, self._limit = server, max_workers
        self._queue: deque[tuple[Future, Callable[[], Any]]] = deque()
        self._running = 0
        self._order = itertools.count()  # submission order, which `_wait` returns results in

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        future.netemu_order = next(self._order)  # type: ignore[attr-defined]
        self._queue.append((future, lambda: fn(*args, **kwargs)))
        self._start()
        return future

    def _start(self) -> None:
        turns = self._server.turns
        assert turns is not None
        while self._queue and (self._limit is None or self._running < self._limit):
            future, task = self._queue.popleft()
            self._running += 1
            turns.spawn(functools.partial(self._run, future, task), name=f"netemu-flower-pool-{future.netemu_order}")  # type: ignore[attr-defined]

    def _run(self, future: Future, task: Callable[[], Any]) -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(task())
        except Stopped:
            raise
        except BaseException as exc:  # noqa: BLE001 - the task's failure, as a pool keeps it
            future.set_exception(exc)
        finally:
            self._running -= 1
            self._start()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to wait for: Flower joins its tasks with `wait` first."""
        if cancel_futures:
            for future, _ in self._queue:
                future.cancel()
            self._queue.clear()

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


def _wait(server: FlowerServer, fs: Any, timeout: float | None = None, return_when: str = ALL_COMPLETED) -> DoneAndNotDoneFutures:
    """`concurrent.futures.wait` for `_Pool` tasks: blocks the calling thread until all are
    done (or `timeout` virtual seconds); finished tasks come in submission order."""
    ordered = sorted(set(fs), key=lambda f: f.netemu_order)
    if return_when != ALL_COMPLETED:
        raise InputError(f"concurrent.futures.wait(return_when={return_when!r}) in Flower's legacy server: netemu supports ALL_COMPLETED")
    if any(not f.done() for f in ordered):
        assert server.turns is not None
        server.turns.call(ThreadsDone(ordered, None if timeout is None else server.now + timeout))
    assert server.grid is not None
    server.grid.pool_joined()
    done = dict.fromkeys(f for f in ordered if f.done()).keys()  # ordered, and set-like as Flower expects
    return DoneAndNotDoneFutures(done, {f for f in ordered if not f.done()})  # type: ignore[arg-type]


def _wait_for(self: Any, num_clients: int, timeout: int = 86400) -> bool:
    """SimpleClientManager.wait_for under netemu: every Flower node registers at once, so
    waiting for more would wait Flower's day of wall time for nothing."""
    if len(self.clients) >= num_clients:
        return True
    raise InputError(
        f"the Flower strategy waits for {num_clients} clients, more than the {len(self.clients)} Flower nodes of the "
        "topology (check min_available_clients, min_fit_clients and min_evaluate_clients of its strategy)")


@contextmanager
def _patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    saved = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, saved)


@contextmanager
def legacy_hooks(server: FlowerServer) -> Iterator[None]:
    """Flower's legacy server, client manager, History and `sample_nodes` sleep, on
    netemu's threads and clock for the duration of one run (module docstring)."""

    def scheduled() -> bool:
        return server.turns is not None and server.turns.current() is not None

    def sleep(seconds: float) -> None:
        if scheduled():
            server.turns.call(Sleep(server.now + seconds))  # type: ignore[union-attr]
        else:
            time.sleep(seconds)

    def recorder(name: str, prefix: str, is_loss: bool) -> Callable[..., None]:
        original = getattr(History, name)
        signature = inspect.signature(original)  # (self, server_round, loss | metrics)

        def record(self: History, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            if not scheduled():
                return
            _, server_round, value = signature.bind(self, *args, **kwargs).arguments.values()
            items = {"loss": value} if is_loss else value
            values = [(f"{prefix}_{k}", float(v)) for k, v in items.items()
                      if isinstance(v, (int, float)) and not isinstance(v, bool)]
            server.report(values, server_round)

        return record

    wait_for = _client_manager.SimpleClientManager.wait_for

    def guarded_wait_for(self: Any, num_clients: int, timeout: int = 86400) -> bool:
        return _wait_for(self, num_clients, timeout) if scheduled() else wait_for(self, num_clients, timeout)

    futures = types.SimpleNamespace(
        ThreadPoolExecutor=lambda max_workers=None, *a, **kw: _Pool(server, max_workers),
        wait=lambda fs, timeout=None, return_when=ALL_COMPLETED: _wait(server, fs, timeout, return_when),
        Future=Future, ALL_COMPLETED=ALL_COMPLETED,
    )
    sampler = random.Random(int(server.port.stream("flower/legacy-sampling").integers(2**63)))
    with ExitStack() as stack:
        stack.enter_context(_patched(_server, "concurrent", types.SimpleNamespace(futures=futures)))
        stack.enter_context(_patched(_client_manager, "random", sampler))
        stack.enter_context(_patched(_client_manager.SimpleClientManager, "wait_for", guarded_wait_for))
        stack.enter_context(_patched(_strategy_utils, "sleep", sleep))
        for name, (prefix, is_loss) in _HISTORY.items():
            stack.enter_context(_patched(History, name, recorder(name, prefix, is_loss)))
        yield
