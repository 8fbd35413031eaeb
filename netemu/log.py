"""The message log: one JSON line per event, in virtual time only.

Built on structlog with a per-run logger (`structlog.wrap_logger`), so nothing is
configured globally and several runs can log in one process.  Each record starts
with ``t`` (virtual seconds) and ``event``; context bound with `bind` (e.g. the
algorithm and Monte Carlo run) follows, then the event's fields.  JSON is rendered
by orjson: compact, fast, and byte-stable for equal inputs.  Record schemas are in
docs/formats.md.
"""

from __future__ import annotations

from typing import IO, Any

import orjson
import structlog

__all__ = ["MessageLog"]


def _render_line(_logger: Any, _name: str, event_dict: dict) -> bytes:
    """Final processor: ``t`` and ``event`` first, one JSON object per line."""
    ordered = {"t": event_dict.pop("t"), "event": event_dict.pop("event"), **event_dict}
    return orjson.dumps(ordered, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE)


class _Sink:
    """structlog's output logger: a buffered binary file (flushed by `MessageLog.flush`).

    structlog's own BytesLogger flushes after every record — a system call per
    event, the largest cost on a busy network; the run flushes on every exit path.
    """

    def __init__(self, file: IO[bytes]) -> None:
        self.msg = file.write


class _RecordLogger(structlog.BoundLoggerBase):
    """A wrapper class with one method; `_process_event` is structlog's documented
    hook for custom wrappers (it runs the bound context through the processors)."""

    def record(self, event: str, fields: dict) -> None:
        args, kwargs = self._process_event("msg", event, fields)
        self._logger.msg(*args, **kwargs)


class MessageLog:
    """Writes records to a binary file object (or nowhere, when `sink` is None)."""

    def __init__(self, sink: IO[bytes] | None, **context: Any) -> None:
        self.sink = sink
        self._log = (
            structlog.wrap_logger(
                _Sink(sink), processors=[_render_line], context_class=dict, wrapper_class=_RecordLogger
            ).bind(**context)
            if sink is not None
            else None
        )
        self.records = 0

    def bind(self, **context: Any) -> MessageLog:
        """A log writing to the same sink with extra context in every record."""
        new = MessageLog(None)
        new.sink, new._log = self.sink, self._log.bind(**context) if self._log is not None else None
        return new

    def __call__(self, *, t: float, event: str, **fields: Any) -> None:
        self.records += 1
        if self._log is not None:
            fields["t"] = t
            self._log.record(event, fields)

    def flush(self) -> None:
        if self.sink is not None:
            self.sink.flush()
