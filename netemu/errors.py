"""The one exception family of netemu, and the exit codes of the `netemu` command.

Every error a user must be told about derives from `NetemuError`; the CLI catches the
family at the top, prints `str(exc)` as one clear message (file, key or record, value,
what is accepted) and exits with the error's `exit_code`.  Anything else that escapes
is a bug in netemu.  This module is a leaf: it imports nothing from netemu.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "EXIT_BAD_INPUT", "EXIT_COMPLETE", "EXIT_FAILED", "EXIT_INCOMPLETE", "EXIT_INTERRUPTED", "EXIT_TERMINATED",
    "DeviceError", "ExportError", "InputError", "LogError", "NetemuError", "ReportError", "RunStopped", "SweepError", "TraceError",
    "WRITE_ERRNOS", "WriteFailed", "writing",
]

EXIT_COMPLETE = 0       # every run of every algorithm did all it planned
EXIT_FAILED = 1         # the emulation stopped: an actor raised, or a deadlock
EXIT_BAD_INPUT = 2      # a scenario, trace, log, device file or option was refused before anything ran
EXIT_INCOMPLETE = 3     # the run ended early without a failure (until, horizon, a crash without recovery)
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT)
EXIT_TERMINATED = 143   # SIGTERM


class NetemuError(Exception):
    """Base of every error netemu reports to a person.  `exit_code` is what the CLI returns."""

    exit_code = EXIT_BAD_INPUT


class InputError(NetemuError, ValueError):
    """Bad input: a file, a key or an option that netemu refuses.  Subclasses say which kind."""


class TraceError(InputError):
    """A trace file that cannot be read, is corrupt, or does not match the scenario."""


class LogError(InputError):
    """A message log that cannot be read or has records of the wrong shape."""


class DeviceError(InputError):
    """A device trace or devices file that cannot be imported or used."""


class ExportError(InputError):
    """A log export that cannot be written: an unknown format, a missing optional dependency, an unwritable folder."""


class SweepError(InputError):
    """A sweep grid, folder or executor that cannot be used."""


class ReportError(InputError):
    """A run folder that cannot be plotted or reported."""


class RunStopped(NetemuError, RuntimeError):
    """The emulation stopped before its end: an actor failed or no actor can progress."""

    exit_code = EXIT_FAILED


WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})
"""The errors of a write the machine refused (disk full, quota, read-only filesystem, I/O error,
file too large): the outcome of the command, not a bug in netemu nor in an actor."""


class WriteFailed(RunStopped):
    """A file netemu writes could not be written (one of `WRITE_ERRNOS`): the command stopped.
    The message names the file (or folder) and the system's reason, in one line."""

    def __init__(self, path: str | os.PathLike[str], exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        code = errno.errorcode.get(exc.errno or 0)
        super().__init__(f"cannot write {os.fspath(path)}: {reason}{f' ({code})' if code else ''}")
        self.path, self.errno = os.fspath(path), exc.errno


@contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, a write the machine refuses (`WRITE_ERRNOS`) becomes `WriteFailed` naming `path`."""
    try:
        yield
    except OSError as exc:
        if exc.errno in WRITE_ERRNOS:
            raise WriteFailed(path, exc) from None
        raise
