r"""The paper's sweep (docs/model.md) as resumable cells: train, select the best seed, evaluate.

A *cell* is one ``(model, L, noise)`` with ``model ∈ {gdpp, diag, full}`` (single head), ``n = 20``,
``d = 10``.  Its number is the adjusted loss (docs/model.md)

.. math::

    \ell^{\rm adj} = \frac1N \sum_\tau \tfrac12(y_{t,\tau} - \hat y_\tau)^2
                   - \tfrac12\bigl(y_{t,\tau} - x_{t,\tau}^\top(\Sigma_\tau + \sigma_\tau^2 I)^{-1}\alpha_\tau\bigr)^2

of the best of ``seeds`` seeds (vmapped in one program by :func:`numerics.train.train`; the
best is chosen on the training code's held-out selection stream), on ``eval_sequences`` fresh
float64 sequences drawn with the key ``split(PRNGKey(0))[1]``: the *same* sequences
:func:`numerics.baselines.table` (seed 0) evaluates the baselines on, so model − baseline and
model − Bayes are paired differences.  Alongside: the read-out after every layer
(``models.predict(..., all_layers=True)``) and a per-variance profile on ``σ ∈ [0, σ_max + 1]``
(key ``fold_in(PRNGKey(0), 2)``, shared with the baselines' profiles).

=================  ===========================================================================
file               content
=================  ===========================================================================
``RUNS/<budget>/<cell>/``   the training run directory (:func:`numerics.train.rundir.run`: checkpoint, loss curve); git-ignored
``OUT/models/<cell>/``      ``model.npz`` (universal ``P, Q`` of the best seed), ``metrics.json``, and for the
                            Fig. 5 cells ``seeds.npz`` (the ``P, Q`` of the cell and of its seed replicas,
                            :func:`seed_replicas`); a cell is finished when its ``metrics.json`` exists
``OUT/baselines/<noise>.json``  ConstRR, AdaRR, TunedRR, Bayes on the same sequences, plus profiles
=================  ===========================================================================

Departures from the paper: training uses :class:`numerics.train.TrainConfig`'s recipe (warm-up + cosine Adam,
clipping, divergence guard), not constant ``1e-4`` for 200 000 steps; ``quick`` is a reduced grid (:data:`BUDGETS`).
"""

from __future__ import annotations

import math
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from numerics import baselines
from numerics.evaluate import losses as evaluation
from numerics.train.continuation import held_out_losses, recorded, rescue_constants, train_stages
from numerics.errors import LintfError
from numerics.io import atomic_savez, atomic_write_bytes, atomic_write_json, load_model, read_json, save_model, \
    set_aside
from numerics.train.loop import clear_caches
from numerics.reproduce.budgets import (BASELINES, BUDGETS, Budget, CATEGORICAL, Cell, EVAL_SEED, FOCUS, MODELS,
    PARTS, REPLICA_SEED, TAIL_DEPTH, cell_signature, cells_for, full_start, get_budget, goes_on,
    left_to_train, noises_for, own_budget, parse_cells, parse_noises, parse_parts, recipe_start, same_signature, slug,
    train_config, train_layers)  # noqa: F401  (re-exported)
from numerics.reproduce.schedule import chain_queue
from numerics.reproduce.deeper import check_stored, floor as floor_of, model_file as finished_model, start_stage
from numerics.reproduce.timing import begin_segment, end_segment, run_record
from numerics.reproduce.judge import (SPECTRAL_SEED, _json, assess, check_names, checks, eval_key,  # noqa: F401
    evaluate_model, failure, profile_key, rescue, spectral_check, tail_key)  # (re-exported)


