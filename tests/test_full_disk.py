"""Every file netemu writes may meet a full disk: the command ends in one line naming the file and
the reason (exit 1, never a traceback, never a success), and a run folder's summary.json, when it
can still be written, says complete = false.  The disk is a small tmpfs (root only; skipped otherwise)."""

import contextlib
import io
import json
import subprocess
import sys

import pytest

from helpers import small_disk, time_limit
from netemu.cli import main
from netemu.errors import EXIT_COMPLETE, EXIT_FAILED

SCENARIO = """
[run]
name = "tiny"
rounds = 20
[topology]
kind = "star"
clients = 10
[nodes]
speed = 500.0
[data]
kind = "linear"
dim = 3
[[algorithm]]
name = "fedavg"
round_time = 2.0
"""


def cli(args):
    out, err = io.StringIO(), io.StringIO()
    with time_limit(60), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, err.getvalue()


def refused_in_one_line(code, err, *needles):
    assert code == EXIT_FAILED, err
    assert err.startswith("netemu: cannot write ") and err.count("\n") == 1, err
    assert "No space left on device (ENOSPC)" in err and "Traceback" not in err
    for needle in needles:
        assert needle in err, err


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    base = tmp_path_factory.mktemp("disk")
    (base / "s.toml").write_text(SCENARIO)
    code, err = cli(["run", base / "s.toml", "--out", base / "run", "--quiet"])
    assert code == EXIT_COMPLETE, err
    return base


def test_a_run_that_fills_the_disk_stops_in_one_line_naming_the_log_and_the_folder_state(recorded, tmp_path):
    with small_disk(tmp_path / "disk", "32k") as disk:
        code, err = cli(["run", recorded / "s.toml", "--out", disk / "out", "--quiet"])
        refused_in_one_line(code, err, str(disk / "out" / "messages.jsonl"), "incomplete (no summary.json)")
        assert not (disk / "out" / "summary.json").exists()  # never a truncated one


def test_a_replay_that_fills_the_disk_is_not_a_success(recorded, tmp_path):
    with small_disk(tmp_path / "disk", "32k") as disk:
        code, err = cli(["replay", recorded / "run" / "trace.msgpack", "--scenario", recorded / "s.toml", "--out", disk / "out", "--quiet"])
        refused_in_one_line(code, err, str(disk / "out"))


def test_a_run_whose_log_is_refused_writes_a_summary_saying_incomplete(recorded, tmp_path):
    """A file-size limit refuses the log's writes past 20 kB while the small summary.json still fits."""
    out = tmp_path / "out"
    code = ("import resource, signal\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))\n"
            "from netemu.cli import main\n"
            f"raise SystemExit(main(['run', {str(recorded / 's.toml')!r}, '--out', {str(out)!r}, '--quiet']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_FAILED, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot write {out / 'messages.jsonl'}: File too large (EFBIG)" in done.stderr
    assert "summary.json: complete = false" in done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and "messages.jsonl" in summary["stopped_by"]


WRITERS = {
    "log export csv": lambda run, disk: ["log", "export", run, "--format", "csv", "--out", disk / "export"],
    "log export tensorboard": lambda run, disk: ["log", "export", run, "--format", "tensorboard", "--out", disk / "tb"],
    "log timeline": lambda run, disk: ["log", "timeline", run, "--out", disk / "t.png"],
    "report": lambda run, disk: ["report", run, "--out", disk / "r.html"],
    "plot": lambda run, disk: ["plot", run, "--metric", "mse", "--out", disk / "p.png"],
    "run": lambda run, disk: ["run", run / "scenario.toml", "--out", disk / "out", "--quiet"],
    "devices import": lambda run, disk: ["devices", "import", "--format", "netemu-csv", "--capacity", run.parent / "cap.csv",
                                         "--out", disk / "d.json"],
}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_every_command_that_writes_ends_in_one_line_on_a_full_disk(recorded, tmp_path, command):
    (recorded / "cap.csv").write_text("client,speed,bandwidth\nclient-0,2.0,1e6\n")
    with small_disk(tmp_path / "disk", "64k", fill=True) as disk:
        code, err = cli(WRITERS[command](recorded / "run", disk))
        refused_in_one_line(code, err, str(disk))
