"""The Python example of ``docs/cluster.md`` runs as written and prints what the page says."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cluster.md"


def example() -> tuple[str, list[str]]:
    """The page's Python block and the lines it says the block prints."""
    text = PAGE.read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text.split("## From Python")[1], re.S)
    shown = re.search(r"It prints `(.*?)` and `(.*?)`", text)
    return block, [shown.group(1), shown.group(2)]


def test_the_example_prints_what_the_page_says_in_this_process(tmp_path, monkeypatch):
    """The example with ``jobs=1`` (the cells in this process); the slow sibling runs it as
    written, on a local cluster."""
    block, shown = example()
    assert "jobs=2" in block
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = compile(block.replace("jobs=2", "jobs=1"), str(PAGE), "exec")
        exec(code, {"__name__": "__main__"})
    assert out.getvalue().splitlines() == shown


@pytest.mark.slow
def test_the_example_runs_as_written_on_a_local_cluster(tmp_path):
    block, shown = example()
    (tmp_path / "toy_sweep.py").write_text(block)
    proc = subprocess.run(
        [sys.executable, "toy_sweep.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == shown
