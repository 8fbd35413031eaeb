"""An unmodified Flower ServerApp and ClientApp on netemu's network (docs/flower.md).

The Flower family as an algorithm spec, for the plug-in registry (a scenario's top-level
`[flower]` table is the same entry without `name`):

    [[algorithm]]
    name = "flower"
    server_app = "flower_digits.server_app:app"
    client_app = "flower_digits.client_app:app"
    app_dir = "../examples/flower-digits"        # relative to the scenario
    run_config = { "local-epochs" = 2, "round-timeout" = 30.0 }
    console = "info"                             # show Flower's INFO output (default: warnings and errors)
    on_client_error = "reply"                    # a ClientApp that raises sends Flower's error reply ("stop": the run stops)

The run config is the app's `[tool.flwr.app.config]` (pyproject.toml in `app_dir`) with
`run_config` on top, merged as `flwr run` merges them (netemu/flower/appconfig.py); `run.rounds`
becomes its "num-server-rounds" unless `run_config` sets it.  A Flower app loads its own data: a scenario needs no `[data]` table.  This module imports
without Flower installed (so a registry can list the family); building a run needs it.
"""

from __future__ import annotations

from collections.abc import Callable
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from netemu.algorithms.base import ONE_SERVER, AlgorithmSpec
from netemu.config import ConfigError, require
from netemu.flower.appconfig import app_defaults, fused_run_config
from netemu.flower.failures import ON_CLIENT_ERROR
from netemu.flower.work import WorkModel
from netemu.engine.world import World

__all__ = ["CONSOLE_LEVELS", "SPEC", "FlowerParams", "build"]

#: what `console` accepts: Flower's INFO output (every round's summary) is hidden by default
CONSOLE_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def _is_ref(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    module, sep, attr = value.partition(":")
    return bool(sep and module and attr)


@dataclass(frozen=True)
class FlowerParams:
    server_app: str = ""
    client_app: str = ""
    app_dir: str = ""
    run_config: dict = field(default_factory=dict)
    examples_key: str = "num-examples"
    epochs_key: str = "local-epochs"
    train_per_example: float = 1.0
    evaluate_per_example: float = 0.1
    per_message: float = 0.0
    console: str = "warning"
    on_client_error: str = "reply"
    wait_warning: float = 600.0  # virtual seconds: a longer wait of the ServerApp is a summary warning

    def __post_init__(self) -> None:
        require(_is_ref(self.server_app), "server_app", "'package.module:attribute' naming a flwr.serverapp.ServerApp")
        require(_is_ref(self.client_app), "client_app", "'package.module:attribute' naming a flwr.clientapp.ClientApp")
        require(isinstance(self.run_config, dict), "run_config", "a table of Flower run-config values")
        for key, value in self.run_config.items():
            require(isinstance(value, (bool, int, float, str)), f"run_config.{key}", "a bool, integer, float or string")
        require(self.console in CONSOLE_LEVELS, "console", f"one of {', '.join(CONSOLE_LEVELS)} (the least severe Flower "
                "log record shown on the console during the run)")
        require(self.on_client_error in ON_CLIENT_ERROR, "on_client_error", "'reply' (a ClientApp that raises sends Flower's "
                "error reply, counted in the summary's warnings) or 'stop' (the run stops)")
        require(isinstance(self.wait_warning, (int, float)) and not isinstance(self.wait_warning, bool) and self.wait_warning > 0,
                "wait_warning", "a positive number of virtual seconds (a longer wait of the ServerApp is a summary warning)")
        self.work()  # checks the work-model fields
        if not self.app_dir or Path(self.app_dir).is_absolute():  # a relative one waits for with_paths (the scenario's folder)
            self._check_apps()

    def _check_apps(self) -> None:
        """Both apps load (so that `netemu validate` refuses what would fail when the run is built).
        Apps in `app_dir` ship with the scenario: they are only located here, never executed
        (issue 19: validate runs no code a scenario brings); their attributes are checked when
        the run is built, after `netemu run` has named the code it executes."""
        try:
            import flwr  # noqa: F401
        except ImportError:
            raise ConfigError("server_app", "Flower installed to run a Flower app: pip install 'netemu[flower]'") from None
        from netemu.flower.apps import FlowerAppError, compiled_without_source, load_app, locate

        if self.app_dir:
            fused_run_config(self.app_dir, self.run_config)  # keys the app's pyproject.toml does not declare: refused, as by `flwr run`
            compiled = compiled_without_source(self.app_dir) if Path(self.app_dir).is_dir() else []
            if compiled:
                raise ConfigError("app_dir", f"{self.app_dir!r} holds compiled Python without its source ({compiled[0]}); "
                                  "netemu runs only the .py files whose hash it prints: remove it or ship its source")
            for setting in ("server_app", "client_app"):
                module = getattr(self, setting).partition(":")[0]
                if not locate(module, self.app_dir):
                    raise ConfigError(setting, f"{getattr(self, setting)!r}: no module {module!r} in app_dir {self.app_dir!r}")
            return

        for setting, kind in (("server_app", "ServerApp"), ("client_app", "ClientApp")):
            try:
                load_app(getattr(self, setting), kind, setting=setting, app_dir=self.app_dir or None)
            except FlowerAppError as exc:
                raise ConfigError(setting, exc.reason) from None

    def work(self) -> WorkModel:
        return WorkModel(self.examples_key, self.epochs_key, self.train_per_example, self.evaluate_per_example, self.per_message)

    def code(self) -> list[tuple[str, str]]:
        """Python code shipped with the scenario that a run executes (announced by `netemu run`)."""
        return [("app_dir", self.app_dir)] if self.app_dir else []

    def with_paths(self, resolve: Callable[[str], str]) -> FlowerParams:
        """app_dir relative to the scenario file, made absolute (the copy checks that the apps load
        from there, whatever the working directory and however the scenario's path was given)."""
        return replace(self, app_dir=str(Path(resolve(self.app_dir)).resolve())) if self.app_dir else self


def build(world: World, params: FlowerParams, data: Any, rounds: int) -> None:
    from netemu.flower.actors import add_flower  # Flower is imported when a run is built (FlowerMissing if absent)

    defaults = app_defaults(params.app_dir or None)
    run_config = dict(params.run_config)
    if "num-server-rounds" not in run_config and (defaults is None or "num-server-rounds" in defaults):
        run_config["num-server-rounds"] = rounds  # run.rounds, over the app's own default
    add_flower(world, params.server_app, params.client_app, run_config=run_config, work=params.work(),
               app_dir=params.app_dir or None, console=CONSOLE_LEVELS[params.console], on_client_error=params.on_client_error,
               wait_warning=float(params.wait_warning))


SPEC = AlgorithmSpec("flower", FlowerParams, build, datasets=(), roles=("server", "client"), doc=__doc__,
                     requires=(ONE_SERVER,), needs_data=False)  # add_flower: one server (the SuperLink side), its clients the Flower nodes
