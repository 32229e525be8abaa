"""A deeper cell holds the shallower one (``Stages.floor``, :mod:`numerics.train.continuation`).

A layer whose ``Q`` is zero leaves the tokens as they are, so an ``L``-layer model can do whatever an
``(L − 1)``-layer one of the same kind does, and its best loss is at most the shallower one's. A trained cell that
ends above the finished cell one layer shallower (its *floor*: same model and noise setting, the same held-out
sequences) by more than the stage rule allows has stopped on a plateau, not converged. Under a budget with
``Stages.floor`` such a cell goes on, and its next stage starts from the floor's model with a layer appended near the
identity.

A cell is checked when it is trained, if its floor is finished by then; otherwise, if it was stored before the
budget had the rule, or if its floor has changed since, the sweep checks it when it finds both finished
(:func:`check_stored`), before training and again after it trains the floor. The check is recorded under ``"floor"``
in the cell's ``metrics.json`` (``train``), with the floor's hash, and a stuck cell goes on from its record
(:func:`numerics.reproduce.budgets.goes_on`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from numerics.io import atomic_write_json, read_json
from numerics.reproduce.budgets import Budget, Cell, shallower
from numerics.train.continuation import StageResult, floor_record, held_out_losses


def model_file(out: Path, cell: Cell) -> Path | None:
    """The model file of the finished, passing cell under ``out``, else ``None``."""
    d = out / "models" / cell.name
    if not (d / "metrics.json").exists() or not (d / "model.npz").exists():
        return None
    return None if read_json(d / "metrics.json").get("failed") else d / "model.npz"


def held_out(model: Path, cell: Cell, budget: Budget) -> np.ndarray:
    return held_out_losses(model, cell.noise, budget.n, budget.d, budget.stages.held_out)


def floor_file(cell: Cell, budget: Budget, out: Path) -> tuple[Cell, Path, str] | None:
    """The cell's floor under ``out``: that cell, its model file and the file's sha256; ``None`` where the budget has
    no ``Stages.floor``, its grid no cell one layer shallower, or that cell is not finished and passing."""
    low = shallower(cell, budget)
    model = model_file(out, low) if low is not None else None
    return None if model is None else (low, model, hashlib.sha256(model.read_bytes()).hexdigest())


def as_stage(model: Path, cell: Cell, budget: Budget, sha: str | None = None) -> StageResult:
    """``model`` (of ``cell``) as a stage to start from and compare with: its held-out losses, and ``sha`` (the hash
    of the file that was evaluated, whatever replaces it later) for :func:`numerics.train.continuation.floor_record`."""
    return StageResult(0, model, {"sha256": sha} if sha else {}, held_out(model, cell, budget), 0.0)


def floor(cell: Cell, budget: Budget, out: Path) -> StageResult | None:
    """The cell's floor under ``out`` as a stage (:func:`as_stage`), or ``None`` (:func:`floor_file`)."""
    found = floor_file(cell, budget, out)
    return None if found is None else as_stage(found[1], found[0], budget, found[2])


def stored_mean(m: dict[str, Any]) -> float | None:
    """The held-out loss of a stored cell's model, from its record: its chosen stage's, unless a rescue scaled the
    model after it (``None``: evaluate the model)."""
    if (m.get("rescue") or {}).get("scale", 1.0) < 1.0:
        return None
    t = m["train"]
    return float(t["stages"][int(t["chosen_stage"]) - 1]["held_out"])


def check_stored(cell: Cell, budget: Budget, out: Path, m: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored cell ``m`` with its floor check (``"floor"`` in ``train``, written to its ``metrics.json``) where the
    budget has ``Stages.floor``, the cell passed, its floor is finished, and it has no check against that floor's model
    file (none, or one against a model the floor has since replaced); ``m`` as it is otherwise.  Where the recorded
    held-out losses put the cell less than ``rel`` of its loss above the floor, no sequence needs evaluating: the
    cell is not stuck whatever the SE."""
    found = floor_file(cell, budget, out)
    if m is None or found is None or m.get("failed") or (m["train"].get("floor") or {}).get("sha256") == found[2]:
        return m
    low, low_model, sha = found
    d = out / "models" / cell.name
    own_mean, low_mean = stored_mean(m), stored_mean(read_json(low_model.parent / "metrics.json"))
    if own_mean is not None and low_mean is not None and own_mean - low_mean <= budget.stages.rel * abs(own_mean):
        record = {"model": str(low_model), "sha256": sha, "held_out": low_mean, "stuck": False}
    else:
        record = floor_record(as_stage(d / "model.npz", cell, budget), as_stage(low_model, low, budget, sha),
                              budget.stages)
    m = m | {"train": m["train"] | {"floor": record}}
    atomic_write_json(d / "metrics.json", m)
    return m


__all__ = ["as_stage", "check_stored", "floor", "floor_file", "held_out", "model_file"]
