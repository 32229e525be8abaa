"""``benchmarks/noise_start.py`` trains a cell in its budget's stages from the finished cell of its model and depth at
another noise setting, checks it against its floor, and compares what it keeps with the cell's record, paired on the
held-out sequences.

The held-out losses are made up per stage and read back by the tag each model file carries
(:class:`tests.reproduce.test_deeper.TaggedTrainer`)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest

from numerics.reproduce import experiments as ex
from tests.reproduce.test_deeper import CALM, ON, TaggedTrainer, tagged_losses

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "noise_start.py"
_spec = importlib.util.spec_from_file_location("noise_start", SCRIPT)
noise_start = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(noise_start)

BUDGET = replace(ON, noises=("uniform:1", "uniform:2"))
CELL, SOURCE = ex.Cell("diag", 2, "uniform:1"), "uniform:2"
#: the finished grid: the cell's floor, its neighbour at SOURCE (without a floor) and its record
GRID = {ex.Cell("diag", 1, "uniform:1"): 0.5, ex.Cell("diag", 2, SOURCE): 0.3, CELL: 0.4}
LOSSES = {c.name: {"stage1": CALM * v, "stage2": CALM * v} for c, v in GRID.items()}


@pytest.fixture()
def grid(tmp_path, monkeypatch):
    """A finished grid: each cell's two stages at ``GRID[cell] × CALM``; the cell started from its neighbour ends at
    0.42 × CALM after its first stage and 0.419 × CALM after its second."""
    tagged_losses(monkeypatch, LOSSES | {"diag-L2-uniform1@uniform2": {"stage1": CALM * 0.42, "stage2": CALM * 0.419}})
    out = tmp_path / "out"
    for cell in GRID:
        ex.run_cell(cell, BUDGET, out, tmp_path / "runs", TaggedTrainer())
    return out


def test_the_cell_starts_from_its_neighbour_and_is_compared_with_its_record(grid, tmp_path):
    trainer = TaggedTrainer()
    row = noise_start.run(CELL, SOURCE, BUDGET, grid, None, tmp_path / "probe", trainer=trainer)
    assert trainer.calls == ["stage1", "stage2"]
    assert trainer.starts[0] == str(ex.cell_dir(grid, ex.Cell("diag", 2, SOURCE)) / "model.npz")
    assert row["steps"] == 2 * BUDGET.stages.steps and row["converged"] and row["chosen_stage"] == 2
    assert row["held_out"] == pytest.approx(CALM.mean() * 0.419)
    rec = row["record"]
    assert rec["held_out"] == pytest.approx(CALM.mean() * 0.4) and rec["steps"] == 2 * BUDGET.stages.steps
    assert rec["relative"] == pytest.approx(0.419 / 0.4 - 1)
    assert rec["diff_se"] == pytest.approx(CALM.std(ddof=1) * 0.019 / len(CALM) ** 0.5)


def test_a_cell_above_its_floor_trains_on_from_the_floor(grid, tmp_path, monkeypatch):
    """Started from a neighbour that holds it above the cell one layer shallower, it restarts from that floor."""
    tagged_losses(monkeypatch, LOSSES | {"diag-L2-uniform1@uniform2": {"stage1": CALM * 0.7, "stage2": CALM * 0.7,
                                                     "stage3": CALM * 0.45, "stage4": CALM * 0.45}})
    trainer = TaggedTrainer()
    row = noise_start.run(CELL, SOURCE, BUDGET, grid, None, tmp_path / "probe", trainer=trainer)
    assert trainer.starts[2] == str(ex.cell_dir(grid, ex.Cell("diag", 1, "uniform:1")) / "model.npz")
    assert row["chosen_stage"] == 3 and row["held_out"] == pytest.approx(CALM.mean() * 0.45)


@pytest.mark.parametrize("spec", ["diag-L2-uniform1", "diag-L9-uniform1@uniform:2", "diag-L2-uniform1@bogus"])
def test_a_bad_cell_is_a_one_line_error(spec, capsys, tmp_path):
    assert noise_start.main(["--budget", "test", "--out", str(tmp_path), "--runs", str(tmp_path), "--cell", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("noise_start.py: error: --cell") and "\n" not in err


def test_a_source_that_is_not_finished_is_refused_before_any_work(capsys, tmp_path):
    assert noise_start.main(["--budget", "test", "--out", str(tmp_path), "--runs", str(tmp_path / "runs"),
                             "--cell", "diag-L2-uniform1@categorical:1,3"]) == 2
    assert "no finished, passing diag-L2-categorical1_3" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def log_row(r: dict) -> str:
    def against(x: dict) -> str:
        return f"{x['relative']:+.1%} ± {x['diff_se'] / x['held_out']:.1%}"

    return (f"| {r['cell']} | `{r['source']}` | {r['steps']} ({len(r['stages'])}) | {r['seconds']:.0f} | "
            f"{r['held_out']:.4g} | {r['record']['steps']} | {against(r['record'])} | {r['reference']['steps']} | "
            f"{against(r['reference'])} |")


def test_the_page_copies_its_logs_row_by_row():
    import json

    root = SCRIPT.parents[1]
    page = (root / "docs" / "experiments" / "noise-start.md").read_text()
    rows = []
    for name in ("sample-a", "sample-b", "least4-a", "least4-b"):
        log = json.loads((root / "benchmarks" / "logs" / "noise-start" / f"{name}.json").read_text())
        assert log["out"] == "results/lean" and log["reference"] == "results/paper", name
        rows += [log_row(r) for r in log["cells"]]
    assert len(rows) == 17 and page.count("\n| diag-L") == len(rows)
    for row in rows:
        assert row in page, f"noise-start.md lacks the row {row}"
