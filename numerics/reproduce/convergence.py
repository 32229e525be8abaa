r"""The convergence check of a sweep: chosen cells retrained with every stage twice as long.

A cell's training stops when doubling its steps no longer moves its held-out loss
(:mod:`numerics.train.continuation`).  This check asks the same question from outside the cell, on the
evaluation sequences: :func:`check_cell` retrains the finished cell ``(model, L, noise)`` with every stage
:data:`FACTOR` times longer (:meth:`numerics.train.continuation.Stages.scaled`), starting from the same finished
cell it started from, with the master seed of its passing attempt, and in at least as many stages, so that it
spends ``FACTOR`` times the steps, into ``OUT/convergence/models/<cell>/`` (run directories under
``RUNS/convergence<FACTOR>/``).  Both models are evaluated on the budget's evaluation sequences, and the check
holds when the paired change of the mean adjusted loss is below :data:`REL` of it, :data:`SE` standard errors
of the paired difference, or the float32 floor (:func:`float32_floor`): a model whose loss sits at the resolution
of the float32 pass it trains with moves by rounding alone, in either direction, however long it trains.

A check that does not hold because the longer run ended *lower* shows that the cell's own stopping rule stopped it
too early (a stage that ends above its start counts as converged, :func:`numerics.train.continuation.converged`,
and one unstable stage can end the cell while more steps still help).  The cell then takes the longer run
(:func:`adopt`): it is the better model, trained by the same rules with longer stages and judged by the same
evaluation.  The check then asks the same question of it, at twice its length, and its entry names the run it
replaced.  A cell whose stages are :data:`MOST_FACTOR` times the budget's keeps its verdict.  Cells that started from
the replaced model (FULL from the DIAG cell of its depth) are trained again by the next sweep.

A check that does not hold because the longer run ended *higher* compares two runs that landed in different places:
more steps do not make the expected loss worse, but a run of a deep model lands where its stages take it, and two
runs of one cell can spread further than the check allows.  Such a check is decided over master seeds
(:func:`over_seeds`): the cell is trained again with :data:`SEEDS` − 1 more seeds at its length and at twice it, and
the check compares the means over the seeds.

:data:`CELLS` names the cells per budget, spread over the three models, shallow and deep, and the noise settings.
``OUT/convergence.json`` keeps one entry per checked cell; a rerun reuses both the entries and the retrained
cells.  :func:`check` takes other cells too (``lintf reproduce --convergence --cell NAME``, :func:`named`), and
processes given disjoint cells share one ``OUT``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import jax
import numpy as np

from numerics.data import Noise
from numerics.evaluate import losses as evaluation
from numerics.io import atomic_write_bytes, atomic_write_json, load_model, read_json
from numerics.reproduce.budgets import PARTS, Budget, Cell, cells_for, goes_on, parse_cells, stage_factor
from numerics.reproduce.timing import RUN_FIELDS
from numerics.reproduce.experiments import Trainer, cell_dir, eval_key, load_cell, run_cell, train_rundir

#: How many times longer every stage of the retrained cell is.
FACTOR = 2
#: The check holds when the loss moves by less than ``REL`` of it or ``SE`` paired standard errors ...
REL = 0.03
SE = 2.0
#: ... or by less than :func:`float32_floor`, the loss of rounding the targets to float32.
FLOOR = "float32"

#: A cell whose longer run ends lower than the check allows takes that run (:func:`adopt`) and is checked again at
#: twice its length, as long as its stages stay at most ``MOST_FACTOR`` times the budget's.
MOST_FACTOR = 4
#: A check whose longer run ends higher than it allows compares the means of this many master seeds
#: (:func:`over_seeds`).
SEEDS = 3

#: The cells each budget checks.
CELLS: dict[str, tuple[Cell, ...]] = {
    "paper": tuple(Cell(m, L, nz) for m, L, nz in (
        ("gdpp", 2, "uniform:3"), ("gdpp", 4, "categorical:1,3,5"), ("gdpp", 7, "uniform:0"),
        ("diag", 1, "uniform:7"), ("diag", 3, "uniform:5"), ("diag", 4, "categorical:1,3"), ("diag", 7, "uniform:2"),
        ("full", 2, "categorical:1,3"), ("full", 3, "uniform:1"), ("full", 4, "uniform:6"), ("full", 7, "uniform:5"),
        ("diag", 10, "uniform:5"))),
    "quick": tuple(Cell(m, L, nz) for m, L, nz in (
        ("gdpp", 4, "uniform:5"), ("diag", 2, "categorical:1,3"), ("diag", 4, "uniform:0"), ("full", 4, "uniform:5"))),
    "test": (Cell("diag", 1, "uniform:1"),),
}
CELLS["lean"] = CELLS["brisk"] = CELLS["paper"]  # the paper budget's grid: the same cells, at shorter stages


def losses(model: Path, cell: Cell, budget: Budget) -> np.ndarray:
    """Per-sequence adjusted losses of a saved model on the budget's evaluation sequences."""
    P, Q, _ = load_model(model)
    return evaluation.adjusted_per_sequence(P, Q, cell.noise, budget.n, budget.d, eval_key(), budget.eval_sequences)


