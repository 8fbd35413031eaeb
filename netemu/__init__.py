"""netemu: an emulator of networked federated-learning systems.

Actors are asyncio coroutines running in SimPy virtual time; they exchange
msgpack-encoded (partial) models over simulated links with delays, bandwidth
queues, losses and outages.  See README.md and docs/.
"""

from importlib.metadata import PackageNotFoundError, version

from netemu.actors import Actor
from netemu.cohort import Cohort
from netemu.clock import Deadlock, VirtualEnvironment, VirtualTimeLoop
from netemu.log import MessageLog
from netemu.net import *  # noqa: F403 - the network API is part of the public API
from netemu.net import __all__ as _net_all
from netemu.rng import Streams
from netemu.wire import PartialModel, WireError, decode, encode
from netemu.world import ActorFailed, DeadlockError, RunResult, World

try:
    __version__ = version("netemu")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"



def __getattr__(name: str):  # noqa: ANN202 - lazy: the runner sits below everything imported above
    """`netemu.run_folder(world_or_scenario, out)` = `netemu.runner.write_run_folder` (docs/actors.md)."""
    if name == "run_folder":
        from netemu.runner import write_run_folder

        return write_run_folder
    raise AttributeError(f"module 'netemu' has no attribute {name!r}")


__all__ = [
    "Actor", "ActorFailed", "Cohort", "Deadlock", "DeadlockError", "MessageLog", "PartialModel", "RunResult", "Streams",
    "VirtualEnvironment", "VirtualTimeLoop", "WireError", "World", "decode", "encode", "run_folder", "__version__", *_net_all,
]