def baseline_results(noise: str, budget: Budget, out: Path) -> dict[str, Any]:
    """ConstRR, AdaRR, TunedRR and Bayes on the cells' evaluation sequences, plus their profiles (cached)."""
    path = out / "baselines" / f"{slug(noise)}.json"
    want = {"noise": noise, "eval_sequences": budget.eval_sequences, "tune_sequences": budget.tune_sequences,
            "profile_sequences": budget.profile_sequences, "profile_points": budget.profile_points}
    if path.exists():
        have = read_json(path)
        if all(have.get(k) == v for k, v in want.items()):
            bad = [m for m in BASELINES if not all(isinstance(have.get("methods", {}).get(m, {}).get(k), (int, float))
                                                   and math.isfinite(have["methods"][m][k]) for k in ("loss", "se"))]
            if bad:
                raise LintfError(f"{str(path)!r} is corrupt (no finite loss and se for {', '.join(bad)}); delete it "
                                 "and rerun to make it again")
            return have
    tab = baselines.table(noise, n=budget.n, d=budget.d, sequences=budget.eval_sequences, seed=EVAL_SEED,
                          tune_sequences=budget.tune_sequences, methods=BASELINES)
    tuned = baselines.Tuned(lam_const=tab["ConstRR"]["lam_const"], cap=tab["TunedRR"]["cap"],
                            mult=tab["TunedRR"]["mult"])
    sig = evaluation.sigma_grid(noise, budget.profile_points)
    with jax.enable_x64(True):
        pr = evaluation.profile(baselines.predictor(tuned, noise, BASELINES), sig, budget.n, budget.d,
                                budget.profile_sequences, profile_key())
    res = want | {"methods": {m: {k: _json(v) for k, v in tab[m].items()} for m in BASELINES},
                  "profile": {"sigma": sig.tolist()} | {m: {"loss": pr[m]["loss"].tolist(), "se": pr[m]["se"].tolist()}
                                                        for m in BASELINES}}
    atomic_write_json(path, res)
    return res


# ----------------------------------------------------------------------------------------------- cells


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / "models" / cell.name


def load_cell(out: Path, cell: Cell, budget: Budget) -> dict[str, Any] | None:
    """The finished cell's metrics, ``None`` if it is not finished; a one-line error if it was made differently."""
    path = cell_dir(out, cell) / "metrics.json"
    if not path.exists():
        return None
    m = read_json(path)
    rescued = m.get("rescue")
    same_rescue = rescued is not None and rescued.get("constants") == rescue_constants(budget.rescue_pool)
    if rescue_again(m, budget):
        return None  # a failed cell without this rescue: rescue it (its training resumes from its run directory)
    if m.get("stale"):
        return None  # its start was replaced (numerics.reproduce.convergence.adopt): trained again from the new one
    if not same_signature(m.get("signature"), cell, own_budget(m, budget)) \
            or (rescued is not None and not same_rescue) \
            or len((m.get("train") or {}).get("stages", ())) > budget.stages.most:
        raise LintfError(f"{path} was made with another configuration (budget {m.get('budget')!r}); "
                         f"use another --out or delete {cell_dir(out, cell)}")
    if m.get("failed") and m.get("attempt", 1) < budget.attempts:
        return None  # a failed cell with attempts left: its next attempt (run_cell)
    if not m.get("failed") and not zipfile.is_zipfile(cell_dir(out, cell) / "model.npz"):
        return None  # a passed cell whose model is lost or corrupt: made again (training resumes from its run)
    return m


def rescue_again(m: dict[str, Any], budget: Budget) -> bool:
    """The stored cell failed without the budget's rescue, which it gets on the next run (not a cell that left
    sequences out of its final phase: no rescue answers that)."""
    same = (m.get("rescue") or {}).get("constants") == rescue_constants(budget.rescue_pool)
    return bool(m.get("failed")) and not m["train"].get("dropped_final") and not same


class Trained(NamedTuple):
    """What a trainer returns: the run's metrics (:func:`numerics.train.rundir.run`) and the best seed's model
    file."""

    metrics: dict[str, Any]
    model: Path


def train_rundir(cfg: Any, run: Path) -> Trained:
    """The default trainer: :func:`numerics.train.rundir.run` (resumes from the run's checkpoint)."""
    from numerics.train import rundir

    tm = rundir.run(cfg, run, progress=False, baselines=False, flag="--runs")
    if tm is None:  # pragma: no cover - only with stop_at
        raise LintfError(f"training into {run} did not finish")
    return Trained(tm, run / "model.npz")


Trainer = Callable[[Any, Path], Trained]


