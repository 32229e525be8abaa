r"""The sweep's driver: from a budget and the parts asked for to the cells' records under ``--out``.

``OUT`` is a sweep's own once it holds the marker :data:`MARKER` (budget and record format), written
when the sweep first writes there; a non-empty ``OUT`` without it, or with another budget's, is
refused before any work, so a user's files are never replaced.  Each cell left to train is one task
``(name, fn)``, ``fn(rundir) → {file: bytes}`` (:func:`numerics.reproduce.cell.train_cell`, pure
with respect to ``OUT``); the driver writes a task's files into ``OUT/models/<cell>/`` atomically,
``metrics.json`` last.  Tasks run in this process, or in ``jobs`` processes side by side, each
taking the next cell when it comes free.

A stored record is the plan's cell when its start and evaluation sizes are the plan's
(:func:`numerics.reproduce.grid.plan_of`); another one (such as a FULL cell trained from the DIAG
start) is due for retraining, and stays in the tables until its replacement is written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from numerics import baselines
from numerics.errors import LintfError
from numerics.evaluate import losses as evaluation
from numerics.io import atomic_write_json, read_json
from numerics.reproduce import executor
from numerics.reproduce.cell import train_cell
from numerics.reproduce.grid import (
    Budget,
    Cell,
    cells_for,
    parse_cells,
    parse_noises,
    plan_of,
    slug,
)
from numerics.reproduce.record import FORMAT, Record, read_baselines, read_record
from numerics.reproduce.rules import RULES
from numerics.reproduce.table import BASE_NAMES

MARKER = "lintf-sweep.json"
#: The plan's entries a stored record must share to stand for the plan's cell.
SAME_PLAN = ("budget", "start", "eval_sequences", "profile_sequences", "profile_points", "n", "d")


def check_out(out: Path, budget: Budget, flag: str = "--out") -> bool:
    """Refuse (one line) an ``out`` that is a file, a link to no directory, non-empty without
    :data:`MARKER`, or another budget's; whether it holds the marker."""
    if out.is_symlink() and not out.is_dir():
        raise LintfError(
            f"{flag} {str(out)!r} is a link to {os.readlink(out)!r}, which is no directory; give a "
            "directory"
        )
    if out.exists() and not out.is_dir():
        raise LintfError(f"{flag} {str(out)!r} is a file; give a directory")
    marker = out / MARKER
    if not marker.exists():
        if out.is_dir() and any(out.iterdir()):
            raise LintfError(
                f"{flag} {str(out)!r} is not empty and holds no {MARKER}, so it is not a sweep's; "
                "give a new or empty directory (nothing is overwritten)"
            )
        return False
    m = read_json(marker)
    if (
        not isinstance(m, dict)
        or m.get("kind") != "lintf-sweep"
        or m.get("format") != FORMAT
        or not isinstance(m.get("budget"), str)
    ):
        raise LintfError(
            f"{str(marker)!r} is not a format-{FORMAT} sweep marker; give another {flag}"
        )
    if m.get("budget") != budget.name:
        raise LintfError(
            f"{flag} {str(out)!r} holds the sweep of budget {m.get('budget')!r}; give budget "
            f"{budget.name} its own {flag} (nothing is overwritten)"
        )
    return True


def claim_out(out: Path, budget: Budget) -> None:
    """Write :data:`MARKER` into ``out`` unless it is there (after :func:`check_out`)."""
    if not check_out(out, budget):
        atomic_write_json(
            out / MARKER, {"kind": "lintf-sweep", "format": FORMAT, "budget": budget.name}
        )


def load_records(out: Path, cells: Iterable[Cell]) -> dict[str, Record]:
    """The stored record of every cell of ``cells`` that has one (each read by the one reader)."""
    found = {}
    for c in cells:
        path = out / "models" / c.name / "metrics.json"
        if path.exists():
            found[c.name] = read_record(path, c.name)
    return found


def is_plans(record: Record, cell: Cell, budget: Budget) -> bool:
    """The stored ``record`` stands for the plan's cell (:data:`SAME_PLAN`)."""
    plan = plan_of(cell, budget)
    return all(record.plan.get(k) == plan[k] for k in SAME_PLAN)