def paired(old: np.ndarray, new: np.ndarray) -> tuple[float, float]:
    """Mean and SE of the paired change ``new − old`` of per-sequence losses on the same sequences."""
    diff = new - old
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(len(diff)))


def float32_floor(cell: Cell, budget: Budget) -> float:
    """``½ mean (y − fl₃₂(y))²`` over the budget's evaluation sequences: the loss of a model that predicts every target
    exactly, rounded to float32.  It is the resolution of the float32 pass a cell trains with; a model whose loss is
    at this level (GD++ at σ = 0, depth 7) has nothing left that float32 training can resolve, and a change of its
    loss below it is rounding, not training."""
    sq = 0.0
    with jax.enable_x64(True):
        for i, b in enumerate(evaluation.chunks(budget.eval_sequences, evaluation.CHUNK)):
            y = np.asarray(evaluation.chunk_batch(eval_key(), Noise.parse(cell.noise), i, b, budget.n, budget.d,
                                                  evaluation.CHUNK).y_query, np.float64)
            sq += float(np.sum((y - y.astype(np.float32).astype(np.float64)) ** 2))
    return 0.5 * sq / budget.eval_sequences


def retrained(cell: Cell, budget: Budget, where: Path, runs: Path, trainer: Trainer, starts: Path, least: int,
              first: int) -> dict[str, Any]:
    """The check's run of ``cell`` under ``where``, in at least ``least`` stages, from attempt ``first``: the stored
    one, or trained (resuming from ``runs``) where it is missing or has fewer stages."""
    m = load_cell(where, cell, budget)
    if m is None or len(m["train"]["stages"]) < least:
        m = run_cell(cell, budget, where, runs, trainer, starts=starts, least=least, first=first)
    return m