def run_cell(cell: Cell, budget: Budget, out: Path, runs: Path, trainer: Trainer = train_rundir,
             starts: Path | None = None, least: int = 1, first: int = 1) -> dict[str, Any]:
    """Train (resuming; where the budget continues over depth, from the finished cells under ``starts``, default
    ``out``; in at least ``least`` stages), evaluate and store one cell; returns its metrics.  A cell that fails the
    evaluation (:func:`failure`) gets one :func:`rescue`.  One that still fails is an attempt that failed: the cell
    is trained again, from the start, with the next master seed (:func:`attempt_config`), up to ``budget.attempts``
    attempts in all, and the failed attempts are listed under ``"attempts"`` (:func:`attempt_record`).  A cell whose
    last attempt fails keeps its metrics, with the reason under ``"failed"``, but no ``model.npz``.  A stored failed
    cell with attempts left goes on with its next attempt.  ``first`` is the attempt to begin with (the convergence
    check retrains the attempt that passed, with its seed).  A stored passing cell that stopped at a smaller cap on its
    stages without converging (:func:`numerics.reproduce.budgets.goes_on`) goes on from its record, its attempt's."""
    dest = cell_dir(out, cell)
    earlier = stored_attempts(dest, cell, budget)
    before = read_json(dest / "metrics.json") if (dest / "metrics.json").exists() else {}
    if before.get("stale"):  # its start changed: the runs from the old start are kept aside, not resumed
        set_aside(runs / budget.name / cell.name)
    ok = not before.get("stale") and goes_on(before, budget) and same_signature(before.get("signature"), cell, budget)
    before = before if ok else None
    first = before.get("attempt", 1) if before else first
    while True:
        k = first + len(earlier)
        metrics = _attempt(cell, budget, out, runs, trainer, starts, least, k, before)
        before = None  # a further attempt starts afresh
        if earlier:
            metrics["attempts"] = earlier
        atomic_write_json(dest / "metrics.json", metrics)  # written last: its presence marks the cell finished
        if metrics["failed"] is None or k >= budget.attempts:
            if metrics["failed"]:  # the model an earlier judgement kept (rejudge) is not this cell's any more
                for f in ("model.npz", "seeds.npz"):
                    (dest / f).unlink(missing_ok=True)
            return metrics
        earlier = [*earlier, attempt_record(metrics)]


def attempt_config(cell: Cell, budget: Budget, k: int) -> Any:
    """The training configuration of the cell's attempt ``k`` (1, 2, ...): the budget's, with master seed
    ``k − 1``, so every attempt draws its own initialisations and batches."""
    cfg = train_config(cell, budget)
    return cfg if k == 1 else replace(cfg, seed=cfg.seed + k - 1)


def attempt_record(metrics: dict[str, Any]) -> dict[str, Any]:
    """What ``"attempts"`` keeps of a failed attempt: its number, master seed, why it failed, its loss and largest
    per-sequence loss on the evaluation sequences, its training steps, the rescue's scale, when and where it ran, and
    the runs it went on from (``"continued"``), so that :func:`numerics.reproduce.timing.runs` counts them."""
    return {"attempt": metrics.get("attempt", 1), "seed": metrics.get("seed", metrics["signature"]["train"]["seed"]),
            "failed": metrics["failed"], "loss": metrics["eval"]["loss"], "max": metrics["eval"]["tail"].get("max"),
            "steps": metrics["train"]["steps"], "converged": metrics["train"]["converged"],
            "rescue": (metrics.get("rescue") or {}).get("scale")} | run_record(metrics) \
        | ({"continued": metrics["continued"]} if metrics.get("continued") else {})


def stored_attempts(dest: Path, cell: Cell, budget: Budget) -> list[dict[str, Any]]:
    """The failed attempts of the stored cell at ``dest`` that :func:`run_cell` goes on from: none unless it is a
    failed cell of this signature; its own attempt counts unless it is to be rescued again (:func:`rescue_again`)."""
    path = dest / "metrics.json"
    m = read_json(path) if path.exists() else {}
    if not m.get("failed") or not same_signature(m.get("signature"), cell, budget):
        return []
    return list(m.get("attempts", [])) + ([] if rescue_again(m, budget) else [attempt_record(m)])


