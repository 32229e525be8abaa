"""A cell that stopped at a smaller cap on its stages without converging goes on when the cap is raised.

The trainer is a stand-in whose model moves with every stage (gradient descent with the step ``0.01 k`` in stage
``k``), so that the cell never converges and each stage is a different, safe model.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from numerics import models
from numerics.errors import LintfError
from numerics.io import save_model
from numerics.models.constructions import gd
from numerics.reproduce import experiments as ex
from numerics.reproduce.budgets import goes_on, same_signature
from numerics.train.continuation import Stages, converged, recorded

TEST = ex.get_budget("test")
CELL = ex.Cell("diag", 1, "uniform:1")


def capped_at(most: int):
    return replace(TEST, stages=replace(TEST.stages, most=most))


class MovingTrainer:
    """Stage ``k`` writes gradient descent with the step ``0.01 k``; records the stages it trained."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.starts: list[str | None] = []

    def __call__(self, cfg, run: Path) -> ex.Trained:
        self.calls.append(run.name)
        self.starts.append(cfg.warm_start)
        k = int(run.name.removeprefix("stage"))
        P, Q = (np.asarray(x, np.float64) for x in models.universal(gd(0.01 * k, cfg.layers), cfg.d))
        save_model(run / "model.npz", P, Q)
        return ex.Trained({"best_seed": 0, "steps": cfg.steps, "dropped_final": 0}, run / "model.npz")


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """The cell trained under a cap of 2 stages: it stopped still moving."""
    root = tmp_path_factory.mktemp("going_on")
    m = ex.run_cell(CELL, capped_at(2), root / "out", root / "runs", MovingTrainer())
    assert not m["failed"] and not m["train"]["converged"] and len(m["train"]["stages"]) == 2, m
    return root


def test_a_capped_cell_goes_on_from_its_record_without_its_runs(stopped, tmp_path):
    """Raised to 3 stages, the sweep trains stage 3 alone, from the stored model (its run directories are gone),
    keeps the two stored stages as they were, and keeps the earlier run's time."""
    out = tmp_path / "out"
    shutil.copytree(stopped / "out", out)
    before = json.loads((ex.cell_dir(out, CELL) / "metrics.json").read_text())
    raised = capped_at(3)
    assert ex.load_cell(out, CELL, raised) == before and goes_on(before, raised)
    assert CELL.name in sum(ex.queue_cells(raised, ("table1",), out, ["uniform:1"]), ())  # it is left to train
    trainer = MovingTrainer()
    sw = ex.sweep(raised, ("table1",), out, tmp_path / "runs", trainer=trainer, only=[CELL.name])
    m = sw.cells[CELL.name]
    assert trainer.calls == ["stage3"] and sw.trained == [CELL.name]
    assert trainer.starts[0] == str(tmp_path / "runs" / "test" / CELL.name / "recorded.npz")  # the stored model
    assert m["train"]["stages"][:2] == before["train"]["stages"] and len(m["train"]["stages"]) == 3
    assert m["train"]["steps"] == before["train"]["steps"] + 2 * TEST.stages.steps
    assert m["train"]["chosen_stage"] == 3 and m["eval"]["loss"] < before["eval"]["loss"]
    assert m["continued"] == [{"seconds": before["seconds"], "wall": before["wall"], "device": before["device"],
                               "host": before["host"], "stages": 2}]
    assert not goes_on(m, raised)  # at the cap now: the report names it as capped
    assert ex.sweep(raised, ("table1",), out, tmp_path / "runs", trainer=trainer, only=[CELL.name]).trained == []


def test_a_cell_with_more_stages_than_the_cap_is_made_otherwise(stopped, tmp_path):
    """Lowered below the stages a cell trained, the budget cannot have made it: a one-line error."""
    with pytest.raises(LintfError, match="made with another configuration"):
        ex.load_cell(stopped / "out", CELL, replace(TEST, stages=replace(TEST.stages, most=2, steps=10)))
    m = ex.load_cell(stopped / "out", CELL, TEST)
    assert m is not None and not goes_on(m, TEST)  # at its own cap: finished
    stored = json.loads((ex.cell_dir(stopped / "out", CELL) / "metrics.json").read_text())
    stored["train"]["stages"] = stored["train"]["stages"] * 2  # 4 stages under a cap of 3
    out = tmp_path / "out"
    shutil.copytree(stopped / "out", out)
    (ex.cell_dir(out, CELL) / "metrics.json").write_text(json.dumps(stored))
    with pytest.raises(LintfError, match="made with another configuration"):
        ex.load_cell(out, CELL, capped_at(3))