def check_cell(cell: Cell, budget: Budget, out: Path, runs: Path, factor: int = FACTOR,
               trainer: Trainer = train_rundir) -> dict[str, Any] | None:
    """Retrain the finished cell with every stage ``factor`` times longer and compare (module docstring); ``None``
    when the cell is not finished, failed its evaluation, or goes on training (a smaller cap stopped it still
    moving, :func:`numerics.reproduce.budgets.goes_on`)."""
    base = load_cell(out, cell, budget)
    if base is None or base.get("failed") or goes_on(base, budget):
        return None
    own = stage_factor(base)  # > 1 for a cell that adopted a longer run
    longer = replace(budget, stages=budget.stages.scaled(factor * own))
    where = out / "convergence"
    least = len(base["train"]["stages"])
    alone = replace(cell, keep_seeds=False)  # the cell's model, without Fig. 5's seed replicas
    again = retrained(alone, longer, where, runs / f"convergence{factor * own}", trainer, out, least,
                      base.get("attempt", 1))
    a = losses(cell_dir(out, cell) / "model.npz", cell, budget)
    entry = {"cell": cell.name, "factor": factor, "steps": base["train"]["steps"],
             "steps_longer": again["train"]["steps"], "loss": float(a.mean()),
             "se": float(a.std(ddof=1) / np.sqrt(len(a)))}
    if base.get("adopted"):  # what the cell held before it took its longer run, and the check that made it do so
        gone = base["adopted"]
        entry["adopted"] = {"factor": own, "loss": gone["replaced"]["loss"], "steps": gone["replaced"]["steps"],
                            "relative": gone["check"]["relative"]}
    if again.get("failed"):
        return entry | {"failed": again["failed"], "holds": False}
    change, se = paired(a, losses(cell_dir(where, cell) / "model.npz", cell, budget))
    floor = float32_floor(cell, budget)
    return entry | {"loss_longer": float(a.mean() + change), "change": change, "change_se": se,
                    "relative": change / abs(float(a.mean())), "floor": floor,
                    "holds": within(change, float(a.mean()), se, floor)}


def over_seeds(cell: Cell, budget: Budget, out: Path, runs: Path, entry: dict[str, Any],
               trainer: Trainer = train_rundir) -> dict[str, Any]:
    """The check of ``entry``, whose longer run ended higher than it allows, decided over :data:`SEEDS` master seeds:
    the cell's own and those of the next attempts (:func:`numerics.reproduce.experiments.attempt_config`), each
    trained at the cell's length and at :data:`FACTOR` times it (the longer in at least as many stages as the shorter),
    into ``OUT/convergence/seeds/x<F>/attempt<k>/`` (runs under ``RUNS/convergence<F>/``), with ``F`` the stage
    factor over the budget's.  It holds when the mean loss over the seeds moves by less than :data:`REL` of it,
    :data:`SE` standard errors of the difference of the means (from the seeds' spread at each length) or the float32
    floor.  The entry gains ``"seeds"`` (the master seeds, each length's losses, their means, the change and its SE),
    and its ``"holds"`` is this verdict."""
    base = load_cell(out, cell, budget)
    own, first = stage_factor(base), base.get("attempt", 1)
    alone = replace(cell, keep_seeds=False)
    attempts = [first] + [k for k in range(1, SEEDS + 1) if k != first][:SEEDS - 1]
    short, long = [entry["loss"]], [entry["loss_longer"]]
    for k in attempts[1:]:
        least = 1
        for factor, found in ((own, short), (own * FACTOR, long)):
            scaled = replace(budget, stages=budget.stages.scaled(factor), attempts=k)  # one attempt: seed k − 1 alone
            where = out / "convergence" / "seeds" / f"x{factor}" / f"attempt{k}"
            m = retrained(alone, scaled, where, runs / f"convergence{factor}", trainer, out, least, k)
            if m.get("failed"):
                return entry | {"seeds": {"attempts": attempts, "failed": f"master seed {k - 1}, stages ×{factor}: "
                                                                           f"{m['failed']}"}, "holds": False}
            least = len(m["train"]["stages"])
            found.append(float(m["eval"]["loss"]))
    mean, mean_longer = float(np.mean(short)), float(np.mean(long))
    se = float(np.sqrt(np.var(short, ddof=1) / len(short) + np.var(long, ddof=1) / len(long)))
    holds = within(mean_longer - mean, mean, se, entry["floor"])
    return entry | {"holds": holds, "seeds": {
        "attempts": attempts, "losses": short, "losses_longer": long, "loss": mean, "loss_longer": mean_longer,
        "change": mean_longer - mean, "change_se": se, "relative": (mean_longer - mean) / abs(mean), "holds": holds}}


