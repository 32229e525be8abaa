"""FULL holds DIAG: under ``Stages.floor`` a FULL cell keeps its start, the finished DIAG cell of its depth, where its
best stage ends above it by more than the stage rule allows (:func:`numerics.train.continuation.kept`,
:func:`numerics.reproduce.deeper.check_start`).

The held-out losses are made up per stage and read back by the tag each model file carries
(:class:`tests.reproduce.test_deeper.TaggedTrainer`), so the start saved as a FULL model has the DIAG stage's losses.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from numerics.io import load_model, save_model
from numerics.reproduce import deeper
from numerics.reproduce import experiments as ex
from numerics.reproduce.budgets import left_to_train
from tests.reproduce.test_deeper import CALM, TaggedTrainer, tagged_losses
from tests.reproduce.test_going_on import TEST

OFF = replace(TEST, models=("diag", "full"), continuation=False, stages=replace(TEST.stages, most=3))
ON = replace(OFF, stages=replace(OFF.stages, floor=True))
DIAG, FULL = ex.Cell("diag", 1, "uniform:1"), ex.Cell("full", 1, "uniform:1")


def held_out(monkeypatch, full: float) -> None:
    """DIAG's stages end at 0.5 × CALM; FULL's at ``full`` × CALM, then 1 % lower (converged by the stage rule)."""
    tagged_losses(monkeypatch, {"diag-L1-uniform1": {"stage1": CALM * 0.5, "stage2": CALM * 0.5},
                                "full-L1-uniform1": {"stage1": CALM * full, "stage2": CALM * full * 0.99}})


def cell_files(out, cell):
    d = ex.cell_dir(out, cell)
    return json.loads((d / "metrics.json").read_text()), load_model(d / "model.npz")


def test_full_keeps_its_diag_start_where_every_stage_ends_above_it(tmp_path, monkeypatch):
    held_out(monkeypatch, 0.8)
    out, runs = tmp_path / "out", tmp_path / "runs"
    diag = ex.run_cell(DIAG, ON, out, runs, TaggedTrainer())
    trainer = TaggedTrainer()
    m = ex.run_cell(FULL, ON, out, runs, trainer)
    assert trainer.calls == ["stage1", "stage2"] and m["train"]["converged"]
    assert m["train"]["chosen_stage"] == 0 and m["train"]["start_check"]["kept"]
    assert m["train"]["start_check"]["held_out"] == pytest.approx(CALM.mean() * 0.5)
    assert m["train"]["start_check"]["trained"] == pytest.approx(CALM.mean() * 0.8 * 0.99)  # its best stage
    _, (P, Q, meta) = cell_files(out, FULL)
    dP, dQ, _ = load_model(ex.cell_dir(out, DIAG) / "model.npz")
    assert np.array_equal(P, dP) and np.array_equal(Q, dQ) and meta["kind"] == "full"
    assert m["eval"]["loss"] == diag["eval"]["loss"] and not m["failed"]  # the same model on the same sequences
    assert deeper.stored_mean(m) == pytest.approx(CALM.mean() * 0.5)


@pytest.mark.parametrize("full", [0.3, 0.51])  # below the start, or above it by less than the stage rule's 3 %
def test_a_stage_below_the_start_or_near_it_is_kept_as_before(tmp_path, monkeypatch, full):
    held_out(monkeypatch, full)
    out, runs = tmp_path / "out", tmp_path / "runs"
    ex.run_cell(DIAG, ON, out, runs, TaggedTrainer())
    m = ex.run_cell(FULL, ON, out, runs, TaggedTrainer())
    assert m["train"]["chosen_stage"] == 2 and not m["train"]["start_check"]["kept"]
    assert load_model(ex.cell_dir(out, FULL) / "model.npz")[2]["tag"] == "full-L1-uniform1/stage2"


def test_without_the_rule_full_keeps_its_best_stage(tmp_path, monkeypatch):
    held_out(monkeypatch, 0.8)
    out, runs = tmp_path / "out", tmp_path / "runs"
    ex.run_cell(DIAG, OFF, out, runs, TaggedTrainer())
    m = ex.run_cell(FULL, OFF, out, runs, TaggedTrainer())
    assert m["train"]["chosen_stage"] == 2 and "start_check" not in m["train"]


def test_a_stored_full_cell_is_checked_against_its_start(tmp_path, monkeypatch):
    """Stored before the rule, the FULL cell sits above its DIAG start: the next sweep's check gives it the start's
    model, evaluated as a trained cell, with nothing left to train; a second check evaluates nothing."""
    held_out(monkeypatch, 0.8)
    out, runs = tmp_path / "out", tmp_path / "runs"
    diag = ex.run_cell(DIAG, OFF, out, runs, TaggedTrainer())
    before = ex.run_cell(FULL, OFF, out, runs, TaggedTrainer())
    assert before["eval"]["loss"] != diag["eval"]["loss"]
    assert ex.queue_cells(ON, ("table1",), out, ["uniform:1"]) == [("diag-L2-uniform1", "full-L2-uniform1")]
    m, (P, Q, meta) = cell_files(out, FULL)
    assert m["train"]["chosen_stage"] == 0 and m["train"]["start_check"]["kept"] and not m["failed"]
    assert m["train"]["start_check"]["trained"] == pytest.approx(CALM.mean() * 0.8 * 0.99)
    assert m["train"]["stages"] == before["train"]["stages"] and m["eval"]["loss"] == diag["eval"]["loss"]
    assert meta["kind"] == "full" and np.array_equal(Q, load_model(ex.cell_dir(out, DIAG) / "model.npz")[1])
    assert not left_to_train(ex.load_cell(out, FULL, ON), ON)
    monkeypatch.setattr(deeper, "as_stage", lambda *a, **k: pytest.fail("evaluated again"))
    assert deeper.check_stored(FULL, ON, out, m) == m


@pytest.mark.parametrize("full", [0.3, 0.51])
def test_a_stored_full_cell_below_its_start_or_near_it_is_left_as_it_is(tmp_path, monkeypatch, full):
    held_out(monkeypatch, full)
    out, runs = tmp_path / "out", tmp_path / "runs"
    ex.run_cell(DIAG, OFF, out, runs, TaggedTrainer())
    before = ex.run_cell(FULL, OFF, out, runs, TaggedTrainer())
    model = (ex.cell_dir(out, FULL) / "model.npz").read_bytes()
    m = deeper.check_stored(FULL, ON, out, before)
    assert m == before | {"train": before["train"] | {"start_check": m["train"]["start_check"]}}
    assert not m["train"]["start_check"]["kept"] and (ex.cell_dir(out, FULL) / "model.npz").read_bytes() == model
    assert deeper.check_stored(DIAG, ON, out, ex.load_cell(out, DIAG, ON)) == ex.load_cell(out, DIAG, ON)  # no start


def test_the_report_names_a_kept_start_and_reads_no_stage_for_it():
    from numerics.reproduce.report import training_reason

    stage = {"held_out": 0.02, "blown": False, "scale": {"searched": True, "scale": 0.7, "pool_max": 1e4,
                                                          "mean_unscaled": 0.03, "mean": 0.02}}
    m = {"model": "full", "layers": 8, "noise": "categorical:1,3",
         "train": {"steps": 6000, "converged": True, "chosen_stage": 0, "stages": [stage | {"scale": {}}, stage],
                   "start_check": {"held_out": 0.0124, "trained": 0.0129, "kept": True}}}
    text = training_reason(m)
    assert "it keeps its start, the DIAG model of its depth (0.0124 held out" in text
    assert "scaled by c" not in text  # the last stage's fit is not the kept model's


def kept_stored(tmp_path, monkeypatch):
    """DIAG and FULL stored before the rule, then checked: FULL keeps its start."""
    held_out(monkeypatch, 0.8)
    out, runs = tmp_path / "out", tmp_path / "runs"
    ex.run_cell(DIAG, OFF, out, runs, TaggedTrainer())
    trained = ex.run_cell(FULL, OFF, out, runs, TaggedTrainer())
    return out, trained, deeper.check_stored(FULL, ON, out, ex.load_cell(out, FULL, ON))


def test_a_check_cut_short_between_its_writes_is_finished_by_the_next(tmp_path, monkeypatch):
    out, _, m = kept_stored(tmp_path, monkeypatch)
    model = ex.cell_dir(out, FULL) / "model.npz"
    good = model.read_bytes()
    P, Q, _ = load_model(model)
    save_model(model, P + 1e-3, Q, {"tag": "full-L1-uniform1/stage2"})  # as if the record alone was written
    assert deeper.check_stored(FULL, ON, out, m) == m and model.read_bytes() == good


def test_a_kept_start_since_replaced_sends_the_cell_back_to_training(tmp_path, monkeypatch):
    out, _, m = kept_stored(tmp_path, monkeypatch)
    assert m["train"]["chosen_stage"] == 0
    diag = ex.cell_dir(out, DIAG) / "model.npz"
    P, Q, meta = load_model(diag)
    save_model(diag, P, Q * 0.9, meta)  # DIAG trained again, its FULL cell not marked
    assert deeper.check_stored(FULL, ON, out, m) is None
    assert "kept its start" in json.loads((ex.cell_dir(out, FULL) / "metrics.json").read_text())["stale"]
    assert ex.load_cell(out, FULL, ON) is None
    assert FULL.name in sum(ex.queue_cells(ON, ("table1",), out, ["uniform:1"]), ())


def test_a_fig5_cell_that_would_keep_its_start_trains_again(tmp_path, monkeypatch):
    held_out(monkeypatch, 0.8)
    out, runs = tmp_path / "out", tmp_path / "runs"
    ex.run_cell(DIAG, OFF, out, runs, TaggedTrainer())
    ex.run_cell(FULL, OFF, out, runs, TaggedTrainer())
    seeded = replace(FULL, keep_seeds=True)
    assert deeper.check_stored(seeded, ON, out, ex.load_cell(out, FULL, ON)) is None
    assert "seed replicas" in json.loads((ex.cell_dir(out, FULL) / "metrics.json").read_text())["stale"]
