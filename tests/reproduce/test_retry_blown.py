"""``Stages.retry_blown``: a stage that blows up after one that did not no longer ends a cell.  A cell stored without
the flag that such a stage ended goes on from its record when the flag is set, the cells that started from it are
trained again, and their runs from the old start are set aside, not resumed."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from numerics.errors import Diverged, LintfError
from numerics.io import load_model, save_model
from numerics.reproduce import convergence
from numerics.reproduce import experiments as ex
from numerics.reproduce.budgets import goes_on, same_signature
from numerics.train import continuation
from tests.reproduce.test_going_on import CELL, TEST, MovingTrainer

OFF = replace(TEST, stages=replace(TEST.stages, most=3))
ON = replace(OFF, stages=replace(OFF.stages, retry_blown=True))


CALM = np.random.default_rng(0).exponential(0.05, 2000)


def fake_held_out(losses_of: dict[str, np.ndarray]):
    """Held-out losses by the folder of the model file: ``stage<k>``, or the cell's run (the record it goes on from)."""
    def held(model, *a):
        return losses_of[Path(model).parent.name].copy()
    return held


@pytest.fixture()
def blown_second_stage(monkeypatch):
    """Stage 2 meets one held-out context that explodes; stage 3 is better than stage 1; the stored model (stage 1's)
    has stage 1's losses."""
    blown = CALM * 0.5
    blown[0] = 1e11
    held = fake_held_out({"stage1": CALM, "stage2": blown, "stage3": CALM * 0.5, CELL.name: CALM})
    monkeypatch.setattr(continuation, "scaled_model", lambda model, *a: (model, {}))
    monkeypatch.setattr(continuation, "held_out_losses", held)
    monkeypatch.setattr(ex, "held_out_losses", held)


@pytest.fixture()
def ended(tmp_path, blown_second_stage) -> Path:
    """The cell trained without the flag: its blown second stage ended it, and it keeps stage 1."""
    m = ex.run_cell(CELL, OFF, tmp_path / "out", tmp_path / "runs", MovingTrainer())
    assert [s["blown"] for s in m["train"]["stages"]] == [False, True]
    assert m["train"]["converged"] and m["train"]["chosen_stage"] == 1
    return tmp_path / "out"


def test_a_cell_a_blown_stage_ended_goes_on_under_the_flag(ended, tmp_path):
    before = json.loads((ex.cell_dir(ended, CELL) / "metrics.json").read_text())
    assert "retry_blown" not in before["signature"]["stages"]
    assert ex.load_cell(ended, CELL, ON) == before and goes_on(before, ON) and not goes_on(before, OFF)
    dependent = ended / "models" / "full-L1-uniform1" / "metrics.json"  # a cell that started from this one
    dependent.parent.mkdir(parents=True)
    dependent.write_text(json.dumps({"train": {"start": str(ex.cell_dir(ended, CELL) / "model.npz")}}))
    trainer = MovingTrainer()
    sw = ex.sweep(ON, ("table1",), ended, tmp_path / "runs", trainer=trainer, only=[CELL.name])
    m = sw.cells[CELL.name]
    assert trainer.calls == ["stage3"] and m["train"]["stages"][:2] == before["train"]["stages"]
    assert m["train"]["chosen_stage"] == 3 and m["signature"]["stages"]["retry_blown"] is True
    assert "went on training" in json.loads(dependent.read_text())["stale"]
    with pytest.raises(LintfError, match="made with another configuration"):
        ex.load_cell(ended, CELL, OFF)  # one that went on past a blown stage is not what OFF makes


def test_every_stage_blown_still_ends_the_cell(tmp_path, monkeypatch):
    """The 2- and 3-layer cells at σ ≈ 0 blow up in every stage: the flag does not run them to the cap."""
    blown = CALM.copy()
    blown[0] = 1e11
    monkeypatch.setattr(continuation, "scaled_model", lambda model, *a: (model, {}))
    monkeypatch.setattr(continuation, "held_out_losses", fake_held_out({f"stage{k}": blown for k in (1, 2, 3)}))
    trainer = MovingTrainer()
    best, summary = continuation.train_stages(ex.train_config(CELL, ON), ON.stages, None, tmp_path, trainer)
    assert trainer.calls == ["stage1", "stage2"] and summary["converged"]


