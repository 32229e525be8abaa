"""Every committed sweep cell obeys the evaluation's rules, judged again from its ``metrics.json``.

A cell under ``results/`` (the quick budget's ``results/models``, the paper budget's ``results/paper/models`` and
the convergence reruns under ``results/paper/convergence/models``) is committed with a model only when it passes:
no failure by the current rule (:func:`numerics.reproduce.judge.failure`, applied again to the stored numbers),
no sequence left out of the final tenth of training, the budget's evaluation on at least 10⁵ fresh sequences, the
10⁶-sequence tail check from depth 4, and for GD++ at σ = 0 from depth 4 the spectral check.  A failed cell keeps
no model.  A Fig. 5 cell holds the budget's number of seed replicas, the cell itself first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from numerics.data import Noise
from numerics.evaluate.losses import TAIL_SEQUENCES
from numerics.reproduce.budgets import TAIL_DEPTH, get_budget
from numerics.reproduce.judge import failure

ROOT = Path(__file__).resolve().parents[2]
CELLS = sorted(p.parent for p in (ROOT / "results").glob("**/models/*/metrics.json"))


def test_the_committed_results_hold_cells():
    assert len(CELLS) >= 36  # the quick budget's grid, at least


@pytest.mark.parametrize("cell", CELLS, ids=lambda p: str(p.relative_to(ROOT / "results")))
def test_a_committed_cell_passes_the_evaluation_or_keeps_no_model(cell: Path):
    m = json.loads((cell / "metrics.json").read_text())
    if not (cell / "model.npz").exists():
        assert m["failed"], "a cell without model.npz must be a failed cell"
        return
    budget = get_budget(m["budget"])
    assert m["failed"] is None and failure(m) is None
    assert m["train"]["dropped_final"] == 0
    assert m["eval"]["sequences"] == budget.eval_sequences >= 100_000
    if m["layers"] >= TAIL_DEPTH:
        tc = m["tail_check"]
        assert tc["passed"] and tc["sequences"] >= TAIL_SEQUENCES
        if m["model"] == "gdpp" and Noise.parse(m["noise"]).sigma_max == 0:
            assert m["spectral"]["above"] == 0 and m["spectral"]["spectra"] == budget.spectral_sequences
    else:
        assert "tail_check" not in m
    if "seeds" in m:  # a Fig. 5 cell: itself and its seed replicas, each with its own master seed, each judged
        seeds = m["seeds"]
        assert len(seeds["loss"]) == len(set(seeds["seed"])) == len(seeds["failed"]) == budget.seeds
        assert seeds["sequences"] >= 100_000 and seeds["loss"][0][-1] == pytest.approx(m["eval"]["loss"])