def _attempt(cell: Cell, budget: Budget, out: Path, runs: Path, trainer: Trainer, starts: Path | None, least: int,
             k: int, before: dict[str, Any] | None = None) -> dict[str, Any]:
    """Attempt ``k`` of :func:`run_cell`: train (going on from the stored cell's metrics ``before`` where they allow,
    :func:`numerics.train.continuation.recorded`), judge, rescue, store the model of a passing cell; the metrics."""
    t0, wall0, device = time.perf_counter(), time.time(), jax.devices()[0].device_kind  # "cpu", or the accelerator
    evaluation.fix_mmap_threshold()  # the cell's evaluations churn BATCH_CACHE's large chunks
    cfg = attempt_config(cell, budget, k)
    start = recipe_start(cell, budget, lambda c: finished_model(starts or out, c))
    run = runs / budget.name / cell.name / ("" if k == 1 else f"attempt{k}")
    stopped = begin_segment(run, device)  # processes stopped part-way through this attempt, counted with it
    earlier = None
    if before:  # its model, copied: the stage that goes on from it resumes from the copy
        atomic_write_bytes(run / "recorded.npz", (cell_dir(out, cell) / "model.npz").read_bytes())
        held = held_out_losses(run / "recorded.npz", cell.noise, budget.n, budget.d, budget.stages.held_out)
        earlier = recorded(before["train"], run / "recorded.npz", held)
    bounds = floor_of(cell, budget, starts or out), start_stage(cell, budget, start, run)  # (module deeper)
    best, summary = train_stages(cfg, budget.stages, start, run, trainer, least, earlier, *bounds)
    t_train = time.perf_counter() - t0
    P, Q, meta = load_model(best.model)
    metrics: dict[str, Any] = {
        "cell": cell.name, "model": cell.model, "layers": cell.layers, "noise": cell.noise, "budget": budget.name,
        "signature": cell_signature(cell, budget), "train": summary | {"seconds": t_train},
    } | ({"attempt": k, "seed": cfg.seed} if k > 1 else {}) | assess(P, Q, cell, budget)
    if earlier:  # the runs before this one: report.runs counts their time
        metrics["continued"] = [*before.get("continued", ()), run_record(before)
                                | {"stages": len(before["train"]["stages"])}]
        metrics |= {"attempts": before["attempts"]} if before.get("attempts") else {}
    metrics["failed"], rescued = failure(metrics), False
    if metrics["failed"] and not summary.get("dropped_final"):
        Q, metrics["rescue"] = rescue(P, Q, cell, budget, metrics)
        rescued = metrics["rescue"]["scale"] < 1.0
        if rescued:
            metrics |= metrics["rescue"].pop("assessed")
            metrics["failed"] = failure(metrics)
    dest = cell_dir(out, cell)
    if metrics["failed"] is None and rescued:
        scale = float(meta.get("scale", 1.0)) * metrics["rescue"]["scale"]
        save_model(dest / "model.npz", P, Q, meta | {"scale": scale})
    elif metrics["failed"] is None:
        atomic_write_bytes(dest / "model.npz", best.model.read_bytes())
    if before and (earlier is None or best.k != int(before["train"]["chosen_stage"]) or rescued):
        import numerics.reproduce.convergence as cv  # (it imports this module)
        cv.mark_stale(out, cell, f"it started from {cell.name}, which went on training and changed")
    if cell.keep_seeds and metrics["failed"] is None:
        metrics["seeds"], Ps, Qs = seed_replicas(cell, budget, cfg, start, run, trainer, least, dest / "model.npz",
                                                   metrics, bounds)
        atomic_savez(dest / "seeds.npz", P=Ps, Q=Qs)
    return metrics | end_segment(run, time.perf_counter() - t0, wall0, device, stopped)