def test_the_signature_takes_a_record_without_the_flag_but_not_one_with_it():
    off, on = ex.cell_signature(CELL, OFF), ex.cell_signature(CELL, ON)
    assert "retry_blown" not in off["stages"] and on["stages"]["retry_blown"] is True
    assert same_signature(off, CELL, ON) and same_signature(off, CELL, OFF)
    assert same_signature(on, CELL, ON) and not same_signature(on, CELL, OFF)


def test_a_stale_cell_trains_again_from_its_new_start(tmp_path):
    """FULL started from the DIAG cell of its depth, which is then replaced: the real trainer's run directories of
    the old start hold another config, so they are set aside (kept) and FULL trains afresh from the new model."""
    budget = replace(TEST, models=("diag", "full"))
    diag, full = ex.Cell("diag", 1, "uniform:1"), ex.Cell("full", 1, "uniform:1")
    out, runs = tmp_path / "out", tmp_path / "runs"
    for c in (diag, full):
        assert not ex.run_cell(c, budget, out, runs)["failed"]
    P, Q, meta = load_model(ex.cell_dir(out, diag) / "model.npz")
    save_model(ex.cell_dir(out, diag) / "model.npz", P, 0.9 * Q, meta)  # the DIAG cell changed
    convergence.mark_stale(out, diag, "test")
    assert ex.load_cell(out, full, budget) is None
    m = ex.run_cell(full, budget, out, runs)
    assert not m["failed"] and "stale" not in m
    assert (runs / budget.name / f"{full.name}.replaced1" / "stage1" / "model.npz").exists()  # the old run, kept
    shutil.rmtree(runs / budget.name / f"{full.name}.replaced1")


class DivergingTrainer(MovingTrainer):
    """:class:`MovingTrainer`, but the training of the stages in ``bad`` diverges at step 12."""

    def __init__(self, bad: tuple[str, ...] = ("stage2",)) -> None:
        super().__init__()
        self.bad = bad

    def __call__(self, cfg, run: Path):
        if run.name not in self.bad:
            return super().__call__(cfg, run)
        self.calls.append(run.name)
        self.starts.append(cfg.warm_start)
        raise Diverged("training diverged 31 times (last at step 12, seeds [0]); lower --lr (now 0.01)", 12)


def test_a_stage_whose_training_diverges_is_a_blown_stage(tmp_path, monkeypatch):
    """A stage whose training diverges leaves no model: it is blown, its held-out loss unknown.  It ends the cell
    as a blown stage does, which keeps the stage before it; under ``retry_blown`` the next stage goes on from that
    stage instead.  A first stage that diverges has nothing to go on from: the cell's training stops with the error."""
    from numerics.reproduce.report import training_reason

    held = fake_held_out({"stage1": CALM, "stage3": CALM * 0.5})
    monkeypatch.setattr(continuation, "scaled_model", lambda model, *a: (model, {}))
    monkeypatch.setattr(continuation, "held_out_losses", held)
    m = ex.run_cell(CELL, OFF, tmp_path / "off", tmp_path / "runs-off", DivergingTrainer())
    first, second = m["train"]["stages"]
    assert second["blown"] and second["held_out"] is None and second["steps"] == 12
    assert second["diverged"].startswith("training diverged 31 times")
    assert m["train"]["converged"] and m["train"]["chosen_stage"] == 1 and m["failed"] is None
    assert m["train"]["steps"] == first["steps"] + 12
    assert "its last stage diverged" in training_reason(m)
    trainer = DivergingTrainer()
    m = ex.run_cell(CELL, ON, tmp_path / "on", tmp_path / "runs-on", trainer)
    assert trainer.calls == ["stage1", "stage2", "stage3"] and m["train"]["chosen_stage"] == 3
    assert trainer.starts[2] == str(tmp_path / "runs-on" / "test" / CELL.name / "stage1" / "model.npz")
    assert [s["blown"] for s in m["train"]["stages"]] == [False, True, False]
    with pytest.raises(Diverged, match="training diverged 31 times"):
        ex.run_cell(CELL, ON, tmp_path / "first", tmp_path / "runs-first", DivergingTrainer(("stage1",)))
