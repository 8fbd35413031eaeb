"""Flower apps on netemu's network: an unmodified Flower ServerApp and ClientApp, their
messages crossing simulated links in virtual time (docs/flower.md).

    from netemu.flower import add_flower
    add_flower(world, "my_app.server_app:app", "my_app.client_app:app", run_config={...})
    world.run()

Needs Flower (`pip install 'netemu[flower]'`); `import netemu` never imports it.  The
algorithm spec (`SPEC`, `FlowerParams`, `WorkModel`) imports without Flower, so that a
registry can list the family; everything else raises `FlowerMissing` without it.
"""

from typing import Any

from netemu.errors import InputError
from netemu.flower.failures import FlowerAppFailed
from netemu.flower.spec import SPEC, FlowerParams
from netemu.flower.work import WorkModel


class FlowerMissing(InputError, ImportError):
    """A part of netemu.flower that needs Flower was used, and Flower is not installed."""


_NEEDS_FLOWER = {
    "FlowerAppError": "apps", "load_client_app": "apps", "load_server_app": "apps",
    "FlowerNode": "actors", "FlowerServer": "actors", "add_flower": "actors",
    "flower_nodes": "actors", "flower_run_id": "actors", "NetemuGrid": "grid", "run_inprocess": "inprocess",
}

__all__ = [
    "SPEC", "FlowerAppError", "FlowerAppFailed", "FlowerMissing", "FlowerNode", "FlowerParams", "FlowerServer", "NetemuGrid",
    "WorkModel", "add_flower", "flower_nodes", "flower_run_id", "load_client_app", "load_server_app", "run_inprocess",
]


def __getattr__(name: str) -> Any:
    """The Flower-dependent API, imported on first use."""
    module = _NEEDS_FLOWER.get(name)
    if module is None:
        raise AttributeError(f"module 'netemu.flower' has no attribute {name!r}")
    try:
        import flwr  # noqa: F401
    except ImportError:
        raise FlowerMissing(f"netemu.flower.{name} needs Flower: pip install 'netemu[flower]'") from None
    import importlib

    value = getattr(importlib.import_module(f"netemu.flower.{module}"), name)
    globals()[name] = value
    return value
