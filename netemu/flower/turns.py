"""The threads of a ServerApp, taking turns with the virtual-time loop.

A ServerApp may run on several threads: Flower's legacy server calls the Grid from a
thread pool, one thread per client.  `Turns` runs them one at a time, each an
`AppThread`: the loop side runs every ready thread until it blocks on a request (replies
to wait for, other threads to finish, a virtual sleep) or ends, in the order the threads
became ready; then the loop serves the requests in virtual time and wakes the threads
whose request is met, in the order they blocked.  Exactly one thread, or the loop, runs
at any moment, and which one is decided by the program's own order, never by the
operating system's scheduler or the wall clock.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from netemu.flower.handoff import AppThread

__all__ = ["Turns"]


class Turns:
    """`main()` and the threads it spawns (`spawn`), run in turns by the loop side."""

    def __init__(self, main: Callable[[], None], name: str) -> None:
        self.main = AppThread(main, name)
        self._threads: list[AppThread] = [self.main]
        self._by_thread: dict[threading.Thread, AppThread] = {self.main.thread: self.main}
        self._ready: deque[AppThread] = deque([self.main])
        self._blocked: dict[AppThread, Any] = {}  # thread -> its request, in the order they blocked
        self.outcome: tuple[str, Any] | None = None  # how main ended: ("done", None) or ("raised", exc)

    # ------------------------------------------------------------ from the program's threads

    def current(self) -> AppThread | None:
        """The AppThread running this code, or None for a thread not run in turns."""
        return self._by_thread.get(threading.current_thread())

    def spawn(self, fn: Callable[[], None], name: str) -> None:
        """A new thread of the program, ready after those already ready."""
        thread = AppThread(fn, name)
        self._threads.append(thread)
        self._by_thread[thread.thread] = thread
        self._ready.append(thread)

    def call(self, request: Any) -> Any:
        """Block the calling thread on `request` until the loop side wakes it."""
        thread = self.current()
        if thread is None:
            raise RuntimeError(f"{threading.current_thread().name!r} is not a thread run in turns")
        return thread.call(request)

    # ------------------------------------------------------------ loop side

    def run_ready(self) -> None:
        """Run the ready threads one at a time until each has blocked or ended."""
        while self._ready and self.outcome is None:
            thread = self._ready.popleft()
            kind, value = thread.resume(None) if thread.started else thread.start()
            if kind == "call":
                self._blocked[thread] = value
            elif thread is self.main or kind == "raised":  # a pool thread keeps its task's exception in its future
                self.outcome = (kind, value)

    def blocked(self) -> list[tuple[AppThread, Any]]:
        """The blocked threads and their requests, in the order they blocked."""
        return list(self._blocked.items())

    def wake(self, thread: AppThread) -> None:
        del self._blocked[thread]
        self._ready.append(thread)

    def stop(self) -> None:
        """Unwind every started thread that has not ended, the spawned ones (latest first) before main."""
        for thread in reversed(self._threads):
            thread.stop()