def seed_replicas(cell: Cell, budget: Budget, cfg: Any, start: Path | None, run: Path, trainer: Trainer, least: int,
                  model: Path, metrics: dict[str, Any], bounds: tuple = (None, None)) -> tuple[dict, Any, Any]:
    """Fig. 5's spread over seeds: the cell's ``model`` (its ``metrics`` so far) and ``budget.seeds - 1`` replicas of
    the cell, each trained through the stages as the cell was (the same start, and ``bounds``: floor and start it
    holds), with master seed ``cfg.seed + REPLICA_SEED * r``, into ``run/replica<r>``; every one evaluated read-out
    by read-out on ``budget.seed_sequences`` fresh sequences and judged as a cell is (:func:`failure`: tail rules,
    checks, final phase).  The summary for ``metrics.json`` (per replica: master seed, chosen stage, steps, the
    read-outs' losses and SEs, the verdict) and every replica's ``P, Q`` stacked ``(seeds, L, H, d+1, d+1)``."""
    P, Q, _ = load_model(model)
    own = {k: metrics[k] for k in check_names(cell, budget)}  # the cell's checks, run on this model
    Ps, Qs, info = [P], [Q], [{"seed": cfg.seed, "train": metrics["train"], "checks": own}]
    for r in range(1, budget.seeds):
        rcfg = replace(cfg, seed=cfg.seed + REPLICA_SEED * r)
        best, rs = train_stages(rcfg, budget.stages, start, run / f"replica{r}", trainer, least, None, *bounds)
        P, Q, _ = load_model(best.model)
        Ps.append(P)
        Qs.append(Q)
        info.append({"seed": rcfg.seed, "train": rs, "checks": checks(P, Q, cell, budget)})
    per = [evaluate_model(P, Q, cell.noise, budget, budget.seed_sequences) for P, Q in zip(Ps, Qs)]
    out = {"sequences": budget.seed_sequences, "seed": [i["seed"] for i in info],
           "stage": [i["train"]["chosen_stage"] for i in info], "steps": [i["train"]["steps"] for i in info],
           "loss": [p["layers"]["loss"] for p in per], "se": [p["layers"]["se"] for p in per],
           "failed": [failure({"eval": p, "train": i["train"]} | i["checks"]) for p, i in zip(per, info)]}
    return out, np.stack(Ps), np.stack(Qs)


def rejudge(cell: Cell, budget: Budget, out: Path, m: dict[str, Any]) -> dict[str, Any] | None:
    """A finished cell judged before one of its checks existed (:func:`numerics.reproduce.judge.check_names`) or by
    an earlier rule: the missing checks join its ``metrics.json``, and :func:`failure` judges it again.  ``None`` when
    it now fails, a failed cell that the sweep rescues or trains again (:func:`run_cell`); the cells that started
    from its model turn ``"stale"`` (:func:`numerics.reproduce.convergence.mark_stale`).  Else the cell, checked."""
    missing = [k for k in check_names(cell, budget) if k not in m]
    if m.get("failed") or not missing and failure(m) is None:
        return m
    if missing:
        P, Q, _ = load_model(cell_dir(out, cell) / "model.npz")
        m = m | checks(P, Q, cell, budget, skip=tuple(k for k in check_names(cell, budget) if k not in missing))
    m = m | {"failed": failure(m)}
    atomic_write_json(cell_dir(out, cell) / "metrics.json", m)
    if m["failed"]:
        import numerics.reproduce.convergence as cv  # (it imports this module)
        cv.mark_stale(out, cell, f"it started from {cell.name}, which fails the evaluation: {m['failed']}")
    return None if m["failed"] else m


def queue_cells(budget: Budget, parts: Iterable[str], out: Path, noises: Iterable[str] | None = None,
                ) -> list[tuple[str, ...]]:
    """The cells left to train under ``out`` (of the settings ``noises``, default every setting the parts need, as
    :func:`sweep` trains them) in the whole chains of :func:`chain_queue`, each in training order: what the processes
    of one sweep take in turn (:func:`sweep`'s ``only``).  A stored cell's floor is checked first: a stuck one is
    left."""
    keep, cells = set(parse_noises(budget, noises)) if noises else None, cells_for(budget, parts)
    left = [c for c in cells if (keep is None or c.noise in keep)
            and left_to_train(check_stored(c, budget, Path(out), load_cell(Path(out), c, budget)), budget)]
    return [tuple(c.name for c in cells if c in u) for u in chain_queue(budget, left)]


def finished_parts(budget: Budget, out: Path) -> tuple[str, ...]:
    """The parts of the budget whose every cell is finished under ``out`` (passed, or failed for good)."""
    done = {c.name for c in cells_for(budget, PARTS) if load_cell(out, c, budget) is not None}
    return tuple(p for p in PARTS if all(c.name in done for c in cells_for(budget, (p,))))


@dataclass
class Sweep:
    """Outcome of :func:`sweep`: metrics per cell name, baselines per noise, cells trained in this call."""

    cells: dict[str, dict[str, Any]]
    baselines: dict[str, dict[str, Any]]
    trained: list[str]
    seconds: float
    missing: list[str] = field(default_factory=list)  # cells not finished (``train=False``)


