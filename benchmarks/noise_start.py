r"""A cell trained in its budget's stages from the finished model of another noise setting, against its record.

A deep DIAG cell of the lean budget spends most of its steps in stages 3 and later, getting from the random start
to its basin.  The cells of one model and depth at neighbouring noise settings end at nearby models.  This script
trains each named cell as the sweep would (its budget's stages and stage rule, its floor under ``--out``), but starts
its first stage from the finished cell of the same model and depth at ``SOURCE`` under ``--out``, and compares what
it keeps with the cell's record under ``--out`` and, with ``--reference``, with that grid's cell, paired on the
stage rule's held-out sequences:

    python benchmarks/noise_start.py --budget lean --out results/lean --reference results/paper --runs /tmp/ns \
        --cell diag-L5-uniform3@uniform:2 --cell diag-L7-uniform5@uniform:4 --log benchmarks/logs/noise-start/a.json

Each cell's runs go under ``--runs`` (``BUDGET/NAME@SOURCE``, the source's setting as in a cell's name) and resume
there; ``--least K`` trains at least ``K`` stages.  ``--log`` (rewritten atomically after each cell) keeps, per
cell: the steps and stages it trained, its seconds here, its kept held-out loss, and the record's and the
reference's steps and held-out loss with the paired difference and that difference's SE.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.data import Noise  # noqa: E402
from numerics.errors import LintfError  # noqa: E402
from numerics.evaluate import losses as evaluation  # noqa: E402
from numerics.io import atomic_write_json, read_json  # noqa: E402
from numerics.reproduce import convergence  # noqa: E402
from numerics.reproduce.budgets import PARTS, Cell, cells_for, get_budget, slug  # noqa: E402
from numerics.reproduce.deeper import floor, held_out, model_file  # noqa: E402
from numerics.reproduce.experiments import attempt_config, train_rundir  # noqa: E402
from numerics.train.continuation import train_stages  # noqa: E402


def parse_cell(spec: str, cells: dict[str, Cell]) -> tuple[Cell, str]:
    """``NAME@SOURCE`` → the budget's cell ``NAME`` and the noise setting ``SOURCE`` it starts from."""
    name, _, source = spec.partition("@")
    if name not in cells or not source:
        raise ValueError(f"--cell takes NAME@SOURCE with NAME a cell of the budget (e.g. diag-L5-uniform3@uniform:2); "
                         f"got {spec!r}")
    try:
        Noise.parse(source)
    except ValueError as e:
        raise ValueError(f"--cell {spec}: {e}") from None
    return cells[name], source


def paired(new: np.ndarray, old: np.ndarray) -> dict[str, float]:
    """``old``'s held-out mean, and ``new − old`` (:func:`numerics.reproduce.convergence.paired`): its mean, relative
    to ``old``'s mean, and its SE."""
    diff, se = convergence.paired(old, new)
    return {"held_out": float(old.mean()), "diff": diff, "relative": diff / float(old.mean()), "diff_se": se}


def against(grid: Path, cell: Cell, budget: Any, held: np.ndarray) -> dict[str, Any] | None:
    """The cell as stored under ``grid``: its training steps and stages, and :func:`paired` against its model."""
    model = model_file(grid, cell)
    if model is None:
        return None
    t = read_json(model.parent / "metrics.json")["train"]
    return {"steps": t["steps"], "stages": len(t["stages"])} | paired(held, held_out(model, cell, budget))


def source_model(out: Path, cell: Cell, source: str) -> Path:
    """The model file of the finished cell of ``cell``'s model and depth at ``source`` under ``out``."""
    start = model_file(out, Cell(cell.model, cell.layers, source))
    if start is None:
        raise ValueError(f"--cell {cell.name}@{source}: --out {out} has no finished, passing "
                         f"{Cell(cell.model, cell.layers, source).name} to start from")
    return start


