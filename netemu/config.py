"""Configuration dataclasses check themselves: `require` raises a `ConfigError` that
names the offending field, so the scenario validator can report the dotted key.  A field
declared with `deadline(default)` bounds a round's length (`deadlines` lists them)."""

from __future__ import annotations

import dataclasses
from typing import Any

from netemu.errors import InputError

__all__ = ["ConfigError", "deadline", "deadlines", "require"]


class ConfigError(InputError):
    def __init__(self, field: str, accepts: str) -> None:
        super().__init__(f"{field}: {accepts}")
        self.field, self.accepts = field, accepts


def require(condition: bool, field: str, accepts: str) -> None:
    """Raise ConfigError(field, accepts) unless `condition` holds."""
    if not condition:
        raise ConfigError(field, accepts)


def deadline(default: float) -> Any:
    """A params field in virtual seconds that bounds how long a round waits (a round time, a
    timeout): a run's automatic horizon allows each round twice the longest (`run.max_time = 0`)."""
    return dataclasses.field(default=default, metadata={"deadline": True})


def deadlines(params: type) -> tuple[str, ...]:
    """The names of the fields of the params dataclass `params` declared with `deadline`."""
    return tuple(f.name for f in dataclasses.fields(params) if f.metadata.get("deadline"))