def sweep(budget: Budget, parts: Iterable[str], out: str | Path, runs: str | Path = "runs/reproduce",
          progress: Callable[[str, dict[str, Any]], None] | None = None, trainer: Trainer = train_rundir,
          train: bool = True, noises: Iterable[str] | None = None, only: Iterable[str] | None = None) -> Sweep:
    """Run every missing cell the parts need (finished cells are read back), then the baselines; with
    ``train=False`` only read the finished cells back (the others are listed under ``missing``).  With ``noises``
    (settings of the budget, :func:`numerics.reproduce.budgets.parse_noises`) train only the cells of those settings:
    a cell starts from cells of its own setting, so processes given disjoint settings can share one ``out``.  With
    ``only`` (cell names, :func:`numerics.reproduce.budgets.parse_cells`; a cell they start from must be among them or
    finished, unless it is outside the parts) train only those cells, in training order.

    ``progress(event, info)`` is called with ``("start", {"total", "done", "todo", "layers", "depths"})`` (the cells
    to train here, the layers each trains, :func:`numerics.reproduce.budgets.train_layers`, and their depths),
    ``("cell", {"name", "seconds", "loss", "failed"})`` after each (``"failed"``: why it failed, or ``None``),
    ``("more", {"name", "layers", "depth"})`` for a finished cell that one trained sends back to training (it started
    from it, or its floor changed: :mod:`numerics.reproduce.deeper`) and ``("baselines", {"noise"})``."""
    out, runs, t0 = Path(out), Path(runs), time.perf_counter()
    cells = cells_for(budget, parts)
    have = {c.name: load_cell(out, c, budget) for c in cells}
    keep = None if noises is None else set(parse_noises(budget, noises))
    inside = {c.name for c in cells}  # a start outside the parts asked for is not trained here, as in a serial sweep
    named = None if only is None else set(parse_cells(
        budget, only, lambda c: c.name not in inside or finished_model(out, c) is not None))
    outside = sorted((named or set()) - {c.name for c in cells})
    if outside:
        raise ValueError(f"--cell {outside[0]} is not a cell of the parts asked for")
    mine = {c.name for c in cells if (keep is None or c.noise in keep) and (named is None or c.name in named)}
    for c in cells:  # in training order: a cell's floor is checked before the cell
        if train and have[c.name] is not None and c.name in mine:
            have[c.name] = check_stored(c, budget, out, rejudge(c, budget, out, have[c.name]))
        elif have[c.name] is not None and not have[c.name].get("failed"):  # judged again by the rule, not written
            have[c.name] = have[c.name] | {"failed": failure(have[c.name])}
    todo = [c for c in cells if left_to_train(have[c.name], budget)]  # one that goes on has a result already
    missing = [c.name for c in todo if have[c.name] is None and (not train or c.name not in mine)]
    todo = [c for c in todo if train and c.name in mine]
    if progress:
        progress("start", {"total": len(cells), "done": len(cells) - len(todo) - len(missing),
                           "todo": [c.name for c in todo], "layers": [train_layers(c, budget) for c in todo],
                           "depths": [c.layers for c in todo]})
    trained, i = [], 0
    while i < len(todo):
        c, t = todo[i], time.perf_counter()
        have[c.name] = run_cell(c, budget, out, runs, trainer)
        trained.append(c.name)
        for u in (u for u in cells[cells.index(c) + 1:] if u.name in mine and u not in todo):  # c's change reaches
            have[u.name] = check_stored(u, budget, out, load_cell(out, u, budget))  # a stale cell, a floor's check
            if left_to_train(have[u.name], budget) and (todo := sorted([*todo, u], key=cells.index)) and progress:
                progress("more", {"name": u.name, "layers": train_layers(u, budget), "depth": u.layers})
        if i + 1 == len(todo) or todo[i + 1].layers != c.layers:
            clear_caches()  # the cells of one depth share their programs (any noise); others only accumulate
        if progress:
            progress("cell", {"name": c.name, "seconds": time.perf_counter() - t,
                              "loss": have[c.name]["eval"]["loss"], "failed": have[c.name].get("failed")})
        i += 1
    base = {}
    for nz in noises_for(cells):
        if progress:
            progress("baselines", {"noise": nz})
        base[nz] = baseline_results(nz, budget, out)
    return Sweep({k: v for k, v in have.items() if v is not None}, base, trained, time.perf_counter() - t0, missing)


__all__ = ["BUDGETS", "Budget", "Cell", "PARTS", "Sweep", "assess", "cells_for", "get_budget", "parse_noises",
           "parse_parts", "rescue", "run_cell", "sweep"]