def adopt(cell: Cell, budget: Budget, out: Path, entry: dict[str, Any]) -> bool:
    """The cell takes the longer run of a check that did not hold because that run ended lower: the run the check
    made under ``OUT/convergence/models/<cell>/`` becomes the cell, with ``"adopted"`` in its ``metrics.json`` (the
    stage factor over the budget's, the check's entry, and the replaced run's loss, steps, stages and timing), and
    :func:`check` checks it again at twice its length.  Not for a run that failed, stopped at its cap without
    converging, or would have stages more than :data:`MOST_FACTOR` times the budget's, nor for a Fig. 5 cell (its
    seed replicas were trained with the cell's stages).  Cells that started from the replaced model are marked
    ``"stale"``: the sweep trains them again from the new one (:func:`numerics.reproduce.experiments.load_cell`).
    ``True`` when the cell took the run."""
    dest, where = cell_dir(out, cell), cell_dir(out / "convergence", cell)
    if entry.get("failed") or entry["holds"] or entry["change"] >= 0 or cell.keep_seeds \
            or not (where / "metrics.json").exists():
        return False
    base, longer = read_json(dest / "metrics.json"), read_json(where / "metrics.json")
    factor = stage_factor(base) * int(entry["factor"])
    if longer.get("failed") or not longer["train"].get("converged") or factor > MOST_FACTOR \
            or not math.isclose(longer["eval"]["loss"], entry["loss_longer"], rel_tol=1e-9, abs_tol=1e-15):
        return False
    gone = {k: base[k] for k in (*RUN_FIELDS, "continued", "attempts", "adopted") if base.get(k)}
    record = {"factor": factor, "check": {k: v for k, v in entry.items() if k != "adopted"},
              "replaced": gone | {"loss": base["eval"]["loss"], "steps": base["train"]["steps"],
                                  "stages": base["train"]["stages"]}}
    atomic_write_json(where / "metrics.json", longer | {"adopted": record})  # the adoption, before any file moves
    finish_adoption(cell, out)
    return True


def finish_adoption(cell: Cell, out: Path) -> None:
    """Move an adopted run (:func:`adopt`) into the cell, mark the cells that started from the replaced model stale,
    and clear the run's place for the next check; a no-op without one.  Every step can be repeated, so an adoption
    cut short is finished by the next :func:`check`."""
    dest, where = cell_dir(out, cell), cell_dir(out / "convergence", cell)
    m = read_json(where / "metrics.json") if (where / "metrics.json").exists() else {}
    if not m.get("adopted"):
        return
    if read_json(dest / "metrics.json") != m:
        atomic_write_bytes(dest / "model.npz", (where / "model.npz").read_bytes())
        atomic_write_json(dest / "metrics.json", m)
    mark_stale(out, cell, f"it started from {cell.name}, which took its convergence check's longer run")
    (where / "model.npz").unlink(missing_ok=True)
    (where / "metrics.json").unlink()


def mark_stale(out: Path, cell: Cell, why: str) -> None:
    """Mark the cells under ``out`` that started from ``cell``'s model, now replaced, ``"stale"`` (``why``): the sweep
    trains them again from the new one (:func:`numerics.reproduce.experiments.load_cell`)."""
    for path in sorted((out / "models").glob("*/metrics.json")):
        other = read_json(path)
        start = (other.get("train") or {}).get("start")
        if start and Path(start).parent.name == cell.name and not other.get("stale") and path.parent.name != cell.name:
            atomic_write_json(path, other | {"stale": why})


def within(change: float, loss: float, change_se: float, floor: float = 0.0, rel: float = REL, se: float = SE) -> bool:
    """The check's rule: the paired ``change`` of ``loss`` is below ``rel`` of it, ``se`` paired SEs or ``floor``."""
    return abs(change) <= max(rel * abs(loss), se * change_se, floor)


