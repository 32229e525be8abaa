"""The README's copy of Table 1 is the committed one (``results/table1.md``), not a stale paste."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_table1_is_the_committed_table() -> None:
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- TABLE1 -->\n(.*?)\n<!-- /TABLE1 -->", readme, re.S)
    assert m, "README.md has no <!-- TABLE1 --> block"
    committed = (ROOT / "results" / "table1.md").read_text().split("\n\n")[0].strip()
    assert m.group(1).strip() == committed, "README's Table 1 differs from results/table1.md: copy it again"
