"""Every scenario shipped in scenarios/ runs through `netemu run` (shortened)."""

import importlib.util
import json
import tomllib
from pathlib import Path

import pytest

from netemu.cli import main

SCENARIOS = sorted((Path(__file__).parent.parent / "scenarios").glob("*.toml"))


def needs_flower(path: Path) -> bool:
    """A scenario that runs a Flower app: a [flower] table or an algorithm named flower."""
    table = tomllib.loads(path.read_text())
    return "flower" in table or any(a.get("name") == "flower" for a in table.get("algorithm", []))


#: every shipped scenario; a Flower one is skipped, saying why, where the [flower] extra is missing
SHIPPED = [pytest.param(p, id=p.stem, marks=pytest.mark.skipif(
    needs_flower(p) and importlib.util.find_spec("flwr") is None,
    reason=f"{p.name} runs a Flower app: needs the extra, pip install -e '.[flower]'")) for p in SCENARIOS]


#: scenarios shrunk further than to 3 rounds (the MNIST study's 8-channel CNN took ~25 s on all 8,000 digits)
SMALLER = {"study_mnist_cnn": ["data.max_train=2000", "topology.clients=20", "task.channels=2"],
           "study_mnist_mlp": ["data.max_train=2000", "topology.clients=20"]}


@pytest.mark.parametrize("path", SHIPPED)
def test_the_scenario_runs(path, tmp_path):
    out = tmp_path / "out"
    sets = [arg for key in ["run.rounds=3", *SMALLER.get(path.stem, [])] for arg in ("--set", key)]
    assert main(["run", str(path), "--out", str(out), "--quiet", "--runs", "1", *sets]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and all(summary["final"][alg] for alg in summary["algorithms"])
    outcomes = [o for alg in summary["algorithms"] for o in summary["outcome"][alg]]
    assert [(o["rounds_planned"], o["rounds_done"], o["complete"]) for o in outcomes] == [(3, 3, True)] * len(outcomes)
