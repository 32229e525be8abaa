"""The README's copies stay true: Table 1 is the committed one, the claims table lists exactly the
checks `lintf verify` runs, and the Python example runs and shows what it says."""

from __future__ import annotations

import contextlib
import io
import pkgutil
import re
from pathlib import Path

import proofs

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    """The README's text from the heading ``title`` to the next heading of the same level."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert m, f"README.md has no section '## {title}'"
    return m.group(1)


def test_readme_table1_is_the_committed_table() -> None:
    m = re.search(r"<!-- TABLE1 -->\n(.*?)\n<!-- /TABLE1 -->", README, re.S)
    assert m, "README.md has no <!-- TABLE1 --> block"
    committed = (ROOT / "results" / "table1.md").read_text().split("\n\n")[0].strip()
    assert m.group(1).strip() == committed, "README's Table 1 differs from results/table1.md: copy it again"


def test_readme_claims_table_lists_every_proof_script() -> None:
    rows = re.findall(r"^\| `([a-z0-9_]+)` \|", section("Verified claims"), re.M)
    scripts = sorted(m.name for m in pkgutil.iter_modules(proofs.__path__) if not m.name.startswith("_"))
    assert len(rows) == len(set(rows)), f"a script is listed twice in the README's claims table: {rows}"
    assert sorted(rows) == scripts, (
        f"README's claims table and proofs/ differ: only in the README {sorted(set(rows) - set(scripts))}, "
        f"only in proofs/ {sorted(set(scripts) - set(rows))}")


def test_readme_python_example_runs_and_agrees_with_theorem_4_1() -> None:
    blocks = re.findall(r"```python\n(.*?)```", section("Python API"), re.S)
    assert len(blocks) == 1, f"expected one Python block under '## Python API', found {len(blocks)}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md (Python API)", "exec"), {})
    printed = out.getvalue().split()
    assert len(printed) == 2, f"the example should print two numbers, printed {out.getvalue()!r}"
    fast, implicit = map(float, printed)
    # Two routes to the same prediction: the Gram-form pass in the data's float32, and <w^L, x_t> from the
    # derived recursion in float64.  float32 rounding over 4 layers bounds their gap.
    assert abs(fast - implicit) <= 1e-4 * max(1.0, abs(implicit)), (fast, implicit)