def run(cell: Cell, source: str, budget: Any, out: Path, reference: Path | None, runs: Path, least: int = 1,
        trainer: Callable | None = None) -> dict[str, Any]:
    """Train ``cell`` in ``budget``'s stages from its finished neighbour at ``source`` under ``out``, into
    ``runs/BUDGET/NAME@SOURCE`` (``trainer``: the sweep's, :func:`numerics.reproduce.experiments.train_rundir`); its
    row of the log."""
    evaluation.fix_mmap_threshold()  # as the sweep's cells do: the passes churn large float64 chunks
    start, run_dir = source_model(out, cell, source), runs / budget.name / f"{cell.name}@{slug(source)}"
    t0 = time.perf_counter()
    best, summary = train_stages(attempt_config(cell, budget, 1), budget.stages, start, run_dir,
                                 trainer or train_rundir, least, None, floor(cell, budget, out), None)
    row = {"cell": cell.name, "source": source, "seconds": round(time.perf_counter() - t0, 1),
           "steps": summary["steps"], "stages": [round(s["held_out"], 6) for s in summary["stages"]],
           "converged": summary["converged"], "chosen_stage": summary["chosen_stage"], "held_out": best.mean,
           "record": against(out, cell, budget, best.held)}
    return row | ({"least": least} if least > 1 else {}) \
        | ({"reference": against(reference, cell, budget, best.held)} if reference else {})


def checked(a: argparse.Namespace) -> tuple[Any, list[tuple[Cell, str]]]:
    """The budget and the ``(cell, source)`` pairs of the parsed arguments, each checked before any work: a
    ``ValueError`` names the argument, the value and what it accepts."""
    budget = get_budget(a.budget)
    if not 1 <= a.least <= budget.stages.most:
        raise ValueError(f"--least must be in 1..{budget.stages.most} (budget {budget.name}'s stages), got {a.least}")
    for flag, grid in (("--out", a.out), ("--reference", a.reference)):
        if grid is not None and not (grid / "models").is_dir():
            raise ValueError(f"{flag} {grid} has no models/ directory")
    if a.runs.exists() and not a.runs.is_dir():
        raise ValueError(f"--runs {a.runs} is not a directory")
    if a.log is not None and (a.log.is_dir() or (a.log.parent.exists() and not a.log.parent.is_dir())):
        raise ValueError(f"--log {a.log} is not a file path in a directory")
    specs = [parse_cell(s, {c.name: c for c in cells_for(budget, PARTS)}) for s in a.cell]
    for (cell, source), spec in zip(specs, a.cell):
        if Noise.parse(source) == Noise.parse(cell.noise):
            raise ValueError(f"--cell {spec}: the source setting is the cell's own; name another")
        source_model(a.out, cell, source)
    return budget, specs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", default="lean")
    ap.add_argument("--out", type=Path, required=True, help="the grid whose cells are the starts, floors and records")
    ap.add_argument("--reference", type=Path, default=None, help="another grid to compare with (its models/)")
    ap.add_argument("--runs", type=Path, required=True, help="where the cells' stages train (resumable)")
    ap.add_argument("--cell", action="append", required=True, help="NAME@SOURCE (repeatable)")
    ap.add_argument("--least", type=int, default=1, help="train at least this many stages (default 1)")
    ap.add_argument("--log", type=Path, default=None)
    a = ap.parse_args(argv)
    try:
        budget, specs = checked(a)
    except ValueError as e:
        print(f"noise_start.py: error: {e}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for cell, source in specs:
        try:
            rows.append(run(cell, source, budget, a.out, a.reference, a.runs, a.least))
            if a.log:
                atomic_write_json(a.log, {"budget": budget.name, "out": str(a.out),
                                          "reference": None if a.reference is None else str(a.reference),
                                          "cells": rows})
        except (OSError, LintfError) as e:
            print(f"noise_start.py: error: {cell.name}@{source}: {e}", file=sys.stderr)
            return 1
        r = rows[-1]
        rec = r["record"] and f"record {r['record']['steps']} steps, {100 * r['record']['relative']:+.2f} %"
        print(f"{r['cell']} from {source}: {r['steps']} steps ({len(r['stages'])} stages) in {r['seconds']:.0f} s, "
              f"held out {r['held_out']:.5f}; {rec or 'no record'}", flush=True)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
