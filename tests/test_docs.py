"""Docs that cannot drift: every Python block of README.md and docs/*.md runs here.

A fenced block tagged `python` is executed; the blocks of one file run in order in one
namespace (like a notebook), in a fresh working directory.  A block whose first line is
`# file: PATH` is a file: if PATH is in the repository the block must equal it verbatim,
otherwise it is written to PATH in the working directory and imported by later blocks.
A block that cannot run is preceded by `<!-- not run: why -->`; one that needs an optional
extra by `<!-- needs: module ... -->` (skipped when one of the modules is not installed).  The working
directory links the repository's `examples/` and `scenarios/`, so paths written "from the
repository root" work.  Python outside a
`python` block (an indented block with imports or definitions) is refused, so examples
cannot escape the test by their formatting.
"""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
SKIP = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->\s*$")
NEEDS = re.compile(r"<!--\s*needs:\s*([\w. ]+?)\s*-->\s*$")
PYTHONISH = re.compile(r"^    (import \w|from [\w.]+ import |def \w+\(|class \w+[(:]|async def )", re.M)


def python_blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, code, why it is not run or None) of every ```python block (a missing module it needs is a why)."""
    text = path.read_text()
    out = []
    for m in FENCE.finditer(text):
        if m.group(1) != "python":
            continue
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip, needs = SKIP.search(before), NEEDS.search(before)
        why = skip.group(1) if skip else None
        missing = [m for m in needs.group(1).split() if importlib.util.find_spec(m) is None] if needs else []
        if missing:
            why = f"needs {', '.join(missing)}, not installed"
        out.append((text.count("\n", 0, m.start()) + 1, m.group(2), why))
    return out


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_no_python_hides_outside_a_python_block(path):
    text = FENCE.sub("", path.read_text())
    assert not PYTHONISH.search(text), f"{path.name}: Python in an indented block; fence it as ```python so it is tested"


@pytest.mark.parametrize("path", [p for p in DOCS if python_blocks(p)], ids=lambda p: p.name)
def test_every_python_block_runs(path, tmp_path, monkeypatch):
    for top in ("examples", "scenarios"):
        (tmp_path / top).symlink_to(ROOT / top)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    written = []
    for line, code, why in python_blocks(path):
        if why is not None:
            continue
        first = code.split("\n", 1)[0]
        if first.startswith("# file: "):
            target = first.removeprefix("# file: ").strip()
            body = code.split("\n", 1)[1]
            if (ROOT / target).is_file():
                assert (ROOT / target).read_text() == body, f"{path.name}:{line}: the block differs from {target}"
            else:
                (tmp_path / target).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / target).write_text(body)
                written.append(Path(target).stem)
            code = body
        try:
            exec(compile(code, f"{path.name}:{line}", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - report which block failed
            pytest.fail(f"{path.name}, block at line {line}: {type(exc).__name__}: {exc}")
    for name in written:
        sys.modules.pop(name, None)


def test_the_blocks_that_are_not_run_say_why():
    for path in DOCS:
        for line, _code, why in python_blocks(path):
            assert why is None or len(why) > 10, f"{path.name}:{line}: say why the block cannot run"


def test_there_are_python_blocks_to_run():
    assert sum(len(python_blocks(p)) for p in DOCS) >= 5