def as_good(change: float, loss: float, floor: float = 0.0) -> bool:
    """A grid's cell against another's (the lean grid's rule): the paired ``change`` from ``loss`` is a decrease, or an
    increase within ``REL`` of it or ``floor``.  Unlike :func:`within`, one-sided and with no allowance of paired SEs:
    where a model's tail carries its mean, the paired SE is as large as any difference."""
    return change <= 0 or within(change, loss, 0.0, floor, se=0.0)


def named(budget: Budget, out: Path, names: Iterable[str]) -> tuple[Cell, ...]:
    """The cells ``names`` (spelt as under ``OUT/models/``) to check; a one-line error for a name outside the
    budget or a cell not finished and passing under ``out``."""
    grid = {c.name: c for c in cells_for(budget, PARTS)}
    names = parse_cells(budget, names, lambda c: True)  # its start needs no check: the cell is not trained
    for name in names:
        m = load_cell(out, grid[name], budget)
        if m is None or m.get("failed") or goes_on(m, budget):
            raise ValueError(f"--cell {name} is not a finished, passing cell under --out {out}; the convergence "
                             f"check retrains finished cells only (train it with --cell {name} first)")
    return tuple(grid[name] for name in names)


def same_base(entry: dict[str, Any], base: dict[str, Any] | None) -> bool:
    """The entry was made from the cell's current model: its loss is the cell's evaluation loss (the same
    sequences, summed in another order)."""
    return base is not None and not base.get("failed") and math.isclose(entry["loss"], base["eval"]["loss"],
                                                                           rel_tol=1e-9, abs_tol=1e-15)


def check(budget: Budget, out: str | Path, runs: str | Path, cells: tuple[Cell, ...] | None = None,
          progress: Callable[[str, dict[str, Any]], None] | None = None,
          trainer: Trainer = train_rundir) -> dict[str, Any]:
    """Check every cell of ``cells`` (default :data:`CELLS` of the budget) that is finished; write and return
    ``OUT/convergence.json``: ``{"budget", "factor", "rel", "se", "cells": {name: entry}, "pending": [names]}``.
    It keeps the entries of earlier checks made with the same constants from the cells' current models, and
    ``pending`` lists the cells of :data:`CELLS` (and of ``cells``) without an entry.  Processes given disjoint
    ``cells`` can share one ``OUT``: each writes its own cells' entries over the file as it stands then."""
    out, runs = Path(out), Path(runs)
    path = out / "convergence.json"
    res: dict[str, Any] = {"budget": budget.name, "factor": FACTOR, "rel": REL, "se": SE, "floor": FLOOR, "cells": {},
                           "pending": []}
    have = _entries(path, res)  # entries made with other constants are checked again
    res["cells"] = dict(have)  # a check cut short, or of other cells, keeps what earlier checks found
    swept = {c.name: c for c in cells_for(budget, PARTS)}  # as the sweep made them: a Fig. 5 cell keeps its seeds
    todo = [swept.get(c.name, c) for c in (CELLS.get(budget.name, ()) if cells is None else cells)]
    listed = list(dict.fromkeys([c.name for c in CELLS.get(budget.name, ())] + [c.name for c in todo]))
    names = {c.name for c in todo}
    for cell in todo:
        entry = have.get(cell.name)
        if entry is not None and not same_base(entry, load_cell(out, cell, budget)):
            entry = None  # the entry checked a model the cell no longer holds
        finish_adoption(cell, out)
        entry = entry or check_cell(cell, budget, out, runs, FACTOR, trainer)
        while entry is not None and adopt(cell, budget, out, entry):
            entry = check_cell(cell, budget, out, runs, FACTOR, trainer)  # the run it took, at twice its length
        if entry is not None and not entry["holds"] and not entry.get("failed") and "seeds" not in entry \
                and entry["change"] > 0:  # the longer run ended higher: the runs' spread, decided over seeds
            entry = over_seeds(cell, budget, out, runs, entry, trainer)
        if entry is None:
            res["cells"].pop(cell.name, None)
        else:
            res["cells"][cell.name] = entry
        # the other cells' entries as the file holds them now: another process may have written some meanwhile
        merged = {n: e for n, e in _entries(path, res).items() if n not in names} | \
                 {n: e for n, e in res["cells"].items() if n in names}
        res["cells"] = {n: merged[n] for n in listed if n in merged} | merged
        # a file written before the last cell lists the cells not reached yet as pending too
        res["pending"] = [n for n in listed if n not in res["cells"]]
        if progress:
            progress("convergence", {"name": cell.name, "entry": entry})
        atomic_write_json(path, res)
    return res


