"""The ns-3 engine process: netemu's side of `engine.cc`'s line protocol.

One `Ns3Process` per world: setup lines, then `send` (no answer: it is queued in the pipe) and
`run_until` (the one round trip: ns-3 runs until the instant asked or the first instant at which
messages completed, and says which).  Times cross the pipe as integer nanoseconds, ns-3's
resolution.  A process that dies or answers nonsense is an `Ns3Crashed`, which stops the run
(`complete: false`) with ns-3's exit status and the end of its error output.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, cast

from netemu.errors import RunStopped

__all__ = ["NS", "Ns3Crashed", "Ns3Process", "Outcome"]

NS = 1_000_000_000  # nanoseconds per second

#: (message id, ns-3 time in ns, None when delivered or the drop reason)
Outcome = tuple[int, int, "str | None"]


class Ns3Crashed(RunStopped):
    """The ns-3 engine process died or broke the protocol during a run."""


class Ns3Process:
    """A running `engine.cc` (see the module docstring)."""

    def __init__(self, binary: Path, setup: Iterable[str]) -> None:
        self.binary = binary
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                      text=True, bufsize=1 << 16)
        self._in = cast(IO[str], self._proc.stdin)
        self._out = cast(IO[str], self._proc.stdout)
        self.now = 0  # ns-3's time (ns) after the last run
        self._write("".join(f"{line}\n" for line in setup) + "build\n")
        answer = self._readline()
        if answer != "ok":
            raise self._crashed(f"refused its setup: {answer or 'no answer'}")

    def send(self, msg_id: int, src: int, dst: int, nbytes: int, conn: int, last: bool) -> None:
        """Start message `msg_id` on connection `conn` at ns-3's current time (no answer); `last`: the
        connection closes once it is written."""
        self._write(f"send {msg_id} {src} {dst} {nbytes} {conn} {int(last)}\n")

    def datagram(self, msg_id: int, src: int, dst: int, nbytes: int) -> None:
        """Send message `msg_id` as UDP datagrams at ns-3's current time (no answer)."""
        self._write(f"datagram {msg_id} {src} {dst} {nbytes}\n")

    def command(self, lines: list[str]) -> None:
        """Commands that take effect at ns-3's current time (changes of links and nodes; no answer)."""
        if lines:
            self._write("".join(f"{line}\n" for line in lines))

    def run_until(self, t: int) -> list[Outcome]:
        """Run ns-3 until `t` ns (-1: no limit) or an instant at which messages completed; those outcomes."""
        self._write(f"run {t}\n")
        out: list[Outcome] = []
        while True:
            line = self._readline()
            parts = line.split()
            try:
                if parts[0] == "at" and len(parts) == 2:
                    self.now = int(parts[1])
                    return out
                if parts[0] == "done" and len(parts) == 3:
                    out.append((int(parts[1]), int(parts[2]), None))
                    continue
                if parts[0] == "fail" and len(parts) == 4:
                    out.append((int(parts[1]), int(parts[2]), parts[3]))
                    continue
            except (IndexError, ValueError):
                pass
            raise self._crashed(f"answered {line[:200]!r} to run {t}" if line else f"ended during run {t}")

    def close(self) -> None:
        proc = self._proc
        if proc.poll() is None:
            try:
                self._in.write("quit\n")
                self._in.close()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                proc.kill()
                proc.wait()
        self._stderr.close()

    # ------------------------------------------------------------ internals

    def _write(self, text: str) -> None:
        try:
            self._in.write(text)
            self._in.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._crashed("stopped reading its commands") from None

    def _readline(self) -> str:
        try:
            return self._out.readline().strip()
        except (OSError, ValueError):
            return ""

    def _crashed(self, what: str) -> Ns3Crashed:
        proc = self._proc
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace").strip()[-2000:]
        status = f"exit status {code}" if code >= 0 else f"killed by signal {-code}"
        return Ns3Crashed(f"the ns-3 engine ({self.binary}) {what} ({status})" + (f":\n{tail}" if tail else ""))
