"""What a `netemu run` pays for before and after its emulation (tools/bench_startup.py measures it):
modules a run does not use are not imported, so a short run is not mostly start-up."""

import json
import subprocess
import sys
from pathlib import Path

from netemu.run.progress import PlainProgress, Silent, progress

ROOT = Path(__file__).resolve().parent.parent


def _modules_after(code: str) -> dict:
    """`code` run in a fresh interpreter, then which of a few heavy modules it had imported."""
    report = ("import json, sys; print(json.dumps({m: m in sys.modules for m in "
              "('tqdm', 'scipy.special', 'scipy.stats', 'matplotlib')}))")
    done = subprocess.run([sys.executable, "-c", code + "\n" + report], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_quiet_run_has_a_silent_progress_display_and_a_plain_one_off_a_terminal(tmp_path):
    with progress(10, quiet=True) as bar:
        assert isinstance(bar, Silent)
        bar.set_postfix_str("fedavg run 0")
        bar.update(3)
        bar.refresh()
    assert (bar.total, bar.n) == (10, 0)  # as a disabled tqdm: nothing counted, nothing printed
    with open(tmp_path / "err", "w") as stream:
        with progress(10, label="x", stream=stream) as bar:
            assert isinstance(bar, PlainProgress)


def test_a_quiet_run_of_the_quick_start_imports_neither_tqdm_nor_scipy(tmp_path):
    """The quick start (3 runs: a t-interval in summary.json and on every curve) without tqdm (--quiet),
    scipy.special (the t quantile written out) or scipy.stats; matplotlib only when it draws."""
    def run(out: str, plots: bool) -> str:
        extra = [] if plots else ["--set", "output.plots=false"]
        args = ["run", "scenarios/quickstart.toml", "--quiet", "--out", str(tmp_path / out), "--set", "run.rounds=3", *extra]
        return f"from netemu.cli import main\nassert main({args!r}) == 0"

    assert _modules_after(run("a", plots=False)) == {"tqdm": False, "scipy.special": False, "scipy.stats": False, "matplotlib": False}
    assert _modules_after(run("b", plots=True)) == {"tqdm": False, "scipy.special": False, "scipy.stats": False, "matplotlib": True}


def test_the_modules_a_command_imports_are_frozen_once_out_of_the_collectors_way():
    """netemu.cli.main imports its modules with the collector paused and freezes what they made
    (gc.freeze); the collector is on again after, and a second command in the process freezes nothing more."""
    code = ("import gc; from netemu.cli import main\n"
            "assert main(['validate', 'scenarios/quickstart.toml']) == 0; first = gc.get_freeze_count()\n"
            "assert main(['validate', 'scenarios/quickstart.toml']) == 0\n"
            "print(first > 10000, gc.get_freeze_count() == first, gc.isenabled())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.split()[-3:] == ["True", "True", "True"]
