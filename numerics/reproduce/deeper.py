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

FULL holds DIAG the same way, and under ``Stages.floor`` it starts from the finished DIAG cell of its depth: that
start is a candidate beside the cell's stages (:func:`start_stage`), kept where the cell's best stage is stuck above
it. A FULL cell stored before the rule, or whose DIAG cell has changed since, is checked against it
(:func:`check_start`); where it keeps the start, the start is evaluated and judged as a trained cell is, and replaces
the cell's model.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from numerics.io import atomic_write_json, file_sha256, load_model, read_json, save_model
from numerics.models import kind_of
from numerics.reproduce.budgets import Budget, Cell, recipe_start, shallower
from numerics.reproduce.judge import assess, failure
from numerics.train.continuation import StageResult, floor_record, held_out_losses, kept


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
    return None if model is None else (low, model, file_sha256(model))


def as_stage(model: Path, cell: Cell, budget: Budget, sha: str | None = None) -> StageResult:
    """``model`` (of ``cell``) as a stage to start from and compare with: its held-out losses, and ``sha`` (the hash
    of the file that was evaluated, whatever replaces it later) for :func:`numerics.train.continuation.floor_record`."""
    return StageResult(0, model, {"sha256": sha} if sha else {}, held_out(model, cell, budget), 0.0)


def floor(cell: Cell, budget: Budget, out: Path) -> StageResult | None:
    """The cell's floor under ``out`` as a stage (:func:`as_stage`), or ``None`` (:func:`floor_file`)."""
    found = floor_file(cell, budget, out)
    return None if found is None else as_stage(found[1], found[0], budget, found[2])


def stored_mean(m: dict[str, Any]) -> float | None:
    """The held-out loss of a stored cell's model, from its record: its chosen stage's (or its kept start's), unless a
    rescue scaled the model after it (``None``: evaluate the model)."""
    if (m.get("rescue") or {}).get("scale", 1.0) < 1.0:
        return None
    t, k = m["train"], int(m["train"]["chosen_stage"])
    return float(t["start_check"]["held_out"] if k == 0 else t["stages"][k - 1]["held_out"])


def settled(own: float | None, low: float | None, budget: Budget) -> bool:
    """The recorded held-out losses decide without an evaluation: the cell's ``own`` is less than the stage rule's
    ``rel`` of it above ``low`` (the floor's or the start's), so it is not stuck whatever the SE."""
    return own is not None and low is not None and own - low <= budget.stages.rel * abs(own)


def held_start(cell: Cell, budget: Budget, start: Path | None) -> Path | None:
    """``start`` where it is a start the cell holds (:func:`start_stage`): under ``Stages.floor``, FULL's DIAG model
    of the cell's depth; ``None`` otherwise."""
    if not budget.stages.floor or start is None or not kind_of(cell.model).diag_phase:
        return None
    return start if load_model(start)[0].shape[0] == cell.layers else None


def as_full(start: Path, cell: Cell, dest: Path) -> Path:
    """The DIAG model ``start`` saved at ``dest`` as a model of the cell's kind, naming the file it came from."""
    P, Q, meta = load_model(start)
    save_model(dest, P, Q, {k: v for k, v in meta.items() if k != "config"}
               | {"kind": cell.model, "start": str(start), "start_sha256": file_sha256(start)})
    return dest


def start_stage(cell: Cell, budget: Budget, start: Path | None, run: Path) -> StageResult | None:
    """The cell's start as a stage ``0`` it may keep (:func:`numerics.train.continuation.kept`): saved as
    ``run/start.npz`` (:func:`as_full`), with its held-out losses, its hash and the DIAG cell's count of sequences
    dropped in the final phase; ``None`` where the cell holds no start (:func:`held_start`)."""
    if held_start(cell, budget, start) is None:
        return None
    low = read_json(start.parent / "metrics.json") if (start.parent / "metrics.json").exists() else {}
    info = {"sha256": file_sha256(start), "steps": 0, "dropped_final": (low.get("train") or {}).get("dropped_final", 0)}
    return replace(as_stage(as_full(start, cell, run / "start.npz"), cell, budget), metrics=info)


