"""Every scenario shipped in scenarios/ runs through `netemu run` (shortened)."""

import json
from pathlib import Path

import pytest

from netemu.cli import main

SCENARIOS = sorted((Path(__file__).parent.parent / "scenarios").glob("*.toml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_the_scenario_runs(path, tmp_path):
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet", "--runs", "1", "--set", "run.rounds=3"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and all(summary["final"][alg] for alg in summary["algorithms"])
    outcomes = [o for alg in summary["algorithms"] for o in summary["outcome"][alg]]
    assert [(o["rounds_planned"], o["rounds_done"], o["complete"]) for o in outcomes] == [(3, 3, True)] * len(outcomes)
