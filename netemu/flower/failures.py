"""What happens when a Flower app raises: `on_client_error`'s choices, and the error that
stops the run.  Apart from the actors that act on them (netemu.flower.actors, which needs
Flower), so that the scenario's spec checks the choice without importing either.
"""

from __future__ import annotations

from netemu.errors import RunStopped

__all__ = ["ON_CLIENT_ERROR", "FlowerAppFailed"]

#: what `on_client_error` accepts: Flower's error reply (as its runtime sends), or stop the run
ON_CLIENT_ERROR = ("reply", "stop")


class FlowerAppFailed(RunStopped):
    """A Flower ServerApp or ClientApp raised: the run stopped.  The first line names the
    node, the virtual time and the Flower message type; the app's traceback follows."""

    def __init__(self, line: str, details: str) -> None:
        super().__init__(f"{line}\n{details}")
        self.line, self.details = line, details
