"""netemu: an emulator of networked federated-learning systems.

Actors are asyncio coroutines running in SimPy virtual time; they exchange
msgpack-encoded (partial) models over simulated links with delays, bandwidth
queues, losses and outages.  See README.md and docs/.

The public names are imported when first used (PEP 562), not when `netemu` is: the
`netemu` command installs its signal handlers before its heavy imports (NumPy, SimPy,
networkx), so that Ctrl-C or SIGTERM at any instant ends in one line, never a traceback.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netemu.engine.actors import Actor
    from netemu.engine.clock import Deadlock, VirtualEnvironment, VirtualTimeLoop
    from netemu.engine.cohort import Cohort
    from netemu.log import MessageLog
    from netemu.engine.net import *  # noqa: F403 - the network API is part of the public API
    from netemu.engine.net import __all__ as _net_all
    from netemu.engine.rng import Streams
    from netemu.run.runner import write_run_folder as run_folder
    from netemu.wire import PartialModel, WireError, decode, encode
    from netemu.engine.world import ActorFailed, DeadlockError, RunResult, World

    __version__: str
    __all__ = [
        "Actor", "ActorFailed", "Cohort", "Deadlock", "DeadlockError", "MessageLog", "PartialModel", "RunResult", "Streams",
        "VirtualEnvironment", "VirtualTimeLoop", "WireError", "World", "decode", "encode", "run_folder", "__version__",
        *_net_all,
    ]

_HOME = {
    "Actor": "netemu.engine.actors", "Cohort": "netemu.engine.cohort", "Deadlock": "netemu.engine.clock", "VirtualEnvironment": "netemu.engine.clock",
    "VirtualTimeLoop": "netemu.engine.clock", "MessageLog": "netemu.log", "Streams": "netemu.engine.rng", "PartialModel": "netemu.wire",
    "WireError": "netemu.wire", "decode": "netemu.wire", "encode": "netemu.wire", "ActorFailed": "netemu.engine.world",
    "DeadlockError": "netemu.engine.world", "RunResult": "netemu.engine.world", "World": "netemu.engine.world",
}


def __getattr__(name: str):  # PEP 562: a public name is imported on first use
    """The public API; `netemu.run_folder(world_or_scenario, out)` = `netemu.run.runner.write_run_folder` (docs/actors.md)."""
    value: object
    if name in _HOME:
        value = getattr(import_module(_HOME[name]), name)
    elif name == "run_folder":
        value = import_module("netemu.run.runner").write_run_folder
    elif name == "__version__":
        value = import_module("netemu.version").__version__
    elif name == "__all__":
        value = [*_HOME, "run_folder", "__version__", *import_module("netemu.engine.net").__all__]
    elif not name.startswith("_") and name in import_module("netemu.engine.net").__all__:
        value = getattr(import_module("netemu.engine.net"), name)
    else:
        raise AttributeError(f"module 'netemu' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})
