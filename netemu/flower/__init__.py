"""Flower apps on netemu's network: an unmodified Flower ServerApp and ClientApp, their
messages crossing simulated links in virtual time (docs/flower.md).

    from netemu.flower import add_flower
    add_flower(world, "my_app.server_app:app", "my_app.client_app:app", run_config={...})
    world.run()

Needs Flower (`pip install 'netemu[flower]'`); `import netemu` never imports it.
"""

from netemu.errors import InputError


class FlowerMissing(InputError, ImportError):
    """netemu.flower was imported but Flower is not installed."""


try:
    import flwr  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise FlowerMissing("netemu.flower needs Flower: pip install 'netemu[flower]'") from exc

from netemu.flower.actors import FlowerAppFailed, FlowerNode, FlowerServer, add_flower, flower_nodes, flower_run_id  # noqa: E402
from netemu.flower.apps import FlowerAppError, load_client_app, load_server_app  # noqa: E402
from netemu.flower.grid import NetemuGrid  # noqa: E402
from netemu.flower.inprocess import run_inprocess  # noqa: E402
from netemu.flower.spec import SPEC, FlowerParams  # noqa: E402
from netemu.flower.work import WorkModel  # noqa: E402

__all__ = [
    "SPEC", "FlowerAppError", "FlowerAppFailed", "FlowerMissing", "FlowerNode", "FlowerParams", "FlowerServer",
    "NetemuGrid", "WorkModel", "add_flower", "flower_nodes", "flower_run_id", "load_client_app", "load_server_app",
    "run_inprocess",
]
