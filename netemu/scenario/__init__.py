"""Scenario files: schema, validation, and building Worlds from them."""

from netemu.scenario.load import Scenario, load_scenario, parse_scenario
from netemu.scenario.overrides import apply_overrides
from netemu.scenario.schema import Issue, ScenarioError

__all__ = ["Issue", "Scenario", "ScenarioError", "apply_overrides", "load_scenario", "parse_scenario"]
