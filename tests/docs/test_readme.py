"""The README's copies stay true: its commands (and `make demo`'s) parse as written, Table 1 is the
committed one, the claims table lists exactly the checks `lintf verify` runs, and the Python example
runs and shows what it says."""

from __future__ import annotations

import contextlib
import io
import pkgutil
import re
import shlex
from pathlib import Path

import proofs
from numerics.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    """The README's text from the heading ``title`` to the next heading of the same level."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert m, f"README.md has no section '## {title}'"
    return m.group(1)


def shell_lines(text: str) -> list[list[str]]:
    """Each command of the ``bash`` blocks of ``text``, continuations joined, comments dropped."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.split(" #")[0].strip():
                lines.append(shlex.split(line.split(" #")[0]))
    return lines


def demo_lines() -> list[list[str]]:
    """The ``lintf`` commands of the Makefile's ``demo`` recipe, its variables substituted."""
    make = (ROOT / "Makefile").read_text()
    values = dict(re.findall(r"^(\w+)\s*\??=\s*(.*?)\s*$", make, re.M))
    recipe = re.search(r"^demo:.*\n((?:\t.*\n?)+)", make, re.M).group(1).replace("\\\n", " ")
    expand = re.compile(r"\$\((\w+)\)")
    return [
        shlex.split(expand.sub(lambda m: values.get(m.group(1), m.group(0)), line))
        for line in recipe.splitlines()
        if line.strip()
    ]


def test_readme_and_demo_commands_parse_as_written() -> None:
    # Every `lintf` command the README shows, and every one `make demo` runs, is accepted by the
    # command's own parser (options, choices and value ranges); every `python -m proofs.NAME`
    # names a script, and every `make TARGET` a target of the Makefile.
    parser = build_parser()
    scripts = {m.name for m in pkgutil.iter_modules(proofs.__path__)}
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    lines = shell_lines(README)
    demo = demo_lines()
    assert any(argv[:2] == ["make", "demo"] for argv in lines[:2]), (
        "the README does not start with make demo"
    )
    assert demo and all(Path(argv[0]).name == "lintf" for argv in demo), demo
    checked = 0
    for argv in lines + demo:
        name = Path(argv[0]).name
        if name == "lintf":
            parser.parse_args(argv[1:])  # raises on an unknown option or a value out of range
        elif name == "python" and argv[1] == "-m":
            assert argv[2].removeprefix("proofs.") in scripts, f"no script {argv[2]}"
        elif name == "make":
            assert argv[1] in targets, f"the Makefile has no target {argv[1]}"
        else:
            continue
        checked += 1
    assert checked == len(lines) + len(demo), (
        "a README command is neither lintf, python -m nor make"
    )


def test_readme_table1_and_figure1_are_one_committed_sweep() -> None:
    """The block ``<!-- TABLE1 <sweep>/table1.md -->`` copies that file's table, Figure 1 is the
    same sweep's ``fig1.png``, and the caption names the sweep's budget (from its report)."""
    m = re.search(r"<!-- TABLE1 (\S+) -->\n(.*?)\n<!-- /TABLE1 -->", README, re.S)
    assert m, "README.md has no <!-- TABLE1 results/.../table1.md --> block"
    source = Path(m.group(1))
    assert source.name == "table1.md" and source.parts[0] == "results", source
    committed = (ROOT / source).read_text().split("\n\n")[0].strip()
    assert m.group(2).strip() == committed, f"README's Table 1 differs from {source}: copy it again"
    figure = re.search(r"^!\[Figure 1[^\]]*\]\((\S+)\)", README, re.M)
    assert figure and Path(figure.group(1)) == source.parent / "fig1.png", (
        "Figure 1 is not the table's sweep"
    )
    budget = re.search(r"budget `(\w+)`", (ROOT / source.parent / "report.md").read_text()).group(1)
    caption = " ".join(README.split(figure.group(0))[1][:400].split())
    assert (
        f"at the {budget} budget" in caption
        and f"--budget {budget} --out {source.parent} " in caption
    ), "Figure 1's caption does not name the budget and command of its sweep"


def test_readme_claims_table_lists_every_proof_script() -> None:
    rows = re.findall(r"^\| `([a-z0-9_]+)` \|", section("Verified claims"), re.M)
    scripts = sorted(
        m.name for m in pkgutil.iter_modules(proofs.__path__) if not m.name.startswith("_")
    )
    assert len(rows) == len(set(rows)), (
        f"a script is listed twice in the README's claims table: {rows}"
    )
    assert sorted(rows) == scripts, (
        "README's claims table and proofs/ differ: "
        f"only in the README {sorted(set(rows) - set(scripts))}, "
        f"only in proofs/ {sorted(set(scripts) - set(rows))}"
    )


def test_readme_python_example_runs_and_agrees_with_theorem_4_1() -> None:
    blocks = re.findall(r"```python\n(.*?)```", section("Python API"), re.S)
    assert len(blocks) == 1, f"expected one Python block under '## Python API', found {len(blocks)}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md (Python API)", "exec"), {})
    printed = out.getvalue().split()
    assert len(printed) == 2, f"the example should print two numbers, printed {out.getvalue()!r}"
    fast, implicit = map(float, printed)
    # Two routes to the same prediction: the Gram-form pass in the data's float32, and <w^L, x_t>
    # from the derived recursion in float64.  float32 rounding over 4 layers bounds their gap.
    assert abs(fast - implicit) <= 1e-4 * max(1.0, abs(implicit)), (fast, implicit)
