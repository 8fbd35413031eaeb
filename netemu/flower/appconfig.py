"""A Flower app's own run config: the `[tool.flwr.app.config]` defaults of the pyproject.toml
in its `app_dir`, overridden by the scenario's `run_config` exactly as `flwr run` merges them
(flwr.common.config: nested tables flattened to dotted keys, then `fuse_dicts` with key
checking: a key the app does not declare is refused).  An app without a pyproject.toml or
without that table has no defaults: `run_config` is used as it is.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from netemu.config import ConfigError

__all__ = ["app_defaults", "fused_run_config"]

_VALUES = (bool, int, float, str)


def _flatten(table: Mapping[str, Any], path: Path, parent: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{parent}.{key}" if parent else str(key)
        if isinstance(value, Mapping):
            out.update(_flatten(value, path, name))
        elif isinstance(value, _VALUES):
            out[name] = value
        else:
            raise ConfigError("app_dir", f"a pyproject.toml whose [tool.flwr.app.config] holds bools, integers, floats, "
                              f"strings or tables of them ({path}: {name} = {value!r})")
    return out


def app_defaults(app_dir: str | Path | None) -> dict[str, Any] | None:
    """The flattened `[tool.flwr.app.config]` of `app_dir`/pyproject.toml (Flower's `flatten_dict`),
    or None when there is no such file or no `[tool.flwr.app]` table."""
    if not app_dir:
        return None
    path = Path(app_dir) / "pyproject.toml"
    if not path.is_file():
        return None
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError("app_dir", f"a readable pyproject.toml ({path}: {exc})") from None
    app = doc.get("tool", {}).get("flwr", {}).get("app") if isinstance(doc.get("tool"), dict) else None
    if not isinstance(app, dict):
        return None
    config = app.get("config", {})
    if not isinstance(config, dict):
        raise ConfigError("app_dir", f"a pyproject.toml whose [tool.flwr.app.config] is a table ({path})")
    return _flatten(config, path)


def fused_run_config(app_dir: str | Path | None, run_config: Mapping[str, Any]) -> dict[str, Any]:
    """The app's defaults with `run_config` on top (`flwr run`'s `fuse_dicts(defaults, overrides)`);
    a key of `run_config` the app does not declare is a ConfigError naming `run_config.KEY`."""
    defaults = app_defaults(app_dir)
    if defaults is None:
        return dict(run_config)
    for key in run_config:
        if key not in defaults:
            raise ConfigError(f"run_config.{key}", f"a key of the app's [tool.flwr.app.config] in {Path(str(app_dir)) / 'pyproject.toml'} "
                              f"(declared: {', '.join(defaults) or 'none'}); `flwr run` refuses any other")
    return {**defaults, **run_config}
