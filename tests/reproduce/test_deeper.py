"""``Stages.floor``: a cell that ends above the finished cell one layer shallower has not converged, and its next stage
restarts from that cell (:mod:`numerics.reproduce.deeper`).  A cell stored before the rule is checked by the next
sweep, and one that is stuck goes on from its record.

The trainer is :class:`tests.reproduce.test_going_on.MovingTrainer`; the held-out losses are made up per stage and
read back by the tag each model file carries, so a copy of a model (the stored cell, the record it goes on from) has
the losses of the stage that made it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from numerics.io import load_model, save_model
from numerics.reproduce import budgets, deeper
from numerics.reproduce import experiments as ex
from numerics.reproduce.budgets import goes_on, same_signature, shallower
from numerics.train import continuation
from numerics.train.continuation import StageResult, Stages, stuck
from tests.reproduce.test_going_on import TEST, MovingTrainer

OFF = replace(TEST, continuation=False, stages=replace(TEST.stages, most=4))
ON = replace(OFF, stages=replace(OFF.stages, floor=True))
LOW, HIGH = ex.Cell("diag", 1, "uniform:1"), ex.Cell("diag", 2, "uniform:1")
CALM = np.random.default_rng(0).exponential(0.05, 2000)


class TaggedTrainer(MovingTrainer):
    """A :class:`MovingTrainer` whose model files name their cell and stage (``meta["tag"]``)."""

    def __call__(self, cfg, run: Path) -> ex.Trained:
        tr = super().__call__(cfg, run)
        P, Q, _ = load_model(tr.model)
        save_model(tr.model, P, Q, {"tag": f"{run.parent.name}/{run.name}"})
        return tr


def tagged_losses(monkeypatch, losses: dict[str, dict[str, np.ndarray]]) -> None:
    """Stages keep their scale, and a model's held-out losses are ``losses[cell][stage]`` by its tag."""
    def held(model, *a):
        cell, stage = load_model(model)[2]["tag"].split("/")
        return losses[cell][stage].copy()

    monkeypatch.setattr(continuation, "scaled_model", lambda model, *a: (model, {}))
    for module in (continuation, ex, deeper):
        monkeypatch.setattr(module, "held_out_losses", held)


@pytest.fixture()
def plateau(monkeypatch):
    """The 1-layer cell converges at 0.5 × CALM; the 2-layer cell's first stages sit on a plateau at about CALM, and
    any stage that starts from the 1-layer cell reaches 0.45 × CALM."""
    tagged_losses(monkeypatch, {"diag-L1-uniform1": {"stage1": CALM * 0.5, "stage2": CALM * 0.5, "better": CALM * 0.3},
                                "diag-L2-uniform1": {"stage1": CALM, "stage2": CALM * 0.99, "stage3": CALM * 0.45,
                                                     "stage4": CALM * 0.45}})


def test_a_cell_above_its_floor_restarts_from_it(tmp_path, plateau):
    ex.run_cell(LOW, ON, tmp_path / "out", tmp_path / "runs", TaggedTrainer())
    floor_model = ex.cell_dir(tmp_path / "out", LOW) / "model.npz"
    trainer = TaggedTrainer()
    m = ex.run_cell(HIGH, ON, tmp_path / "out", tmp_path / "runs", trainer)
    assert trainer.calls == ["stage1", "stage2", "stage3", "stage4"]
    assert trainer.starts[2] == str(floor_model)  # the restart: from the floor, not from stage 2
    assert trainer.starts[3].endswith("diag-L2-uniform1/stage3/model.npz")  # then on from the best stage again
    assert [s.get("restart", False) for s in m["train"]["stages"]] == [False, False, True, False]
    assert m["train"]["converged"] and m["train"]["chosen_stage"] == 3
    assert m["train"]["floor"] | {"sha256": None} == {"model": str(floor_model), "sha256": None,
                                                      "held_out": pytest.approx(CALM.mean() * 0.5), "stuck": False}


def test_without_the_rule_the_plateau_ends_the_cell(tmp_path, plateau):
    ex.run_cell(LOW, OFF, tmp_path / "out", tmp_path / "runs", TaggedTrainer())
    trainer = TaggedTrainer()
    m = ex.run_cell(HIGH, OFF, tmp_path / "out", tmp_path / "runs", trainer)
    assert trainer.calls == ["stage1", "stage2"] and m["train"]["converged"] and "floor" not in m["train"]


def test_stuck_is_the_stage_rule_read_from_the_cell_to_its_floor():
    st = Stages(steps=10, most=3, batch=8, seeds=1)
    cell = StageResult(2, None, {}, CALM, 0.0)
    assert stuck(cell, StageResult(0, None, {}, CALM * 0.9, 0.0), st)  # 10 % lower, far beyond 2 SE
    assert not stuck(cell, StageResult(0, None, {}, CALM * 0.98, 0.0), st)  # within 3 %
    assert not stuck(cell, StageResult(0, None, {}, CALM, 0.0), st) and not stuck(cell, None, st)
    noisy = CALM * np.random.default_rng(1).lognormal(0.0, 1.5, CALM.size)
    noisy *= 0.9 * CALM.mean() / noisy.mean()  # 10 % lower, but within 2 paired SE (1.4)
    assert not stuck(cell, StageResult(0, None, {}, noisy, 0.0), st)


