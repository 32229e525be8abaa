"""The convergence check's adoption: a cell whose longer run ended lower takes that run and is checked again.

The trainer here writes a plain-GD model whose step size depends on the run directory (the cell's own run or the
check's ``convergence<factor>`` run), so that the longer runs are better models than the cell's own; everything else
(staging, evaluation, the check's rule) is the real code.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from numerics import models
from numerics.io import save_model
from numerics.models.constructions import gd
from numerics.reproduce import convergence
from numerics.reproduce import experiments as ex
from numerics.reproduce import timing
from numerics.reproduce.report import adopted_lines, training_reason

TEST = ex.get_budget("test")
DIAG = ex.Cell("diag", 1, "uniform:1")
FULL = ex.Cell("full", 1, "uniform:1")


class Ladder:
    """Writes ``gd(η, L)`` with ``η`` from the run: ``steps[k]`` for the check's ``convergence<k>`` runs,
    ``steps[1]`` for the cell's own; records the runs it trained."""

    def __init__(self, steps: dict[int, float]) -> None:
        self.steps, self.calls = steps, []

    def __call__(self, cfg, run: Path) -> ex.Trained:
        self.calls.append(run.as_posix())
        factor = next((int(p[len("convergence"):]) for p in run.parts if p.startswith("convergence")), 1)
        P, Q = (np.asarray(x, np.float64) for x in models.universal(gd(self.eta(factor, cfg), cfg.layers), cfg.d))
        save_model(run / "model.npz", P, Q)
        return ex.Trained({"best_seed": 0, "steps": cfg.steps}, run / "model.npz")

    def eta(self, factor: int, cfg) -> float:
        return self.steps[factor]


def cells(tmp_path: Path, trainer: Ladder) -> Path:
    out = tmp_path / "out"
    for cell in (DIAG, FULL):  # FULL starts from the DIAG cell of its depth
        ex.run_cell(cell, TEST, out, tmp_path / "runs", trainer)
    return out


def metrics(out: Path, cell: ex.Cell) -> dict:
    return json.loads((out / "models" / cell.name / "metrics.json").read_text())


def test_a_cell_whose_longer_run_ends_lower_takes_it_and_is_checked_at_twice_its_length(tmp_path):
    trainer = Ladder({1: 0.01, 2: 0.04, 4: 0.04})
    out = cells(tmp_path, trainer)
    before = metrics(out, DIAG)
    assert metrics(out, FULL)["train"]["start"].endswith(f"{DIAG.name}/model.npz")
    e = convergence.check(TEST, out, tmp_path / "runs", cells=(DIAG,), trainer=trainer)["cells"][DIAG.name]
    m = metrics(out, DIAG)
    assert e["holds"] and e["adopted"]["factor"] == 2 and e["adopted"]["relative"] < -convergence.REL
    assert m["adopted"]["factor"] == 2 and m["adopted"]["replaced"]["loss"] == before["eval"]["loss"]
    assert m["adopted"]["replaced"]["stages"] == before["train"]["stages"]
    assert m["eval"]["loss"] < before["eval"]["loss"] and e["loss"] == pytest.approx(m["eval"]["loss"], rel=1e-9)
    assert any("/convergence4/" in c for c in trainer.calls)  # checked again, every stage 4x the budget's
    assert ex.load_cell(out, DIAG, TEST) == m  # the sweep accepts the longer stages of an adopted cell
    assert timing.runs([m]).__next__() is m and len(list(timing.runs([m]))) == 2  # the replaced run still counts
    assert DIAG.name in adopted_lines({DIAG.name: m})[0] and "2× the budget's" in training_reason(m)
    assert "stale" in metrics(out, FULL) and ex.load_cell(out, FULL, TEST) is None  # trained again from the new DIAG
    assert not list((out / "convergence" / "models").glob(f"{DIAG.name}/*.tmp"))


