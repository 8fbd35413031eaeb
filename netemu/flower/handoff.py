"""Run a synchronous program (a Flower ServerApp) beside the virtual-time event loop.

The program runs in a worker thread, but never at the same time as the loop: the two
hand control to each other with a pair of semaphores, like coroutines.  The loop side
starts the program and blocks until the program asks for something it must wait for
(`call`); the loop then serves that request in virtual time and hands the answer
back, blocking again until the next request or the end.  Exactly one side runs at
any moment, so the emulation stays deterministic: no wall-clock timing decides
anything, and the program may read and change the World while the loop is parked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["AppThread", "Stopped"]


class Stopped(BaseException):
    """Raised inside the program when the emulation stops it (a BaseException, so that
    an app's `except Exception` does not swallow it)."""


class AppThread:
    """`fn()` in a worker thread that alternates strictly with the thread driving it."""

    def __init__(self, fn: Callable[[], None], name: str) -> None:
        self._fn = fn
        self._to_app = threading.Semaphore(0)
        self._to_loop = threading.Semaphore(0)
        self._box: tuple[str, Any] = ("idle", None)
        self._stopping = False
        self._started = False
        self._finished = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def started(self) -> bool:
        return self._started

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    # ------------------------------------------------------------ worker side

    def _main(self) -> None:
        self._to_app.acquire()
        try:
            if self._stopping:
                raise Stopped
            self._fn()
            self._box = ("done", None)
        except Stopped:
            self._box = ("stopped", None)
        except BaseException as exc:  # noqa: BLE001 - handed to the loop side, which reports it
            self._box = ("raised", exc)
        self._finished = True
        self._to_loop.release()

    def call(self, request: Any) -> Any:
        """From the program: hand `request` to the loop side and block until it answers."""
        if self._stopping:
            raise Stopped
        self._box = ("call", request)
        self._to_loop.release()
        self._to_app.acquire()
        kind, value = self._box
        if kind == "stop":
            raise Stopped
        return value

    # ------------------------------------------------------------ loop side

    def start(self) -> tuple[str, Any]:
        """Start the program; returns its first `("call", request)`, or how it ended:
        `("done", None)` or `("raised", exception)`."""
        self._started = True
        self._thread.start()
        return self._switch()

    def resume(self, answer: Any) -> tuple[str, Any]:
        """Answer the pending request; returns the next request or how the program ended."""
        self._box = ("answer", answer)
        return self._switch()

    def stop(self) -> None:
        """Make the pending `call` raise `Stopped` and wait until the program has unwound."""
        if not self._started or self._finished:
            return
        self._stopping = True
        self._box = ("stop", None)
        while not self._finished:
            self._switch()

    def _switch(self) -> tuple[str, Any]:
        self._to_app.release()
        self._to_loop.acquire()
        return self._box
