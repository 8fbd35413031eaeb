"""Configuration dataclasses check themselves: `require` raises a `ConfigError` that
names the offending field, so the scenario validator can report the dotted key."""

from __future__ import annotations

from netemu.errors import InputError

__all__ = ["ConfigError", "require"]


class ConfigError(InputError):
    def __init__(self, field: str, accepts: str) -> None:
        super().__init__(f"{field}: {accepts}")
        self.field, self.accepts = field, accepts


def require(condition: bool, field: str, accepts: str) -> None:
    """Raise ConfigError(field, accepts) unless `condition` holds."""
    if not condition:
        raise ConfigError(field, accepts)
