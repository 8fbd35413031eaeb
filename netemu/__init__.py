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
    from netemu.actors import Actor
    from netemu.clock import Deadlock, VirtualEnvironment, VirtualTimeLoop
    from netemu.cohort import Cohort
    from netemu.log import MessageLog
    from netemu.net import *  # noqa: F403 - the network API is part of the public API
    from netemu.net import __all__ as _net_all
    from netemu.rng import Streams
    from netemu.runner import write_run_folder as run_folder
    from netemu.wire import PartialModel, WireError, decode, encode
    from netemu.world import ActorFailed, DeadlockError, RunResult, World

    __version__: str
    __all__ = [
        "Actor", "ActorFailed", "Cohort", "Deadlock", "DeadlockError", "MessageLog", "PartialModel", "RunResult", "Streams",
        "VirtualEnvironment", "VirtualTimeLoop", "WireError", "World", "decode", "encode", "run_folder", "__version__",
        *_net_all,
    ]

_HOME = {
    "Actor": "netemu.actors", "Cohort": "netemu.cohort", "Deadlock": "netemu.clock", "VirtualEnvironment": "netemu.clock",
    "VirtualTimeLoop": "netemu.clock", "MessageLog": "netemu.log", "Streams": "netemu.rng", "PartialModel": "netemu.wire",
    "WireError": "netemu.wire", "decode": "netemu.wire", "encode": "netemu.wire", "ActorFailed": "netemu.world",
    "DeadlockError": "netemu.world", "RunResult": "netemu.world", "World": "netemu.world",
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("netemu")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0+unknown"


def __getattr__(name: str):  # PEP 562: a public name is imported on first use
    """The public API; `netemu.run_folder(world_or_scenario, out)` = `netemu.runner.write_run_folder` (docs/actors.md)."""
    value: object
    if name in _HOME:
        value = getattr(import_module(_HOME[name]), name)
    elif name == "run_folder":
        value = import_module("netemu.runner").write_run_folder
    elif name == "__version__":
        value = _version()
    elif name == "__all__":
        value = [*_HOME, "run_folder", "__version__", *import_module("netemu.net").__all__]
    elif not name.startswith("_") and name in import_module("netemu.net").__all__:
        value = getattr(import_module("netemu.net"), name)
    else:
        raise AttributeError(f"module 'netemu' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})
