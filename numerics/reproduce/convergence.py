r"""The convergence check: a finished cell trained again with every stage twice as long, and
compared.

It reports; it changes nothing under ``--out``.  The longer run trains into its own run directory
(``RUNS/<budget>-x2/<cell>/``) through the same :func:`numerics.reproduce.cell.train_cell`, and the
check *holds* when the two adjusted losses (on the same evaluation sequences) differ by at most the
stopping rule's ``RULES.stop_rel`` of the cell's loss, or by at most ``RULES.stop_se`` standard
errors of the difference (the two SEs added in quadrature: an upper bound of the paired SE).
``OUT/convergence.json`` keeps the entries.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from numerics.io import atomic_write_json
from numerics.reproduce.cell import train_cell
from numerics.reproduce.grid import PARTS, Budget, Schedule, cells_for
from numerics.reproduce.record import parse_record, read_convergence
from numerics.reproduce.sweep import load_records

FACTOR = 2


def longer(budget: Budget) -> Budget:
    """``budget`` with every stage :data:`FACTOR` times as long."""
    s = budget.schedule
    return replace(
        budget, name=f"{budget.name}-x{FACTOR}", schedule=replace(s, steps=s.steps * FACTOR)
    )


def holds(loss: float, se: float, loss2: float, se2: float) -> bool:
    """The two losses agree within the stopping rule's thresholds
    (:meth:`numerics.reproduce.grid.Schedule.stop`, with the SEs added in quadrature)."""
    return Schedule.stop(abs(loss2 - loss), loss, math.hypot(se, se2), blown=False)


def check(
    budget: Budget,
    out: Path,
    runs: Path,
    names: tuple[str, ...],
    cell_fn: Callable[..., dict[str, bytes]] = train_cell,
) -> dict[str, Any]:
    """Retrain the finished, passing cells ``names`` with longer stages and compare; the entries,
    also written to ``OUT/convergence.json`` (merged with earlier entries)."""
    grid = {c.name: c for c in cells_for(budget, PARTS)}
    have = load_records(out, [grid[n] for n in names])
    slow = longer(budget)
    path = out / "convergence.json"
    earlier = read_convergence(path, budget.name)  # before any training: a corrupt one is refused
    entries = {}
    for name in names:
        rec = have.get(name)
        if rec is None or rec.failed:
            raise ValueError(f"--cell {name} is not a finished, passing cell under {out}")
        files = cell_fn(grid[name], slow, runs / slow.name / name)
        new = parse_record(json.loads(files["metrics.json"]), name)
        a, b = rec.eval, new.eval
        entries[name] = {
            "loss": a["loss"],
            "se": a["se"],
            "steps": rec.training["steps"],
            "factor": FACTOR,
            "failed": new.failed,
            "loss_longer": b["loss"],
            "se_longer": b["se"],
            "steps_longer": new.training["steps"],
            "relative": b["loss"] / a["loss"] - 1 if a["loss"] else 0.0,
            "holds": new.failed is None and holds(a["loss"], a["se"], b["loss"], b["se"]),
        }
    res = {"budget": budget.name, "factor": FACTOR, "cells": earlier | entries}
    atomic_write_json(path, res)
    return res


__all__ = ["FACTOR", "check", "holds", "longer"]
