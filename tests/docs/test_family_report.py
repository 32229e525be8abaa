"""The family grid's report (docs/experiments/family.md) and table (results/family/table.md) say
what the committed cells say, the report's parameter counts are the code's, and the README lists
every model kind ``lintf train --model`` accepts."""

from __future__ import annotations

import argparse
import re
import runpy
from pathlib import Path

import jax
import pytest

from numerics import models
from numerics.models.family import MEMBERS, parameter_count
from numerics.models.kinds import KIND_OBJECTS

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "family"
REPORT = ROOT / "docs" / "experiments" / "family.md"


@pytest.fixture(scope="module")
def grid() -> dict:
    """``benchmarks/family_grid.py``'s functions and the committed cells."""
    script = runpy.run_path(str(ROOT / "benchmarks" / "family_grid.py"))
    cells = script["collect"](RESULTS)
    assert cells, "results/family holds no finished cell"
    asked = argparse.Namespace(
        depths=list(range(1, 8)), noise=list(script["NOISES"]), models=list(script["MODELS"])
    )
    return script | {"cells": cells, "shown": script["shown"](cells, asked)}


def test_committed_table_is_what_the_script_writes_from_the_cells(grid: dict) -> None:
    want = grid["table_text"](RESULTS, grid["cells"], *grid["shown"])
    assert (RESULTS / "table.md").read_text() == want, (
        "results/family/table.md is not the table of the committed cells: rerun "
        "benchmarks/family_grid.py (a finished grid only rewrites table.md and family.png)"
    )


def test_a_failing_cells_huge_mean_reads_in_three_digits(grid: dict) -> None:
    # An exploding tail puts means of 10⁴⁰ and more into the table: they read as 1.89e+41, not as a
    # 42-digit number, and every entry is still a number.
    text = (RESULTS / "table.md").read_text()
    assert not re.search(r"\d{9,}", text), "table.md prints a number of nine or more digits"
    assert grid["num"](1.886e41) == "1.89e+41" and grid["num"](0.18553) == "0.1855"
    for entry in re.findall(r"\| ([^|]*±[^|]*) ", text):
        mean, se = entry.rstrip(" !").split(" ± ")
        assert abs(float(mean)) < float("inf") and float(se) >= 0, entry


def test_report_quotes_the_best_depth_rows_of_the_cells(grid: dict) -> None:
    _, noises, names = grid["shown"]
    want = grid["best_rows"](RESULTS, grid["cells"], noises, names)
    text = REPORT.read_text()
    quoted = re.findall(r"^\| (?:uniform|categorical|fixed):.*\|$", text, re.M)
    assert quoted == want, f"family.md's best-depth rows differ from the cells':\n{quoted}\n{want}"


def per_layer() -> dict[str, int]:
    """Numbers per layer at d = 10, one head, from the code: the family's count, FULL's and DIAG's
    drawn parameters."""
    want = {m: parameter_count(m, 10) for m in MEMBERS}
    for kind in ("full", "diag"):
        p = models.init(kind, jax.random.PRNGKey(0), layers=1, d=10, heads=1, scale=0.0)
        want[kind] = int(sum(a.size for a in p))
    return want


def test_report_parameter_counts_are_the_codes() -> None:
    header = re.search(r"^\| model \| (.*) \|$", REPORT.read_text(), re.M)
    counts = re.search(r"^\| numbers per layer \| (.*) \|$", REPORT.read_text(), re.M)
    assert header and counts, "family.md has no parameter table"
    quoted = dict(zip(header.group(1).split(" | "), map(int, counts.group(1).split(" | "))))
    assert quoted == per_layer()


