"""A cohort's member logic run as one actor per client (`Solo`), and `add_clients`, which adds
clients either way: the same logic, the same records (netemu.engine.cohort, docs/actors.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from netemu.engine.actors import Actor
from netemu.engine.cohort import Cohort

if TYPE_CHECKING:
    from netemu.engine.port import Engine
    from netemu.engine.world import World

__all__ = ["Solo", "add_clients"]


class Solo(Actor):
    """A cohort's member logic run for one client as its own actor: one task and one inbox,
    `await recv(receives)` then `on_message`, and a `compute` / `sleep` of the logic as
    an `await` of this task.  One actor per client with the very logic the cohort runs for
    many: `Solo(Clients("client-3", ["client-3"], ...))`.  The record order is the
    actor's; the cohort's is made to equal it (tests/test_cohort.py)."""

    daemon = True

    def __init__(self, logic: Cohort) -> None:
        if len(logic.members) != 1:
            raise ValueError(f"Solo runs one member's logic; cohort {logic.name!r} has {len(logic.members)}")
        super().__init__(logic.members[0].name)
        self.logic, self.member = logic, logic.members[0]
        self.then: tuple[float, Callable[..., object], tuple] | None = None  # what the logic does after a sleep
        logic._solo = self

    def host_attach(self, engine: Engine) -> None:
        super().host_attach(engine)
        self.logic.world, self.logic.engine = self.world, engine
        self.logic._answers_check_in(engine)

    async def run(self) -> None:
        logic, m = self.logic, self.member
        if logic._starts():
            logic.on_member_start(m)
            await self._follow()
        while True:
            msg = await self.recv(logic.receives)
            logic.on_message(m, msg)
            await self._follow()

    async def _follow(self) -> None:
        """The logic's computes and sleeps, each awaited, then its callback."""
        while self.then is not None:
            seconds, then, args = self.then
            self.then = None
            await self.sleep(seconds)
            then(self.member, *args)

    def on_crash(self) -> None:
        self.then = None
        self.logic.on_member_crash(self.member)

    def on_recover(self) -> None:
        self.member.incarnation += 1
        self.logic.on_member_recover(self.member)


def add_clients(world: World, make: Callable[[str, list[str]], Cohort], name: str, clients: Sequence[str], *,
                cohort: bool = True) -> None:
    """Add `clients` to `world` running the member logic `make(name, members)` builds: as one
    cohort named `name` (`cohort=True`), or as one `Solo` actor each, `make(client, [client])`."""
    if cohort:
        world.add(make(name, list(clients)))
    else:
        for client in clients:
            world.add(Solo(make(client, [client])))
