"""Text from files people share, made safe for a terminal.

Names and kinds in message logs, scenarios and traces are data: a control character in
them (an ANSI escape, a carriage return, a bidi override) must not reach the terminal
raw, where it could rewrite what the reader sees.  `printable` escapes every character
Python does not call printable (`str.isprintable`), except the plain space.
"""

from __future__ import annotations

__all__ = ["printable", "printable_lines"]


def _escape(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def printable(value: object) -> str:
    """`str(value)` with control and other non-printable characters escaped (``\\x1b``)."""
    s = value if isinstance(value, str) else str(value)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else _escape(c) for c in s)


def printable_lines(value: object) -> str:
    """`printable` line by line: the line breaks of a multi-line message are kept, the rest escaped."""
    return "\n".join(map(printable, str(value).split("\n")))
