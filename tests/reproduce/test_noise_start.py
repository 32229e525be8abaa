"""``benchmarks/noise_start.py`` trains a cell in its budget's stages from the finished cell of its model and depth at
another noise setting, checks it against its floor, and compares what it keeps with the cell's record, paired on the
held-out sequences.

The held-out losses are made up per stage and read back by the tag each model file carries
(:class:`tests.reproduce.test_deeper.TaggedTrainer`)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from numerics.io import load_model, save_model
from numerics.reproduce import experiments as ex
from tests.reproduce.test_deeper import CALM, ON, TaggedTrainer, tagged_losses

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "noise_start.py"
_spec = importlib.util.spec_from_file_location("noise_start", SCRIPT)
noise_start = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(noise_start)

BUDGET = replace(ON, noises=("uniform:1", "uniform:2"))
CELL, SOURCE = ex.Cell("diag", 2, "uniform:1"), "uniform:2"
#: the finished grid: the cell's floor, its neighbour at SOURCE (without a floor) and its record, each converged at
#: ``GRID[cell] × CALM`` after two stages; the record after three, from 0.5 × CALM
GRID = {ex.Cell("diag", 1, "uniform:1"): 0.5, ex.Cell("diag", 2, SOURCE): 0.3, CELL: 0.4}
LOSSES = {c.name: {"stage1": CALM * v, "stage2": CALM * v} for c, v in GRID.items()} \
    | {CELL.name: {"stage1": CALM * 0.5, "stage2": CALM * 0.4, "stage3": CALM * 0.4}}
STARTED = {"diag-L2-uniform1@uniform2": {"stage1": CALM * 0.42, "stage2": CALM * 0.419, "stage3": CALM * 0.418}}


@pytest.fixture()
def grid(tmp_path, monkeypatch):
    """A finished grid (:data:`GRID`); the cell started from its neighbour ends at 0.42, 0.419, 0.418 × CALM after
    its first, second and third stage."""
    tagged_losses(monkeypatch, LOSSES | STARTED)
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
    assert rec["held_out"] == pytest.approx(CALM.mean() * 0.4) and (rec["steps"], rec["stages"]) == (80, 3)
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


@pytest.mark.parametrize("spec, says", [("diag-L2-uniform1", "takes NAME@SOURCE"),
                                         ("diag-L9-uniform1@uniform:2", "takes NAME@SOURCE"),
                                         ("diag-L2-uniform1@bogus", "noise spec must be"),
                                         ("diag-L2-uniform1@uniform:1.0", "the source setting is the cell's own")])
def test_a_bad_cell_is_a_one_line_error(spec, says, capsys, tmp_path):
    (tmp_path / "models").mkdir()
    assert noise_start.main(["--budget", "test", "--out", str(tmp_path), "--runs", str(tmp_path), "--cell", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("noise_start.py: error: --cell") and spec in err and says in err and "\n" not in err


def test_a_source_that_is_not_finished_is_refused_before_any_cell_trains(grid, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(noise_start, "get_budget", lambda name: BUDGET)
    runs = tmp_path / "probe"
    assert noise_start.main(["--out", str(grid), "--runs", str(runs), "--cell", f"{CELL.name}@{SOURCE}",
                             "--cell", "diag-L1-uniform1@uniform:2"]) == 2
    assert "no finished, passing diag-L1-uniform2" in capsys.readouterr().err
    assert not runs.exists()


def test_the_log_keeps_each_cell_against_the_record_and_the_reference(grid, tmp_path, monkeypatch):
    """The reference grid holds the cell at 0.6 × CALM, where the record is at 0.4 × CALM."""
    monkeypatch.setattr(noise_start, "get_budget", lambda name: BUDGET)
    monkeypatch.setattr(noise_start, "train_rundir", TaggedTrainer())
    tagged_losses(monkeypatch, LOSSES | STARTED | {"reference": {"stage1": CALM * 0.6}})
    ref = tmp_path / "ref"
    shutil.copytree(grid / "models", ref / "models")
    P, Q, _ = load_model(ex.cell_dir(ref, CELL) / "model.npz")
    save_model(ex.cell_dir(ref, CELL) / "model.npz", P, Q, {"tag": "reference/stage1"})
    log = tmp_path / "log.json"
    args = ["--out", str(grid), "--runs", str(tmp_path / "probe"), "--log", str(log), "--cell", f"{CELL.name}@{SOURCE}"]
    assert noise_start.main(args) == 0
    first = json.loads(log.read_text())
    assert first["reference"] is None and first["budget"] == BUDGET.name
    (row,) = first["cells"]
    assert "least" not in row and "reference" not in row and row["steps"] == 40
    assert noise_start.main([*args, "--reference", str(ref), "--least", "3"]) == 0  # on in the same run directory
    last = json.loads(log.read_text())
    (row,) = last["cells"]
    assert last["reference"] == str(ref) and row["least"] == 3 and row["steps"] == 80
    assert row["held_out"] == pytest.approx(CALM.mean() * 0.418)
    assert row["record"]["relative"] == pytest.approx(0.418 / 0.4 - 1)
    assert row["reference"]["relative"] == pytest.approx(0.418 / 0.6 - 1) and row["reference"]["stages"] == 3

def log_row(r: dict) -> str:
    def against(x: dict) -> str:
        return f"{x['relative']:+.1%} ± {x['diff_se'] / x['held_out']:.1%}"

    return (f"| {r['cell']} | `{r['source']}` | {r['steps']} ({len(r['stages'])}) | {r['seconds']:.0f} | "
            f"{r['held_out']:.4g} | {r['record']['steps']} | {against(r['record'])} | {r['reference']['steps']} | "
            f"{against(r['reference'])} |")


def test_the_page_copies_its_logs_row_by_row():
    root = SCRIPT.parents[1]
    page = (root / "docs" / "experiments" / "noise-start.md").read_text()
    rows = []
    for name in ("sample-a", "sample-b", "least4-a", "least4-b"):
        log = json.loads((root / "benchmarks" / "logs" / "noise-start" / f"{name}.json").read_text())
        assert log["out"] == "results/lean" and log["reference"] == "results/paper", name
        rows += [log_row(r) for r in log["cells"]]
    assert len(rows) == 17 and page.count("\n| diag-L") == len(rows)
    first = [r for name in ("sample-a", "sample-b")
             for r in json.loads((root / "benchmarks" / "logs" / "noise-start" / f"{name}.json").read_text())["cells"]]
    above = [{r["cell"] for r in first if r[k]["relative"] > 0.03} for k in ("record", "reference")]
    records_above = [r for r in first if r["record"]["held_out"] > 1.03 * r["reference"]["held_out"]]
    assert f"Yet {len(above[0] | above[1])} of the 12 end more than 3 % above" in page
    assert f"and {len(above[0] & above[1])} of them above both" in page
    assert f"paper cell by more than 3 % in {len(records_above)} of the 12 cells" in page
    for row in rows:
        assert row in page, f"noise-start.md lacks the row {row}"
