"""Progress of long commands: a bar on a terminal, a plain line now and then elsewhere.

On a terminal `progress()` is a tqdm bar.  When stderr is not a terminal (CI logs,
nohup, notebooks, pipes) a bar would be noise or nothing at all, so it prints a plain
line — ``netemu: quickstart: 120/450 rounds (27 %), fedavg run 1`` — when it starts,
at most every `interval` wall-clock seconds, and when it ends; so it does, terminal or not,
when diagnostics are JSON lines (`netemu --log-format json`): each line is then a `progress`
event (netemu.diagnostics).  Wall-clock time only paces these lines; it never enters an emulation.
"""

from __future__ import annotations

import sys
import time
from typing import IO

__all__ = ["PlainProgress", "Silent", "progress"]

INTERVAL = 10.0  # seconds between two plain progress lines


class PlainProgress:
    """The tqdm calls netemu uses (update, set_postfix_str, n, total, refresh, close), as plain lines."""

    def __init__(self, total: int | None, label: str, unit: str, stream: IO[str], interval: float = INTERVAL):
        self.total, self.n = total, 0
        self.label, self.unit, self.stream, self.interval = label, unit, stream, interval
        self._postfix = ""
        self._printed_n: int | None = None
        self._last = time.monotonic()
        self._closed = False
        self._print()

    def _line(self) -> str:
        from netemu.terminal import printable

        done = f"{self.n}/{self.total} {self.unit}s" if self.total else f"{self.n} {self.unit}s"
        pct = f" ({100 * self.n / self.total:.0f} %)" if self.total else ""
        extra = f", {self._postfix}" if self._postfix else ""
        return printable(f"netemu: {self.label}: {done}{pct}{extra}")  # one line, whatever the label holds

    def _print(self) -> None:
        from netemu.diagnostics import event

        event("progress", self._line(), stream=self.stream, label=self.label, done=self.n, total=self.total, unit=self.unit,
              at=self._postfix or None)
        self._printed_n, self._last = self.n, time.monotonic()

    def _maybe_print(self) -> None:
        if time.monotonic() - self._last >= self.interval and self.n != self._printed_n:
            self._print()

    def update(self, k: int = 1) -> None:
        self.n += k
        self._maybe_print()

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self._postfix = s

    def refresh(self) -> None:
        self._maybe_print()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.n != self._printed_n:
                self._print()

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Silent:
    """The tqdm calls netemu uses, doing nothing (`--quiet`): what a disabled tqdm did, without importing
    tqdm (and multiprocessing, threading with it: ~0.05 s of CPU at every quiet `netemu run`)."""

    def __init__(self, total: int | None) -> None:
        self.total, self.n = total, 0

    def update(self, k: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> Silent:
        return self

    def __exit__(self, *exc) -> None:
        pass


def progress(total: int | None, *, quiet: bool = False, label: str = "", unit: str = "round",
             stream: IO[str] | None = None, interval: float = INTERVAL):
    """A context-managed progress display: tqdm on a terminal (unless diagnostics are JSON
    lines), `PlainProgress` otherwise, nothing (`Silent`) with `quiet`; tqdm is imported for the bar alone."""
    from netemu.diagnostics import json_format

    stream = stream if stream is not None else sys.stderr
    if quiet:
        return Silent(total)
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty() and not json_format():
        from tqdm import tqdm

        return tqdm(total=total, desc=label, unit=unit, file=stream, leave=False)
    return PlainProgress(total, label, unit, stream, interval)
