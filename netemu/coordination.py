"""The coordination patterns every FL algorithm needs, written once.

* `gather` — receive replies of one kind until a deadline, until every expected sender
  answered, or until a quorum of counted replies came; a reply counts if it is of the
  round asked for (or passes a caller's test), and every reply, counted or not, can be
  handed to the caller (late updates a server carries over, newer models a peer keeps).
* `participants`, `sample`, `keep_each` — who takes part in a round: the nodes whose
  participation draw succeeds, the k picked by keyed draws, or each kept with a
  probability; keyed draws, so every algorithm of a run picks the same nodes.
* `send_each` — one message per receiver (payloads that differ, e.g. per-client models);
  `Actor.broadcast` is the one-payload case.
* `gaussian_release` — local differential privacy: add N(0, σ² I) noise from the
  release's own stream and record its zCDP, Δ²/(2σ²), in the run's privacy ledger.

They use only the node port (`netemu.engine.port`: an `Actor`, or `Cohort.port(member)`): its one
waiting path, its sends, its draws and the control plane's `available`, so they run on any
transport.  Used by every built-in family; plug-ins use them the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netemu.engine.actors import Actor
from netemu.engine.net.network import Message
from netemu.engine.port import Kinds, NodePort
from netemu.privacy import zcdp_of_gaussian

Port = Actor | NodePort  # what the calls act through: an actor (its port), or a node port (a cohort member's)


def _port(actor: Port) -> NodePort:
    return actor.port if isinstance(actor, Actor) else actor

__all__ = ["Gathered", "gather", "gaussian_release", "keep_each", "participants", "sample", "send_each"]


@dataclass
class Gathered:
    """What `gather` received: the counted replies in arrival order (`messages`, with their
    arrival times `times`), the senders heard (`sources`), and whether it ended because
    every expected sender / the quorum answered (`complete`) rather than at the deadline."""

    messages: list[Message] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)
    complete: bool = False

    def __len__(self) -> int:
        return len(self.messages)


async def gather(
    actor: Port,
    kind: Kinds,
    until: float | None,
    *,
    round: int | None = None,
    counts: Callable[[Message], bool] | None = None,
    expected: Iterable[str] | None = None,
    quorum: int | None = None,
    on_message: Callable[[Message], object] | None = None,
) -> Gathered:
    """Receive `kind` messages until virtual time `until` (None: no deadline) or until done.

    A message *counts* if `counts(msg)` holds, else if its round is `round` (every message
    counts when neither is given).  Done: every sender in `expected` has a counted message,
    or `quorum` messages counted; with neither, only the deadline ends it.  `on_message(msg)`
    sees every message received, counted or not, before it is tested.  Nothing is received
    when the result is already done (an empty `expected`, a quorum of 0).  `counts` is a
    test without side effects.

    What is not used says why (`NodePort.unused`): a second copy of a message received in
    this gather (same id) is neither counted nor handed to `on_message` ("duplicate"); without
    `on_message`, a message that does not count is "late" when its round is before `round`
    (with how long after this node closed that round), else "discarded" — with `on_message`,
    the callback that sees it decides.  When the gather ends, the node's `closed[round]` is
    the time (a later message of that round is late by the time since).
    """
    if counts is None:
        counts = (lambda m: True) if round is None else (lambda m: m.round == round)
    waiting = None if expected is None else set(expected)
    got = Gathered()
    port = _port(actor)
    seen: set[int] = set()  # ids received: a second copy is a duplicate

    def done() -> bool:
        return (waiting is not None and not waiting) or (quorum is not None and len(got.messages) >= quorum)

    def take(msg: Message) -> None:
        if msg.id in seen:
            port.unused(msg, "duplicate")
            return
        seen.add(msg.id)
        if on_message is not None:
            on_message(msg)
        if counts(msg):
            got.messages.append(msg)
            got.times.append(actor.now)
            got.sources.add(msg.src)
            if waiting is not None:
                waiting.discard(msg.src)
        elif on_message is None:
            if round is not None and msg.round < round:
                port.unused(msg, "late", late=port.late_by(msg))
            else:
                port.unused(msg, "discarded")

    def ends(msg: Message) -> bool:
        """Whether `take(msg)` makes the gather done: foreseeable unless `on_message` may
        change what `counts` says."""
        if msg.id in seen or not counts(msg):
            return False
        return (quorum is not None and len(got.messages) + 1 >= quorum) or (waiting is not None and waiting <= {msg.src})

    await port.wait(kind, until=until, take=take, done=done, ends=ends if on_message is None else None)
    got.complete = done()
    if round is not None:
        port.closed[round] = port.now
    return got


def participants(actor: Port, candidates: Iterable[str], round: int) -> list[str]:
    """The candidates that check in for `round`, as the control plane reports them
    (`available`: each node's own keyed participation draw, the one its `participates`
    reads, drawn as one batch)."""
    return _port(actor).available(candidates, round)


def sample(actor: Port, stream: str, candidates: Collection[str], k: int, round: int) -> list[str]:
    """The `k` candidates with the smallest keyed draws of `stream` for `round` (ties by name);
    all of them when k is 0 or at least their number."""
    if k == 0 or k >= len(candidates):
        return list(candidates)
    draws = _port(actor).keyed(stream)
    return sorted(candidates, key=lambda c: (draws.uniform(c, round), c))[:k]


def keep_each(actor: Port, stream: str, candidates: Iterable[str], p: float, round: int) -> list[str]:
    """The candidates kept by a keyed Bernoulli(p) draw of `stream` each, for `round`."""
    if p >= 1:
        return list(candidates)
    draws = _port(actor).keyed(stream)
    return [c for c in candidates if draws.uniform(c, round) < p]


def send_each(actor: Port, kind: str, payloads: Mapping[str, Any], *, round: int | None = None) -> list[int]:
    """One message per receiver, `payloads[dst]` to `dst`, in the mapping's order, as one batch
    (`Actor.send_many`: the same ids, fates and records as one `send` each); the message ids."""
    return actor.send_many(list(payloads), kind, list(payloads.values()), round=round)


def gaussian_release(actor: Port, w: np.ndarray, sensitivity: float, variance: float, round: int) -> np.ndarray:
    """w + N(0, σ² I), σ² = `variance`, drawn from the stream `privacy/<node>/<round>`; records the
    release's ρ = Δ²/(2σ²) zCDP (Gaussian mechanism, thesis eqs. 3.13 / 5.32) for the node in
    the run's privacy ledger, where releases add up (Theorem 2.3)."""
    port = _port(actor)
    port.spend(round, zcdp_of_gaussian(sensitivity, variance))
    noise = port.stream(f"privacy/{port.name}/{round}").standard_normal(np.shape(w))
    return w + math.sqrt(variance) * noise