def _entries(path: Path, res: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``OUT/convergence.json`` as it stands, if it was made with ``res``'s budget and constants."""
    old = read_json(path) if path.exists() else {}
    return dict(old.get("cells", {})) if all(old.get(k) == res[k] for k in ("budget", "factor", "rel", "se", "floor")) else {}


def _verdict(e: dict[str, Any], res: dict[str, Any]) -> str:
    if "seeds" in e:  # the longer run ended higher: decided over master seeds (over_seeds)
        sd = e["seeds"]
        if sd.get("failed"):
            return f"**no**: {sd['failed']}"
        n, change = len(sd["losses"]), f"{sd['change']:+.2g} ± {sd['change_se']:.2g} ({sd['relative']:+.1%})"
        return f"{'yes' if e['holds'] else '**no**'} over {n} master seeds: mean {sd['loss']:.4g} → " \
               f"{sd['loss_longer']:.4g}, {change}"
    if not e["holds"]:
        return "**no**"
    if not within(e["change"], e["loss"], e["change_se"], rel=res["rel"], se=res["se"]):
        return f"yes, below the float32 floor {e['floor']:.2g}"  # only the floor lets it hold
    return "yes"


def markdown(res: dict[str, Any]) -> str:
    """The check as a table: the cell, its steps, the loss, the longer run's and the paired change."""
    rows = [f"Every stage retrained {res['factor']}× longer; the check holds when the paired change is below "
            f"{res['rel']:.0%} of the loss, {res['se']:g} SE, or the float32 floor (the loss of rounding the targets "
            "to float32: the resolution of the float32 pass the cells train with)."
            + (" Where the longer run ended higher than that, the check compares the means of master seeds' runs at "
               "each length instead." if any("seeds" in e for e in res["cells"].values()) else ""), "",
            "| cell | steps | loss | steps ×2 | loss ×2 | change (paired) | holds |", "|---|--:|--:|--:|--:|--:|---|"]
    for name, e in res["cells"].items():
        if e.get("adopted"):  # the cell holds a longer run than the budget's
            a = e["adopted"]
            name += (f" (holds its ×{a['factor']} run: the budget's {a['steps']} steps moved by {a['relative']:+.1%} "
                     "when doubled)")
        if e.get("failed"):
            rows.append(f"| {name} | {e['steps']} | {e['loss']:.4g} | {e['steps_longer']} | "
                        f"failed: {e['failed']} | – | no |")
            continue
        rows.append(f"| {name} | {e['steps']} | {e['loss']:.4g} ± {e['se']:.2g} | {e['steps_longer']} | "
                    f"{e['loss_longer']:.4g} | {e['change']:+.2g} ± {e['change_se']:.2g} ({e['relative']:+.1%}) | "
                    f"{_verdict(e, res)} |")
    if res["pending"]:
        rows += ["", f"Not yet checked (the cell is not finished): {', '.join(res['pending'])}."]
    return "\n".join(rows) + "\n"


__all__ = ["CELLS", "FACTOR", "MOST_FACTOR", "REL", "SE", "SEEDS", "FLOOR", "adopt", "as_good", "check", "check_cell",
           "finish_adoption", "float32_floor", "losses", "markdown", "named", "over_seeds", "retrained", "same_base",
           "within"]