def test_the_signature_ignores_the_cap_alone():
    sig = ex.cell_signature(CELL, TEST)
    assert same_signature(sig, CELL, capped_at(5))
    assert not same_signature(sig, CELL, replace(TEST, stages=replace(TEST.stages, steps=21)))
    assert not same_signature(sig, CELL, replace(TEST, eval_sequences=501))


def test_a_record_goes_on_only_from_the_model_it_kept(stopped):
    """The record's chosen stage holds the stored model; the next stage must start from it, and the held-out
    losses given must be that stage's."""
    from numerics.train.continuation import held_out_losses

    m = json.loads((ex.cell_dir(stopped / "out", CELL) / "metrics.json").read_text())
    model = ex.cell_dir(stopped / "out", CELL) / "model.npz"
    held = held_out_losses(model, CELL.noise, TEST.n, TEST.d, TEST.stages.held_out)
    stages = recorded(m["train"], model, held)
    assert [s.k for s in stages] == [1, 2] and stages[1].model == model and stages[0].model is None
    assert recorded(m["train"], model, held * 1.01) is None  # another model (a rescued one, scaled after)
    first = m["train"] | {"chosen_stage": 1}  # the kept model is stage 1's, but stage 3 would start from stage 2
    assert recorded(first, model, np.full_like(held, m["train"]["stages"][0]["held_out"])) is None


def test_next_to_a_blown_stage_only_the_relative_change_counts():
    rng = np.random.default_rng(5)
    old = rng.exponential(0.1, 20_000)
    old[0] = 2e3  # one sequence past the tail rules' limit: the mean is about 0.2
    st = Stages(steps=10, most=3, batch=8, seeds=1)
    new = old * 0.9
    new[0] = 1e3  # the exploding sequence moves by 1e3: a paired SE of 0.05, and the mean by 30 %
    assert converged(new, old, st)  # within 2 paired SE ...
    assert not converged(new, old, st, blown=True)  # ... but not within 3 %
    assert converged(old * 0.99, old, st, blown=True)  # 1 %: within 3 %


def test_stages_blown_by_one_shared_sequence_converge(tmp_path, monkeypatch):
    """Every stage meets the same extreme held-out context (the 2-layer models at σ ≈ 0 do): when the mean moves by
    under 3 %, the cell converges at stage 2 instead of running to the cap."""
    from numerics.train import continuation

    calm = np.random.default_rng(3).exponential(0.05, 2000)
    calm[0] = 2e3
    held = iter([calm, calm * 0.995, calm * 0.99])
    monkeypatch.setattr(continuation, "scaled_model", lambda model, *a: (model, {}))
    monkeypatch.setattr(continuation, "held_out_losses", lambda *a: next(held))
    trainer = MovingTrainer()
    st = Stages(steps=10, most=3, batch=8, seeds=1, held_out=2000, scale_pool=64)
    from numerics.train.config import TrainConfig

    cfg = TrainConfig(model="diag", layers=1, noise="uniform:1", steps=10, batch=8)
    best, summary = continuation.train_stages(cfg, st, None, tmp_path, trainer)
    assert [s["blown"] for s in summary["stages"]] == [True, True]
    assert summary["converged"] and trainer.calls == ["stage1", "stage2"] and best.k == 2


def test_the_convergence_check_waits_for_a_cell_that_goes_on(stopped, tmp_path):
    """A cell that goes on is not final: the check leaves it pending, and ``--cell`` names it as unfinished."""
    from numerics.reproduce import convergence

    out = tmp_path / "out"
    shutil.copytree(stopped / "out", out)
    trainer = MovingTrainer()
    res = convergence.check(capped_at(3), out, tmp_path / "runs", cells=(CELL,), trainer=trainer)
    assert res["cells"] == {} and res["pending"] == [CELL.name] and trainer.calls == []
    with pytest.raises(ValueError, match=f"--cell {CELL.name} is not a finished, passing cell"):
        convergence.named(capped_at(3), out, [CELL.name])
    assert convergence.named(TEST, out, [CELL.name]) == (CELL,)  # at its own cap it is finished