def test_the_cli_names_the_run_a_cell_took(tmp_path, capsys, monkeypatch):
    from numerics.cli import main

    trainer = Ladder({1: 0.01, 2: 0.04, 4: 0.04})
    out = cells(tmp_path, trainer)
    real = convergence.check
    monkeypatch.setattr(convergence, "check", lambda *a, **k: real(*a, **k, trainer=trainer))
    assert main(["reproduce", "--budget", "test", "--out", str(out), "--runs", str(tmp_path / "runs"),
                 "--convergence", "--cell", DIAG.name]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"{DIAG.name}: ") and "holds (it holds its ×2 run: the budget's run moved by -" in line


def test_a_longer_run_that_ends_higher_is_not_taken(tmp_path):
    trainer = Ladder({1: 0.04, 2: 0.01})
    out = cells(tmp_path, trainer)
    before = metrics(out, DIAG)
    e = convergence.check(TEST, out, tmp_path / "runs", cells=(DIAG,), trainer=trainer)["cells"][DIAG.name]
    assert not e["holds"] and e["change"] > 0 and "adopted" not in e
    assert metrics(out, DIAG) == before and "stale" not in metrics(out, FULL)


def test_adoption_stops_at_the_largest_stage_factor(tmp_path):
    """Every longer run is better: the cell takes its ×2 and ×4 runs, and keeps the ×4 run's failing verdict."""
    trainer = Ladder({1: 0.005, 2: 0.01, 4: 0.015, 8: 0.03})
    out = cells(tmp_path, trainer)
    e = convergence.check(TEST, out, tmp_path / "runs", cells=(DIAG,), trainer=trainer)["cells"][DIAG.name]
    assert metrics(out, DIAG)["adopted"]["factor"] == convergence.MOST_FACTOR == 4
    assert not e["holds"] and e["adopted"]["factor"] == 4 and e["change"] < 0
    assert not any("/convergence16/" in c for c in trainer.calls)


def test_an_adoption_cut_short_is_finished_by_the_next_check(tmp_path, monkeypatch):
    trainer = Ladder({1: 0.01, 2: 0.04, 4: 0.04})
    out = cells(tmp_path, trainer)
    before = metrics(out, DIAG)
    real = convergence.finish_adoption

    def cut(cell, where):
        path = where / "convergence" / "models" / cell.name / "metrics.json"
        if path.exists() and "adopted" in json.loads(path.read_text()):
            raise KeyboardInterrupt  # after the adoption was written down, before any file moved
        real(cell, where)

    monkeypatch.setattr(convergence, "finish_adoption", cut)
    with pytest.raises(KeyboardInterrupt):
        convergence.check(TEST, out, tmp_path / "runs", cells=(DIAG,), trainer=trainer)
    assert metrics(out, DIAG) == before
    monkeypatch.setattr(convergence, "finish_adoption", real)
    e = convergence.check(TEST, out, tmp_path / "runs", cells=(DIAG,), trainer=trainer)["cells"][DIAG.name]
    assert e["holds"] and metrics(out, DIAG)["adopted"]["factor"] == 2 and "stale" in metrics(out, FULL)


class Spread(Ladder):
    """``gd(η, L)`` with ``η`` from the run's stage factor and master seed: ``steps[(factor, seed)]``, seed 0 the
    cell's own; the runs of one cell land apart as the seed changes."""

    def eta(self, factor: int, cfg) -> float:
        return self.steps[(factor, cfg.seed - ex.train_config(DIAG, TEST).seed)]


