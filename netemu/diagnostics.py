"""netemu's own diagnostics — warnings, a run's lifecycle, progress, errors — as structlog
events on stderr, in the format `netemu --log-format` chose (`using`).

An event has a name (`run.started`, `warning`, `progress`, `error`, ...), fields, and,
when a person should read it, `text`: the line netemu prints.

- text (the default): each event's text, escaped for the terminal (netemu.terminal), one
  line as netemu has always printed it; events without text (a run's lifecycle, for
  machines) are left out;
- json: every event as one JSON object per line (`event`, `level`, `timestamp` in UTC,
  `text` when it has one, and its fields), so that a program can follow a run.

The message log does not go through here: it is data, rendered by orjson directly
(docs/formats.md, "Diagnostics").  structlog is imported with the first event printed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import IO, Any, TextIO, cast

__all__ = ["FORMATS", "event", "json_format", "render", "using"]

FORMATS = ("text", "json")

_sink: ContextVar[tuple[str, IO[str] | None]] = ContextVar("netemu_diagnostics", default=("text", None))


@contextmanager
def using(format: str = "text", stream: IO[str] | None = None) -> Iterator[None]:
    """Diagnostics in `format` ("text" or "json") on `stream` (default: sys.stderr when an event is printed) meanwhile."""
    if format not in FORMATS:
        raise ValueError(f"diagnostics format {format!r}: expected one of {', '.join(FORMATS)}")
    token = _sink.set((format, stream))
    try:
        yield
    finally:
        _sink.reset(token)


def json_format() -> bool:
    """Whether diagnostics are JSON lines now (a progress bar would break them)."""
    return _sink.get()[0] == "json"


def event(name: str, text: str | None = None, *, level: str = "info", stream: IO[str] | None = None, **fields: Any) -> None:
    """Emit the event `name` with `fields` (and the line `text` for people) at `level`
    ("info", "warning" or "error"), on `stream` or the current sink's."""
    format, default = _sink.get()
    if text is None and format == "text":
        return  # nothing to print: no need to build a logger
    _emit(format, "print", stream or default or sys.stderr, name, text, level, fields)


def render(name: str, text: str, *, level: str = "info", **fields: Any) -> str:
    """The line `event` would print, returned instead (for Python's warnings, which print it themselves)."""
    return _emit(_sink.get()[0], "return", None, name, text, level, fields)


def _emit(format: str, to: str, stream: IO[str] | None, name: str, text: str | None, level: str, fields: dict) -> Any:
    import structlog

    if format == "json":
        processors: list[Any] = [structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True),
                                 structlog.processors.JSONRenderer(sort_keys=True)]
    else:
        processors = [_text]
    logger = structlog.PrintLogger(cast(TextIO, stream)) if to == "print" else structlog.ReturnLogger()
    bound = structlog.wrap_logger(logger, processors=processors, wrapper_class=structlog.make_filtering_bound_logger(0))
    return getattr(bound, level)(name, **fields) if text is None else getattr(bound, level)(name, text=text, **fields)


def _text(_logger: Any, _method: str, event_dict: dict) -> str:
    from netemu.terminal import printable_lines

    return printable_lines(event_dict["text"])