def check_start(cell: Cell, budget: Budget, out: Path, m: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored FULL cell ``m`` checked against the start it holds (:func:`held_start`), where it has no check
    against that start's file: ``"start_check"`` joins its ``train`` record.  Where the start is lower on the
    held-out sequences by more than the stage rule allows (:func:`numerics.train.continuation.kept`), it is evaluated
    and judged as a trained cell (:func:`numerics.reproduce.judge.assess`) and, if it passes, replaces the cell's
    model (``"chosen_stage"`` ``0``; its record is written first, and a check cut short before the model is
    finished by the next one).  A cell that kept a start since replaced, or a Fig. 5 cell (its seed replicas are
    the cell's) that would keep one, is marked ``"stale"``: the sweep trains it again.  ``m`` as it is otherwise."""
    start = None if m is None or m.get("failed") else held_start(cell, budget, recipe_start(
        cell, budget, lambda c: model_file(out, c)))
    d, sha = out / "models" / cell.name, None if start is None else file_sha256(start)
    done = None if start is None else m["train"].get("start_check") or {}
    if start is None or done.get("sha256") == sha:
        if done and done.get("kept") and load_model(d / "model.npz")[2].get("start_sha256") != sha:
            as_full(start, cell, d / "model.npz")
        return m
    if int(m["train"]["chosen_stage"]) == 0:
        return stale(d, m, f"it kept its start, {start}, which has since changed")
    low = read_json(start.parent / "metrics.json")
    own, low_mean = stored_mean(m), stored_mean(low)
    if settled(own, low_mean, budget):
        record = {"held_out": low_mean, "trained": own}
        begin = trained = None
    else:
        begin, trained = as_stage(start, cell, budget, sha), as_stage(d / "model.npz", cell, budget)
        record = {"held_out": begin.mean, "trained": trained.mean}
    t = m["train"] | {"start_check": {"sha256": sha} | record | {"kept": False}}
    if begin is not None and kept([trained], begin, budget.stages) is begin:
        if cell.keep_seeds:
            return stale(d, m, f"its start, {start}, is lower than its stages, and its seed replicas train again")
        P, Q, _ = load_model(start)
        t = {k: v for k, v in t.items() if k != "floor"}  # the floor's check was of the model it replaces
        new = {k: v for k, v in m.items() if k != "rescue"} | assess(P, Q, cell, budget) | {"train": t | {
            "chosen_stage": 0, "dropped_final": low["train"].get("dropped_final", 0),
            "start_check": t["start_check"] | {"kept": True}}}
        new["failed"] = failure(new)
        if new["failed"] is None:
            atomic_write_json(d / "metrics.json", new)
            as_full(start, cell, d / "model.npz")
            return new
        t["start_check"]["failed"] = new["failed"]
    m = m | {"train": t}
    atomic_write_json(d / "metrics.json", m)
    return m


def stale(d: Path, m: dict[str, Any], why: str) -> dict[str, Any]:
    """The stored cell ``m`` in ``d`` marked ``"stale"`` (``why``): the sweep trains it again."""
    m = m | {"stale": why}
    atomic_write_json(d / "metrics.json", m)
    return m


def check_stored(cell: Cell, budget: Budget, out: Path, m: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored cell ``m`` with its floor check (``"floor"`` in ``train``, written to its ``metrics.json``) where the
    budget has ``Stages.floor``, the cell passed, its floor is finished, and it has no check against that floor's model
    file (none, or one against a model the floor has since replaced); ``m`` as it is otherwise.  Where the recorded
    held-out losses put the cell less than ``rel`` of its loss above the floor, no sequence needs evaluating: the
    cell is not stuck whatever the SE.  A FULL cell is first checked against its start (:func:`check_start`); ``None``
    where that marks it stale."""
    m = check_start(cell, budget, out, m)
    if m is not None and m.get("stale"):
        return None  # trained again, as experiments.load_cell reads a stale cell
    found = floor_file(cell, budget, out)
    if m is None or found is None or m.get("failed") or (m["train"].get("floor") or {}).get("sha256") == found[2]:
        return m
    low, low_model, sha = found
    d = out / "models" / cell.name
    own_mean, low_mean = stored_mean(m), stored_mean(read_json(low_model.parent / "metrics.json"))
    if settled(own_mean, low_mean, budget):
        record = {"model": str(low_model), "sha256": sha, "held_out": low_mean, "stuck": False}
    else:
        record = floor_record(as_stage(d / "model.npz", cell, budget), as_stage(low_model, low, budget, sha),
                              budget.stages)
    m = m | {"train": m["train"] | {"floor": record}}
    atomic_write_json(d / "metrics.json", m)
    return m


__all__ = ["as_full", "as_stage", "check_start", "check_stored", "floor", "floor_file", "held_out", "held_start",
           "model_file", "start_stage"]
