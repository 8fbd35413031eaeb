"""Stopping a run on a signal: SIGINT and SIGTERM raise into the run (once), so that the path
that handles Ctrl-C writes an incomplete run folder for either."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Terminated", "stop_on_signals"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same path writes an incomplete folder."""


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While inside: SIGINT raises KeyboardInterrupt and SIGTERM raises `Terminated`, once;
    a repeated signal is ignored so the run folder can be closed (log flushed, trace end
    marker, summary.json).  Only in the main thread (signal handlers live there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        if fired:
            return
        fired.append(signum)
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
