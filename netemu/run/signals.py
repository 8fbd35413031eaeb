"""Stopping on a signal: SIGINT raises KeyboardInterrupt and SIGTERM raises `Terminated`, so
that the path that handles Ctrl-C writes an incomplete run folder for either.

A handler never raises from an arbitrary point of a run: a signal lands between any two
bytecodes — inside a garbage-collection callback or a `__del__`, where Python prints
"Exception ignored" and goes on as if nothing happened, or between two statements that must
stay whole (a trace entry counted in the checksum but not written, a half-built event loop).
Inside `stop_on_signals` the handler only records the signal; it is raised at safe points:
by the event loop between two of its callbacks, and by the runner (`raise_pending`) between
graphs, worlds and runs, after a world is built and before a run is called complete.

Outside a run (`cli_signals`: the `netemu` command while it parses, validates, reads a log)
there is nothing to keep whole, and the exception is raised at once — unless Python is
importing a module (an extension module half initialized can crash the interpreter later): it
is recorded in any case, and raised at the next safe point (the command's start and end, a
run's start) should it have been deferred or swallowed by a callback.  This module imports nothing heavy:
the command installs its handlers before NumPy, SimPy and networkx are imported."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Terminated", "cli_signals", "ignore_signals", "pending", "raise_pending", "stop_on_signals"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same path writes an incomplete folder."""


class _State:
    """The one signal state of the process (signal handlers are process-wide, main thread only)."""

    def __init__(self) -> None:
        self.pending: list[BaseException] = []  # a recorded signal's exception, not raised at a safe point yet
        self.deferred = False  # inside stop_on_signals: record, raise at safe points
        self.honoured = False  # a signal was raised in this run: later ones are ignored while the folder is closed


_STATE = _State()


def _exception(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _importing(frame: FrameType | None) -> bool:
    """Whether the signal interrupted an import (Python's import machinery is on the stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    state = _STATE
    if not state.deferred:  # nothing to keep whole: raise now, and again at a safe point should it be swallowed
        exc = _exception(signum)
        state.pending[:] = [exc]
        if _importing(frame):  # a half-initialized extension module (NumPy's) may crash the interpreter later
            return
        raise exc
    if state.pending:
        # the first still waits for a safe point (one callback, or a world's construction, runs on and on):
        # the second raises at once; swallowed too, the first still waits
        raise _exception(signum)
    if state.honoured:
        return  # the run is closing its folder (log flushed, trace end marker, summary.json)
    state.pending.append(_exception(signum))
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop runs (building, writing): the runner's next safe point raises it
        return
    loop.call_soon(raise_pending)  # the next callback: the one in progress finishes first


def _install() -> dict:
    """Our handler for SIGINT and SIGTERM, except where the signal is ignored (a background job of a
    shell script ignores SIGINT, `nohup` SIGHUP): what a parent asked to ignore stays ignored."""
    return {sig: signal.signal(sig, _handler) for sig in (signal.SIGINT, signal.SIGTERM)
            if signal.getsignal(sig) is not signal.SIG_IGN}


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def cli_signals() -> Iterator[None]:
    """The `netemu` command's handlers, installed before anything heavy is imported: SIGINT and
    SIGTERM raise at once (outside a run) or at the run's safe points (inside `stop_on_signals`)."""
    if not _main_thread():
        yield
        return
    _STATE.pending.clear()
    previous = _install()
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
        _STATE.pending.clear()
        _STATE.deferred = _STATE.honoured = False


def ignore_signals() -> None:
    """From now on until `cli_signals` ends, SIGINT and SIGTERM are ignored (the command reports
    the first and exits)."""
    _STATE.pending.clear()
    _STATE.deferred = _STATE.honoured = True


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While inside: SIGINT raises KeyboardInterrupt and SIGTERM raises `Terminated`, once, at
    the next safe point; a repeated signal is ignored so the run folder can be closed (log
    flushed, trace end marker, summary.json) — unless the first still waits for its safe
    point: then the second raises at once.  A signal recorded before (swallowed by a callback
    while the command started) is raised on entry; one recorded but not raised when the block
    ends is raised then.  Only in the main thread (signal handlers live there)."""
    if not _main_thread():
        yield
        return
    state = _STATE
    raise_pending()
    previous = _install()
    was_deferred, state.deferred, state.honoured = state.deferred, True, False
    try:
        yield
        raise_pending()
    finally:
        state.deferred = was_deferred
        for sig, h in previous.items():
            signal.signal(sig, h)
        state.pending.clear()


def pending() -> bool:
    """Whether a signal was recorded and not raised yet."""
    return bool(_STATE.pending)


def raise_pending() -> None:
    """Raise the exception of a signal recorded and not raised yet: at a safe point (the loop's
    next callback; the runner between graphs, worlds and runs, after building a world, before
    calling a run complete)."""
    if _STATE.pending:
        _STATE.honoured = True
        raise _STATE.pending.pop()
