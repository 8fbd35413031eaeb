"""Scenario files: schema, validation, and building Worlds from them."""

from netemu.scenario.load import Scenario, apply_overrides, load_scenario, parse_scenario
from netemu.scenario.schema import Issue, ScenarioError

__all__ = ["Issue", "Scenario", "ScenarioError", "apply_overrides", "load_scenario", "parse_scenario"]
