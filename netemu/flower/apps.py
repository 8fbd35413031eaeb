"""Load a Flower ServerApp or ClientApp named "package.module:attribute".

Every way this can go wrong is a one-line `FlowerAppError` naming the setting, the
reference and what is accepted: a module that cannot be imported, a missing
attribute, an object that is not a `flwr.serverapp.ServerApp` / `flwr.clientapp.ClientApp`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp

from netemu.errors import InputError

__all__ = ["FlowerAppError", "compiled_without_source", "load_app", "load_client_app", "load_server_app", "locate"]

_KINDS = {"ServerApp": ServerApp, "ClientApp": ClientApp}
_ACCEPTS = {
    "ServerApp": "'package.module:attribute' naming a flwr.serverapp.ServerApp",
    "ClientApp": "'package.module:attribute' naming a flwr.clientapp.ClientApp",
}


class FlowerAppError(InputError):
    """A Flower app that cannot be found or is not the kind of app expected.
    `setting` names the parameter, `reason` says what is wrong with its value."""

    def __init__(self, setting: str, reason: str) -> None:
        super().__init__(f"{setting}: {reason}")
        self.setting, self.reason = setting, reason


def compiled_without_source(app_dir: str | Path) -> list[Path]:
    """Compiled modules in `app_dir` that the import system would run although netemu hashes
    only the `.py` files it announces (`script_hash`): a `.pyc` outside `__pycache__` (a
    sourceless module) and extension modules (`.so`, `.pyd`)."""
    suffixes = (".pyc", *importlib.machinery.EXTENSION_SUFFIXES)
    root = Path(app_dir)
    return sorted(p for p in root.rglob("*") if p.name.endswith(suffixes) and "__pycache__" not in p.relative_to(root).parts)


@contextlib.contextmanager
def _source_only() -> Iterator[None]:
    """Imports meanwhile compile from the `.py` files and write no bytecode: cached `.pyc` files
    are looked up in a fresh, empty folder (`sys.pycache_prefix`), so a stale cache beside the
    sources cannot run instead of what was hashed."""
    prefix, dont_write = sys.pycache_prefix, sys.dont_write_bytecode
    with tempfile.TemporaryDirectory(prefix="netemu-nocache-") as empty:
        sys.pycache_prefix, sys.dont_write_bytecode = empty, True
        try:
            yield
        finally:
            sys.pycache_prefix, sys.dont_write_bytecode = prefix, dont_write


def locate(module: str, app_dir: str | Path) -> bool:
    """Whether `module` (dotted) exists under `app_dir`, found without executing any of it
    (no package `__init__` runs, unlike `importlib.util.find_spec` on a dotted name)."""
    from importlib.machinery import PathFinder

    search: list[str] | None = [str(Path(app_dir).resolve())]
    parts = module.split(".")
    for i in range(len(parts)):
        if search is None:
            return False
        spec = PathFinder.find_spec(".".join(parts[: i + 1]), search)
        if spec is None:
            return False
        search = list(spec.submodule_search_locations) if spec.submodule_search_locations is not None else None
    return True


def load_app(ref: Any, kind: str, *, setting: str | None = None, app_dir: str | Path | None = None) -> Any:
    """The app `ref` names (or `ref` itself if it already is an app) of `kind`
    ("ServerApp" or "ClientApp"); `app_dir` is put first on sys.path, as `flwr run` does."""
    cls = _KINDS[kind]
    setting = setting or kind
    accepts = _ACCEPTS[kind]
    if isinstance(ref, cls):
        return ref
    if not isinstance(ref, str):
        raise FlowerAppError(setting, f"{type(ref).__name__} object {ref!r} is not a {cls.__module__}.{kind}; accepted: {accepts}")
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise FlowerAppError(setting, f"{ref!r} is not of the form 'package.module:attribute'; accepted: {accepts}")
    if app_dir:
        path = str(Path(app_dir).resolve())
        compiled = compiled_without_source(path)
        if compiled:
            raise FlowerAppError(setting, f"{compiled[0]}: compiled Python without its source in app_dir {str(app_dir)!r} "
                                 f"({len(compiled)} such file(s)); netemu runs only the .py files whose hash it prints: "
                                 "remove it or ship its source")
        if path not in sys.path:
            sys.path.insert(0, path)
    try:
        with _source_only():
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            where = f" (searched sys.path, app_dir {str(app_dir)!r})" if app_dir else ""
            raise FlowerAppError(setting, f"{ref!r}: no module named {exc.name!r}{where}; accepted: {accepts}") from None
        raise FlowerAppError(setting, f"{ref!r}: importing {module_name!r} failed: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module raised while being imported
        raise FlowerAppError(setting, f"{ref!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise FlowerAppError(setting, f"{ref!r}: module {module_name!r} has no attribute {attr!r}; accepted: {accepts}")
        obj = getattr(obj, part)
    if not isinstance(obj, cls):
        raise FlowerAppError(setting, f"{ref!r} is a {type(obj).__name__}, not a {cls.__module__}.{kind}; accepted: {accepts}")
    return obj


def load_server_app(ref: Any, **kw: Any) -> ServerApp:
    return load_app(ref, "ServerApp", **kw)


def load_client_app(ref: Any, **kw: Any) -> ClientApp:
    return load_app(ref, "ClientApp", **kw)