def baselines_for(noise: str, budget: Budget, out: Path) -> dict[str, Any]:
    """ConstRR, AdaRR, TunedRR and Bayes on the cells' evaluation sequences, with their profiles
    (``OUT/baselines/<noise>.json``, read back by
    :func:`numerics.reproduce.record.read_baselines`)."""
    path = out / "baselines" / f"{slug(noise)}.json"
    want = {
        "noise": noise,
        "eval_sequences": budget.eval_sequences,
        "tune_sequences": budget.tune_sequences,
        "profile_sequences": budget.profile_sequences,
        "profile_points": budget.profile_points,
    }
    if path.exists():
        have = read_baselines(path, BASE_NAMES)
        if all(have.get(k) == v for k, v in want.items()):
            return have
    import jax  # lazy: start-up (noqa: PLC0415  (the command line starts without JAX))

    tab = baselines.table(
        noise,
        n=budget.n,
        d=budget.d,
        sequences=budget.eval_sequences,
        seed=RULES.eval_seed,
        tune_sequences=budget.tune_sequences,
        methods=BASE_NAMES,
    )
    tuned = baselines.Tuned(
        lam_const=tab["ConstRR"]["lam_const"],
        cap=tab["TunedRR"]["cap"],
        mult=tab["TunedRR"]["mult"],
    )
    sig = evaluation.sigma_grid(noise, budget.profile_points)
    with jax.enable_x64(True):
        pr = evaluation.profile(
            baselines.predictor(tuned, noise, BASE_NAMES),
            sig,
            budget.n,
            budget.d,
            budget.profile_sequences,
            RULES.profile_key(),
        )
    res = want | {
        "methods": {m: {k: _plain(v) for k, v in tab[m].items()} for m in BASE_NAMES},
        "profile": {"sigma": sig.tolist()}
        | {m: {"loss": pr[m]["loss"].tolist(), "se": pr[m]["se"].tolist()} for m in BASE_NAMES},
    }
    atomic_write_json(path, res)
    return read_baselines(path, BASE_NAMES)


def _plain(v: Any) -> Any:
    """A number or array of the baselines' table as JSON (NaN stays NaN: the reader refuses it in a
    table entry)."""
    return np.asarray(v).tolist() if isinstance(v, (np.ndarray, np.generic)) else v


@dataclass
class Sweep:
    """A sweep's outcome: the records per cell name, the baselines per noise, the cells trained in
    this call, the cells not finished, and the stored records that are not the plan's cells (due for
    retraining)."""

    cells: dict[str, Record]
    baselines: dict[str, dict[str, Any]]
    trained: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    due: list[str] = field(default_factory=list)


def sweep(
    budget: Budget,
    parts: Iterable[str],
    out: str | Path,
    runs: str | Path = "runs/reproduce",
    train: bool = True,
    noises: Iterable[str] | None = None,
    only: Iterable[str] | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: Callable[[str, dict[str, Any]], None] | None = None,
    cell_fn: Callable[..., dict[str, bytes]] = train_cell,
) -> Sweep:
    """Train every cell the parts need that has no record of the plan (``noises``/``only``: only
    those settings or cells), then compute the baselines; ``train=False`` only reads.
    ``progress(event, info)``: ``("start", {"todo"})``, ``("cell", {"name", "loss", "failed"})``,
    ``("baselines", {"noise"})``."""
    out, runs = Path(out), Path(runs) / budget.name
    marked = check_out(out, budget)
    cells = cells_for(budget, parts)
    keep = None if noises is None else set(parse_noises(budget, noises))
    named = None if only is None else set(parse_cells(budget, only))
    if named and (outside := sorted(named - {c.name for c in cells})):
        raise ValueError(f"--cell {outside[0]} is not a cell of the parts asked for")
    have = load_records(out, cells) if marked else {}
    left = [c for c in cells if c.name not in have or not is_plans(have[c.name], c, budget)]
    todo = [
        c
        for c in left
        if train and (keep is None or c.noise in keep) and (named is None or c.name in named)
    ]
    if train and (todo or not marked):
        claim_out(out, budget)
    if progress:
        progress("start", {"todo": [c.name for c in todo], "total": len(cells)})

    def done(name: str, files: dict[str, bytes]) -> None:
        have[name] = read_record(out / "models" / name / "metrics.json", name)
        if progress:
            progress(
                "cell",
                {"name": name, "loss": have[name].eval.get("loss"), "failed": have[name].failed},
            )

    if todo:  # on the Dask executor: in this process, on jobs processes or at scheduler
        executor.run(
            [(c.name, partial(cell_fn, c, budget)) for c in todo],
            out=out,
            jobs=jobs,
            scheduler=scheduler,
            runs=runs,
            replace=[c.name for c in todo if c.name in have],
            progress=progress is not None,
            done=done,
        )
    base = {}
    for nz in sorted({c.noise for c in cells}):
        if progress:
            progress("baselines", {"noise": nz})
        # without training, only for a setting with a finished cell or its baselines' file
        stored = (out / "baselines" / f"{slug(nz)}.json").exists()
        if train or stored or any(r.noise == nz for r in have.values()):
            base[nz] = baselines_for(nz, budget, out)
    due = [c.name for c in cells if c.name in have and not is_plans(have[c.name], c, budget)]
    missing = [c.name for c in cells if c.name not in have]
    return Sweep(have, base, [c.name for c in todo], missing, due)