def test_a_longer_run_that_ends_higher_is_judged_over_master_seeds(tmp_path, capsys, monkeypatch):
    # seed 0's longer run ends higher; seeds 1 and 2 swap it round and stay put: the means over seeds do not move
    trainer = Spread({(1, 0): 0.04, (2, 0): 0.01, (1, 1): 0.01, (2, 1): 0.04, (1, 2): 0.025, (2, 2): 0.025})
    out = cells(tmp_path, trainer)
    before, leasts, run_cell = metrics(out, DIAG), [], convergence.run_cell
    monkeypatch.setattr(convergence, "run_cell", lambda *a, **k: leasts.append((a[2].as_posix(), k["least"]))
                        or run_cell(*a, **k))
    e = convergence.check(TEST, out, tmp_path / "runs", cells=(DIAG,), trainer=trainer)["cells"][DIAG.name]
    sd = e["seeds"]
    assert e["change"] > 0 and e["relative"] > convergence.REL  # the one-run check does not hold ...
    assert e["holds"] and sd["holds"] and sd["attempts"] == [1, 2, 3]  # ... the means over three seeds do
    assert sd["losses"][0] == e["loss"] and sd["losses_longer"][0] == e["loss_longer"]
    assert sd["losses"][1] == pytest.approx(e["loss_longer"]) and sd["losses_longer"][1] == pytest.approx(e["loss"])
    assert sd["change"] == pytest.approx(0.0, abs=1e-12) and sd["loss"] == pytest.approx(np.mean(sd["losses"]))
    for k in (2, 3):  # each seed at the cell's length and at twice it, the longer in at least as many stages
        short, long = (metrics(out / "convergence" / "seeds" / f"x{f}" / f"attempt{k}", DIAG) for f in (1, 2))
        assert short["attempt"] == long["attempt"] == k
        assert len(long["train"]["stages"]) >= len(short["train"]["stages"])
    assert [k for w, k in leasts if "/x2/" in w] == [2, 2] and [k for w, k in leasts if "/x1/" in w] == [1, 1]
    assert metrics(out, DIAG) == before and "adopted" not in e  # nothing taken: the cell keeps its run
    assert "yes over 3 master seeds: mean" in convergence.markdown(convergence.check(TEST, out, tmp_path / "runs",
                                                                                     cells=(DIAG,), trainer=trainer))
    calls = len(trainer.calls)
    convergence.check(TEST, out, tmp_path / "runs", cells=(DIAG,), trainer=trainer)
    assert len(trainer.calls) == calls  # the entry and its seeds' runs are kept
    from numerics.cli import main

    real = convergence.check
    monkeypatch.setattr(convergence, "check", lambda *a, **k: real(*a, **k, trainer=trainer))
    assert main(["reproduce", "--budget", "test", "--out", str(out), "--runs", str(tmp_path / "runs"),
                 "--convergence", "--cell", DIAG.name]) == 0
    assert "holds; over master seeds 0, 1, 2: mean " in capsys.readouterr().err


def test_longer_runs_that_end_higher_for_every_seed_do_not_hold(tmp_path):
    trainer = Spread({(1, 0): 0.04, (2, 0): 0.01, (1, 1): 0.041, (2, 1): 0.011, (1, 2): 0.039, (2, 2): 0.009})
    out = cells(tmp_path, trainer)
    e = convergence.check(TEST, out, tmp_path / "runs", cells=(DIAG,), trainer=trainer)["cells"][DIAG.name]
    sd = e["seeds"]
    assert not e["holds"] and not sd["holds"] and sd["relative"] > convergence.REL
    assert sd["change"] > convergence.SE * sd["change_se"] > 0
    a, b = np.array(sd["losses"]), np.array(sd["losses_longer"])  # the SE of a difference of two means of three
    assert sd["change_se"] == pytest.approx(np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 3))
    assert "**no** over 3 master seeds" in convergence.markdown({"factor": 2, "rel": 0.03, "se": 2.0, "pending": [],
                                                                 "cells": {DIAG.name: e}})


def test_a_seed_whose_run_fails_fails_the_check_and_is_not_replaced_by_the_next_seed(tmp_path):
    trainer = Spread({(1, 0): 0.04, (2, 0): 0.01, (1, 1): 0.01, (2, 1): 5.0, (1, 2): 0.025, (2, 2): 0.025})
    out = cells(tmp_path, trainer)
    three = replace(TEST, attempts=3)  # a failed run of seed 1 would have an attempt left under the budget's count
    e = convergence.check(three, out, tmp_path / "runs", cells=(DIAG,), trainer=trainer)["cells"][DIAG.name]
    assert not e["holds"] and e["seeds"]["failed"].startswith("master seed 1, stages ×2: evaluation: largest")
    assert not any("/attempt3/" in c for c in trainer.calls if "/convergence2/" in c)  # seed 2 did not stand in
    assert "| **no**: master seed 1, stages ×2: evaluation" in convergence.markdown(
        {"factor": 2, "rel": 0.03, "se": 2.0, "pending": [], "cells": {DIAG.name: e}})
