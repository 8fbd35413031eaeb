"""Async tests run on netemu's virtual-time loop: they finish instantly in wall time."""

from netemu.clock import VirtualTimeLoop


def pytest_asyncio_loop_factories(config, item):
    return {"virtual": VirtualTimeLoop}
