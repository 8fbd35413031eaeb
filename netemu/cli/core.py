"""The top-level `netemu` parser and `main`: the one place where errors meant for people
(the `NetemuError` family) become a `netemu: ...` line (an `error` event) and an exit code,
without a traceback, and where `--log-format` chooses how diagnostics print (netemu.diagnostics)."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import NoReturn

from netemu.version import __version__
from netemu.cli import algorithms, devices, log, plot, report, run, sweep, validate
from netemu.diagnostics import FORMATS, event, json_format, render, using
from netemu.errors import EXIT_BAD_INPUT

__all__ = ["main"]

EXAMPLES = """examples:
  netemu run scenarios/quickstart.toml
  netemu run scenarios/quickstart.toml --runs 10 --seed 3 --set algorithm.lr=0.02 --out runs/lr002
  netemu replay runs/quickstart/trace.msgpack --scenario scenarios/quickstart.toml
  netemu validate scenarios/*.toml
  netemu algorithms pgfl
  netemu log summary runs/quickstart
  netemu log filter runs/quickstart --actor client-3 --kind update --table
  netemu log diff runs/a runs/b
  netemu plot runs/a runs/b --metric mse
  netemu plot runs/a runs/b --metric mse --x time
  netemu sweep scenarios/quickstart.toml --grid algorithm.lr=0.02,0.05,0.1 --grid run.seed=1..5
  netemu plot runs/quickstart-sweep --metric mse --x algorithm.lr

exit codes:
  0    complete: every run of every algorithm did all its rounds
  1    failed: an actor raised, a deadlock stopped the emulation, or a file could not be
       written (disk full, read-only filesystem, I/O error): one line names it
  2    bad input: a scenario, trace, log, device file or option was refused
  3    incomplete: a run ended early without failing (run.until, the horizon run.max_time,
       a crash without recovery); summary.json says which run and why
  130  interrupted (Ctrl-C), 143 terminated (SIGTERM): the run folder holds what was done
"""


class _Parser(argparse.ArgumentParser):
    """The top-level parser: `--help` ends with the registered algorithms and data kinds
    (read only when help is shown, so other commands do not import every plug-in)."""

    def format_help(self) -> str:
        from netemu.plugins import registry

        reg = registry()
        lines = [f"algorithms (netemu algorithms lists their parameters): {', '.join(reg.algorithms)}",
                 f"data kinds: {', '.join(reg.data)}"]
        lines += [f"plug-in not loaded: {b}" for b in reg.broken]
        return super().format_help() + "\n" + "\n".join(lines) + "\n"

    def error(self, message: str) -> NoReturn:
        """An argument refused: under `--log-format json` one `error` event (a JSON line, as every
        other line on stderr), and a bad `--log-format` itself in one line; else argparse's usage and line."""
        if json_format() or "--log-format" in message:
            command = self.prog.removeprefix("netemu").strip()
            event("error", f"netemu: {command + ': ' if command else ''}{message}", level="error", error="ArgumentError",
                  exit_code=EXIT_BAD_INPUT)
            raise SystemExit(EXIT_BAD_INPUT)
        super().error(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="netemu",
        description="Emulate networked federated learning: actors in virtual time over impaired links.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"netemu {__version__}")
    parser.add_argument("--log-format", choices=FORMATS, default="text", help=LOG_FORMAT)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (run, log, sweep, devices, plot, report, algorithms, validate):
        command.register(sub)
    for command_parser in _commands(parser):  # also after the command: netemu run X --log-format json
        command_parser.add_argument("--log-format", choices=FORMATS, default=argparse.SUPPRESS, help=LOG_FORMAT)
    return parser


def _commands(parser: argparse.ArgumentParser):
    """The parsers of `parser`'s commands and of theirs (netemu log summary, ...)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command_parser in action.choices.values():
                yield command_parser
                yield from _commands(command_parser)


LOG_FORMAT = ("how netemu's own messages (warnings, progress, errors, a run's lifecycle) print on stderr: "
              "text (default) for people, json for programs (one object per line)")


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """netemu's own warnings as a `warning` event (`netemu: warning: ...`); others (a NumPy overflow) as
    Python shows them, or under `--log-format json` as a `warning` event too: every line on stderr is JSON."""
    if not category.__module__.startswith("netemu") and json_format():
        return render("warning", f"{category.__name__}: {message}", level="warning", category=category.__name__,
                      source=f"{filename}:{lineno}") + "\n"
    if category.__module__.startswith("netemu"):
        from netemu.terminal import printable  # one line, as before

        return render("warning", f"netemu: warning: {printable(message)}", level="warning", category=category.__name__) + "\n"
    return _python_format_warning(message, category, filename, lineno, line)


_python_format_warning = warnings.formatwarning


def _requested_format(argv: list[str]) -> str:
    """The `--log-format` the command line asks for (the last one given), before it is parsed."""
    chosen = "text"
    for i, arg in enumerate(argv):
        value = arg.partition("=")[2] if arg.startswith("--log-format=") else argv[i + 1] if arg == "--log-format" and i + 1 < len(argv) else None
        if value in FORMATS:
            chosen = value
    return chosen


def main(argv: list[str] | None = None) -> int:
    from netemu.errors import WRITE_ERRNOS, NetemuError, WriteFailed

    argv = sys.argv[1:] if argv is None else argv
    with using(_requested_format(argv)):  # an argument error is told in the format asked for
        args = _parser().parse_args(argv)
    warnings.formatwarning = _format_warning  # Python prints the warnings (and tests record them) as before
    with using(args.log_format):
        try:
            return args.func(args)
        except BrokenPipeError:  # the reader (e.g. `| head`) has gone: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except NetemuError as exc:  # the one family of errors meant for people (netemu/errors.py)
            event("error", f"netemu: {exc}", level="error", error=type(exc).__name__, exit_code=exc.exit_code)
            return exc.exit_code
        except OSError as exc:  # a write the machine refused where no command named its file: still one line
            if exc.errno not in WRITE_ERRNOS:
                raise
            failed = WriteFailed(exc.filename if exc.filename is not None else "a file", exc)
            event("error", f"netemu: {failed}", level="error", error=type(failed).__name__, exit_code=failed.exit_code)
            return failed.exit_code

