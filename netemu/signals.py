"""Stopping a run on a signal: SIGINT and SIGTERM raise into the run (once), so that the path
that handles Ctrl-C writes an incomplete run folder for either.

While the emulation's event loop runs, the exception is raised between two of its callbacks,
not inside one: a signal lands between any two bytecodes, and raised there it could split
what must stay whole (a trace entry counted in the checksum but not written, a counter
bumped for a record that never reached the log).  Outside the loop it is raised at once."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Terminated", "raise_pending", "stop_on_signals"]

_PENDING: list[BaseException] = []  # a signal's exception that the loop's next callback is to raise, not raised yet


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same path writes an incomplete folder."""


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While inside: SIGINT raises KeyboardInterrupt and SIGTERM raises `Terminated`, once;
    a repeated signal is ignored so the run folder can be closed (log flushed, trace end
    marker, summary.json) — unless the first is still waiting for the loop's next callback
    (one callback runs on and on): then the second raises at once.  Only in the main thread
    (signal handlers live there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []
    _PENDING.clear()

    def handler(signum: int, _frame: object) -> None:
        if fired:
            raise_pending()  # the loop never got to the first (a callback runs on and on): the second raises it now
            return
        fired.append(signum)
        exc = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop runs (building, writing the folder): raise here
            raise exc from None
        _PENDING.append(exc)
        loop.call_soon(raise_pending)  # the next callback: the one in progress finishes first

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
        _PENDING.clear()


def raise_pending() -> None:
    """Raise the exception of a signal that came while a loop ran and is not raised yet: the
    loop's next callback, and the runner before it starts the next world (for a signal in a
    loop's last iteration, which stopped before that callback could run)."""
    if _PENDING:
        raise _PENDING.pop()
