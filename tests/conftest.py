"""Async tests run on netemu's virtual-time loop: they finish instantly in wall time.

Property tests draw their examples from a fixed seed in CI (`CI` set), so a red CI run
can be reproduced; elsewhere they draw new examples on every run and keep a database of
failures, as Hypothesis does by default.
"""

import os

from hypothesis import settings

from netemu.clock import VirtualTimeLoop

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_asyncio_loop_factories(config, item):
    return {"virtual": VirtualTimeLoop}
