"""Async tests run on netemu's virtual-time loop: they finish instantly in wall time.

The tests' own NumPy work runs on one BLAS thread, as a run's does (netemu.run.runner.blas_threads):
their matrices are small, and a second thread only waits, many times over on a busy machine.

Property tests draw their examples from a fixed seed in CI (`CI` set), so a red CI run
can be reproduced; elsewhere they draw new examples on every run and keep a database of
failures, as Hypothesis does by default.
"""

import importlib
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from threadpoolctl import threadpool_limits

from netemu import plugins
from netemu.engine.clock import VirtualTimeLoop

threadpool_limits(1, user_api="blas")

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_asyncio_loop_factories(config, item):
    return {"virtual": VirtualTimeLoop}


EXAMPLE_PLUGIN = Path(__file__).resolve().parent.parent / "examples" / "netemu-fedasync"


@pytest.fixture(scope="session")
def fedasync():
    """The example plug-in, installed editable from examples/ if it is not yet."""
    try:
        dist = importlib.metadata.distribution("netemu-fedasync")
        installed = any(ep.value == "netemu_fedasync:SPEC" for ep in dist.entry_points)
    except importlib.metadata.PackageNotFoundError:
        installed = False
    if not installed:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(EXAMPLE_PLUGIN)],
                              capture_output=True, text=True)
        assert done.returncode == 0, f"pip install -e {EXAMPLE_PLUGIN} failed:\n{done.stderr}"
        # an editable install reaches sys.path at interpreter start-up: make this process see the
        # entry point it just registered too, or the registry here reports it as broken
        sys.path.insert(0, str(EXAMPLE_PLUGIN))
        importlib.invalidate_caches()
        plugins.refresh()
    return EXAMPLE_PLUGIN
