"""A signal at any instant of `netemu run` — while Python imports netemu, while the scenario
is read, while graphs and worlds are built, inside a garbage-collection callback, between runs —
ends in one line on stderr and the documented exit code, never a traceback, and a run folder
(when one exists) that says complete: false (issue "Hostile inputs, second round", A)."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netemu.errors import EXIT_INTERRUPTED, EXIT_TERMINATED
from netemu.run.signals import Terminated, cli_signals, raise_pending, stop_on_signals

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "scenarios" / "quickstart.toml"
CODES = {signal.SIGTERM: EXIT_TERMINATED, signal.SIGINT: EXIT_INTERRUPTED}


def handles(pid: int, sig: int) -> bool:
    """Whether the process has a handler for `sig` (Linux: /proc/PID/status, SigCgt)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (sig - 1) & 1)


def start(out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "netemu.cli", "run", str(QUICKSTART), "--set", "run.rounds=2",
                             "--runs", "3000", "--out", str(out), "--quiet", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def check(proc: subprocess.Popen, sig: int, out: Path) -> str:
    _, err = proc.communicate(timeout=60)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == CODES[sig], err
    assert len(lines) == 1 and lines[0].startswith("netemu: "), err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if out.exists():
        summary = json.loads((out / "summary.json").read_text())
        assert summary["complete"] is False, summary["stopped_by"]
        assert summary["stopped_by"] in ("terminated (SIGTERM)", "interrupted (Ctrl-C)")
    return err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_python_imports_netemu_is_one_line_and_no_folder(tmp_path, sig):
    out = tmp_path / "out"
    proc = start(out)
    deadline = time.monotonic() + 30
    while not handles(proc.pid, signal.SIGTERM):  # the first instant netemu can answer: its imports have just begun
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.001)
    proc.send_signal(sig)
    check(proc, sig, out)
    assert not out.exists()


@pytest.mark.parametrize(("sig", "delay"), [(signal.SIGTERM, 0.15), (signal.SIGINT, 0.4), (signal.SIGTERM, 0.8),
                                            (signal.SIGINT, 1.3), (signal.SIGTERM, 2.0)])
def test_a_signal_at_any_instant_of_a_run_is_one_line_and_an_incomplete_folder(tmp_path, sig, delay):
    out = tmp_path / "out"
    proc = start(out)
    deadline = time.monotonic() + 30
    while not handles(proc.pid, signal.SIGTERM):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.001)
    time.sleep(delay)
    proc.send_signal(sig)
    check(proc, sig, out)


@pytest.mark.slow  # ~40 runs of a few seconds: the loop that showed a lost SIGTERM (2 of ~70 trials)
def test_sigterm_is_never_lost_over_many_trials(tmp_path):
    for i in range(40):
        out = tmp_path / f"out{i}"
        proc = start(out)
        time.sleep(0.2 + 0.1 * i)
        proc.send_signal(signal.SIGTERM)
        check(proc, signal.SIGTERM, out)


class _RaisesInDel:
    """Sends SIGTERM to this process from its `__del__`: a signal that lands in a
    garbage-collection callback, where an exception is printed as "Exception ignored" and lost."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGTERM)


def test_a_signal_inside_a_gc_callback_is_raised_at_the_next_safe_point(capsys):
    with pytest.raises(Terminated), cli_signals(), stop_on_signals():
        _RaisesInDel()  # collected at once: the handler runs inside __del__
        gc.collect()
    assert "Exception ignored" not in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the __del__ swallows it, on purpose
def test_a_signal_swallowed_before_a_run_is_raised_when_the_run_starts(capsys):
    with cli_signals():
        _RaisesInDel()  # outside a run the handler raises at once; here a __del__ swallows it
        with pytest.raises(Terminated), stop_on_signals():
            pytest.fail("the run must not start after a SIGTERM")
    capsys.readouterr()


def test_a_pending_signal_keeps_a_run_from_being_called_complete(tmp_path, monkeypatch):
    from netemu.run import runner
    from netemu.scenario import load_scenario

    real = runner.release

    def release(g):  # a SIGTERM while the topologies are fingerprinted, inside a collected object's __del__
        real(g)
        _RaisesInDel()

    monkeypatch.setattr(runner, "release", release)
    # two runs: a one-run scenario keeps its graph for its world instead of releasing it
    sc = load_scenario(QUICKSTART, ["run.rounds=2", "run.runs=2"])
    with pytest.raises(Terminated), cli_signals(), stop_on_signals():
        runner.execute(sc, tmp_path / "out", quiet=True)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["complete"] is False and summary["stopped_by"] == "terminated (SIGTERM)"


def test_raise_pending_without_a_signal_does_nothing():
    raise_pending()