def test_a_stored_cell_above_its_floor_goes_on_under_the_rule(tmp_path, plateau):
    out, runs = tmp_path / "out", tmp_path / "runs"
    for c in (LOW, HIGH):
        ex.run_cell(c, OFF, out, runs, TaggedTrainer())
    before = json.loads((ex.cell_dir(out, HIGH) / "metrics.json").read_text())
    assert before["train"]["chosen_stage"] == 2 and same_signature(before["signature"], HIGH, ON)
    assert not goes_on(before, ON)  # not until it is checked
    assert HIGH.name in sum(ex.queue_cells(ON, ("table1",), out, ["uniform:1"]), ())  # the check finds it stuck
    checked = json.loads((ex.cell_dir(out, HIGH) / "metrics.json").read_text())
    assert checked["train"]["floor"]["stuck"] and goes_on(checked, ON) and not goes_on(checked, OFF)
    low = json.loads((ex.cell_dir(out, LOW) / "metrics.json").read_text())
    assert "floor" not in low["train"]  # depth 1 has no floor
    trainer = TaggedTrainer()
    sw = ex.sweep(ON, ("table1",), out, runs, trainer=trainer, only=[LOW.name, HIGH.name])
    m = sw.cells[HIGH.name]
    assert sw.trained == [HIGH.name] and trainer.calls == ["stage3", "stage4"]
    assert trainer.starts[0] == str(ex.cell_dir(out, LOW) / "model.npz")
    assert m["train"]["stages"][:2] == before["train"]["stages"] and m["train"]["chosen_stage"] == 3
    assert m["signature"]["stages"]["floor"] is True and not m["train"]["floor"]["stuck"]
    assert ex.sweep(ON, ("table1",), out, runs, trainer=trainer, only=[LOW.name, HIGH.name]).trained == []


def test_a_cell_is_checked_again_when_its_floor_changes(tmp_path, plateau):
    """The 2-layer cell passes its check; then the 1-layer cell is replaced by a better model, and the next sweep finds
    the 2-layer cell stuck above it."""
    out, runs = tmp_path / "out", tmp_path / "runs"
    for c in (LOW, HIGH):
        ex.run_cell(c, ON, out, runs, TaggedTrainer())
    m = ex.load_cell(out, HIGH, ON)
    assert not m["train"]["floor"]["stuck"] and deeper.check_stored(HIGH, ON, out, m) == m  # nothing new
    P, Q, meta = load_model(ex.cell_dir(out, LOW) / "model.npz")  # trained on, as a floor that goes on is:
    save_model(ex.cell_dir(out, LOW) / "model.npz", P, Q, meta | {"tag": "diag-L1-uniform1/better"})
    low = json.loads((ex.cell_dir(out, LOW) / "metrics.json").read_text())
    low["train"]["stages"][low["train"]["chosen_stage"] - 1]["held_out"] = float((CALM * 0.3).mean())
    (ex.cell_dir(out, LOW) / "metrics.json").write_text(json.dumps(low))
    again = deeper.check_stored(HIGH, ON, out, m)
    assert again["train"]["floor"]["stuck"] and len(again["train"]["stages"]) == ON.stages.most
    assert goes_on(again, replace(ON, stages=replace(ON.stages, most=5))) and not goes_on(again, ON)  # (at the cap)


def test_the_floor_is_the_budgets_cell_one_layer_shallower():
    assert shallower(HIGH, ON) == LOW and shallower(LOW, ON) is None and shallower(HIGH, OFF) is None
    lean = budgets.BUDGETS["lean"]
    assert lean.stages.floor and budgets.BUDGETS["paper"].stages.floor and not budgets.BUDGETS["quick"].stages.floor
    assert shallower(ex.Cell("full", 8, "uniform:5"), lean) == ex.Cell("full", 7, "uniform:5")
    assert "floor" not in ex.cell_signature(HIGH, OFF)["stages"] and ex.cell_signature(HIGH, ON)["stages"]["floor"]
    grouped = budgets.chains(ON, [LOW, HIGH, ex.Cell("diag", 1, "categorical:1,3")])
    assert [[c.name for c in g] for g in grouped] == [[LOW.name, HIGH.name], ["diag-L1-categorical1_3"]]


def test_the_record_names_the_floor_the_cell_was_compared_with(tmp_path, plateau):
    """The floor is replaced while the cell trains (another process trains it on): the record keeps the hash of the
    model the cell started from and was compared with, so the next sweep checks the cell against the new one."""
    import hashlib

    out, runs = tmp_path / "out", tmp_path / "runs"
    ex.run_cell(LOW, ON, out, runs, TaggedTrainer())
    floor_model = ex.cell_dir(out, LOW) / "model.npz"
    first = hashlib.sha256(floor_model.read_bytes()).hexdigest()

    class Replacing(TaggedTrainer):
        def __call__(self, cfg, run):
            if run.name == "stage2":
                P, Q, meta = load_model(floor_model)
                save_model(floor_model, P, Q, meta | {"tag": "diag-L1-uniform1/better"})
            return super().__call__(cfg, run)

    m = ex.run_cell(HIGH, ON, out, runs, Replacing())
    assert m["train"]["floor"]["sha256"] == first != hashlib.sha256(floor_model.read_bytes()).hexdigest()