def test_each_cells_parameter_count_is_what_its_saved_model_holds(grid: dict) -> None:
    # The script counts from the code; the saved file is the second route.  A DIAG model is saved as
    # FULL's matrices diag(a·I, b): two numbers each.
    import numpy as np

    from numerics.models.family_io import load_any

    for (model, layers, noise), cell in grid["cells"].items():
        leaves = jax.tree_util.tree_leaves(
            load_any(RESULTS / grid["cell_name"](model, layers, noise) / "model.npz").params
        )
        if model == "diag":
            for M in leaves:
                for block in np.asarray(M).reshape(-1, 11, 11):
                    assert np.count_nonzero(block - np.diag(np.diag(block))) == 0
                    assert len(set(np.diag(block)[:-1])) == 1
            held = 2 * len(leaves) * layers
        else:
            held = sum(a.size for a in leaves)
        assert cell["parameters"] == held, (model, layers, noise)


def test_matched_count_keeps_each_models_best_passing_cell_within_the_budget(grid: dict) -> None:
    def cell(model: str, layers: int, count: int, loss: float, failed: str | None = None) -> dict:
        return {"model": model, "layers": layers, "noise": "u", "parameters": count,
                "adjusted_loss": loss, "tail": {"failed": failed}}  # fmt: skip

    cells = {
        ("full", 1, "u"): cell("full", 1, 242, 0.9),
        ("full", 2, "u"): cell("full", 2, 484, 0.4),
        ("retnet", 1, "u"): cell("retnet", 1, 243, 0.8),  # 0.4 % over FULL-1: matched
        ("gla", 1, "u"): cell("gla", 1, 495, 0.7),  # 2.3 % over FULL-2
        ("gla", 2, "u"): cell("gla", 2, 990, 0.1, failed="largest 1e9"),  # never counts
        ("gla", 3, "u"): cell("gla", 3, 1485, 0.6),
        ("deltanet", 2, "u"): cell("deltanet", 2, 1020, 0.5),  # 5.4 % over FULL-4
    }
    rows = grid["matched_rows"](cells, "u", ["full", "retnet", "gla", "deltanet"])
    assert (
        rows[0] == "| model | ≤ FULL-1 (242) | ≤ FULL-2 (484) | ≤ FULL-4 (968) | ≤ FULL-7 (1694) |"
    )
    assert rows[2:] == [
        "| full | 0.9000 (L=1) | 0.4000 (L=2) | 0.4000 (L=2) | 0.4000 (L=2) |",
        "| retnet | 0.8000 (L=1) | 0.8000 (L=1) | 0.8000 (L=1) | 0.8000 (L=1) |",
        "| gla | - | 0.7000 (L=1) | 0.7000 (L=1) | 0.6000 (L=3) |",
        "| deltanet | - | - | - | 0.5000 (L=2) |",
    ]


def test_readme_lists_every_model_kind_train_accepts() -> None:
    readme = (ROOT / "README.md").read_text()
    line = re.search(r"^- `train --model` takes (.*?)\(", readme, re.M | re.S)
    assert line, "README.md has no line listing the names `train --model` takes"
    assert re.findall(r"`([\w-]+)`", line.group(1)) == list(KIND_OBJECTS)


def test_a_cell_whose_se_is_infinite_reads_back_and_prints_as_inf(
    grid: dict, tmp_path: Path
) -> None:
    # An exploding cell's SE is inf; strict JSON writes it as null with its reason, and the table
    # reads it back as inf instead of failing on None.
    from numerics.io import atomic_write_json

    cell = {"model": "causal", "layers": 7, "noise": "uniform:5", "adjusted_loss": 1.22e171}
    cell |= {"se": float("inf"), "tail": {"failed": "largest 1.22e+176 > 1000", "se": float("inf")}}
    atomic_write_json(tmp_path / "causal-7-uniform5" / "metrics.json", cell)
    got = grid["collect"](tmp_path)[("causal", 7, "uniform:5")]
    assert (
        got["se"] == float("inf")
        and got["tail"]["se"] == float("inf")
        and "null_reasons" not in got
    )
    text = grid["table_text"](
        tmp_path, {("causal", 7, "uniform:5"): got}, [7], ["uniform:5"], ["causal"]
    )
    assert "| causal | 1.22e+171 ± inf ! |" in text
