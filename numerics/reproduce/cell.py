r"""Training one cell: :func:`train_cell` takes a :class:`numerics.reproduce.grid.Cell`, its budget
and a run directory, and returns the finished cell's files (``metrics.json``, and for a passing cell
``model.npz``, plus ``seeds.npz`` for a Fig. 5 cell).  It reads nothing but ``rundir``, where every
stage keeps its checkpoints, so an interrupted cell resumes, and cells can train anywhere, side by
side.

The path: the cell's config from its start (:func:`cell_config`), the stages of its schedule
(:func:`train_stages`, :class:`numerics.reproduce.grid.Schedule`), the verdict on its best stage
(:mod:`numerics.reproduce.verdict`) with, for a cell that fails it, its rescue, the
:class:`numerics.reproduce.record.Record`.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from numerics.errors import Diverged, LintfError
from numerics.evaluate import losses as evaluation
from numerics.model_file import load_model, save_model
from numerics.reproduce import verdict
from numerics.reproduce.grid import Budget, Cell, Schedule, plan_of, start_of
from numerics.reproduce.record import Record
from numerics.reproduce.rules import RULES
from numerics.train import rundir as run_dir
from numerics.train.config import TrainConfig, config_dict
from numerics.train.scale_fit import fit_scale


class Trained(NamedTuple):
    """What a stage trainer returns: the run's metrics and the best seed's model file."""

    metrics: dict[str, Any]
    model: Path


Trainer = Callable[[TrainConfig, Path], Trained]


def train_run(cfg: TrainConfig, run: Path) -> Trained:
    """The default stage trainer: :func:`numerics.train.rundir.run` into ``run`` (resumes from its
    checkpoint)."""
    tm = run_dir.run(cfg, run, progress=False, baselines=False, flag="--runs")
    if tm is None:  # pragma: no cover - only with stop_at
        raise LintfError(f"training into {run} did not finish")
    return Trained(tm, run / "model.npz")


def cell_config(cell: Cell, budget: Budget, seed: int = 0) -> TrainConfig:
    """The cell's first-stage training configuration, from its start
    (:func:`numerics.reproduce.grid.start_of`)."""
    s = budget.schedule
    return TrainConfig(
        model=cell.model,
        layers=cell.layers,
        noise=cell.noise,
        seeds=s.seeds,
        steps=s.steps,
        batch=s.batch,
        seed=seed,
        select_sequences=budget.select_sequences,
        eval_sequences=budget.select_sequences,
        n=budget.n,
        d=budget.d,
        init="spectral" if start_of(cell) == "spectral" else "random",
    )


@dataclass(frozen=True)
class Stage:
    """A trained stage: its model (scale fitted; ``None`` when its training diverged), held-out
    losses, summary (its entry in the record; ``blown`` where the held-out losses fail the tail
    rules of :func:`numerics.evaluate.losses.tail_stats` or its training diverged)."""

    k: int
    model: Path | None
    held: np.ndarray | None
    summary: dict

    @property
    def mean(self) -> float:
        return float("inf") if self.held is None else float(self.held.mean())

    @property
    def blown(self) -> bool:
        return self.summary["blown"]


def best_of(stages: list[Stage]) -> Stage:
    """The best stage: the lowest held-out loss among those not blown (among all where every one
    is)."""
    return min([s for s in stages if not s.blown] or stages, key=lambda s: s.mean)


def stopped(new: Stage, old: Stage) -> bool:
    """The schedule's stopping rule (:meth:`numerics.reproduce.grid.Schedule.stop`) from ``old`` to
    ``new``; a stage whose training diverged stops the cell."""
    if new.held is None:
        return True
    diff = old.held - new.held
    return Schedule.stop(
        float(diff.mean()),
        old.mean,
        float(diff.std(ddof=1) / np.sqrt(diff.size)),
        old.blown or new.blown,
    )


def train_stages(
    cfg: TrainConfig, schedule: Schedule, run: Path, trainer: Trainer = train_run
) -> tuple[Stage, dict[str, Any]]:
    """Train ``cfg``'s cell in the stages of ``schedule`` into ``run/stage<k>``; the best stage and
    the summary."""
    stages: list[Stage] = []
    done = False
    for k in range(1, schedule.most + 1):
        steps, seeds, factor = schedule.stage(k)
        prev = best_of(stages) if stages else None
        scfg = replace(cfg, steps=steps, seeds=seeds, batch=schedule.batch)
        if prev is not None:  # from the best stage so far, at the stage's fraction of the rate
            scfg = replace(scfg, init="random", lr=cfg.peak_lr * factor, warm_start=str(prev.model))
        t0 = time.perf_counter()
        try:
            tr = trainer(scfg, run / f"stage{k}")
        except Diverged as e:  # a later stage's divergence is a stage, and stops the cell
            if prev is None:
                raise
            model = held = None
            summary = {
                "stage": k,
                "steps": e.step,
                "held_out": None,
                "blown": True,
                "diverged": str(e),
            }
        else:
            # the stage's time: the training's own seconds over every call that trained it (a
            # resumed stage's earlier calls included) where the run reports them, else this call's;
            # then its scale fit and held-out evaluation
            if tr.metrics.get("seconds") is not None:
                t0 = time.perf_counter() - tr.metrics["seconds"]
            model, scale = _scaled(tr.model, cfg, schedule.scale_pool)
            held = evaluation.adjusted_per_sequence(
                *load_model(model)[:2],
                cfg.noise,
                cfg.n,
                cfg.d,
                RULES.held_out_key(),
                schedule.held_out,
            )
            t = evaluation.tail_stats(held)
            summary = {
                "stage": k,
                "steps": int(tr.metrics.get("steps", steps)),
                "held_out": t["mean"],
                "held_out_se": t["se"],
                "held_out_max": t["max"] if np.isfinite(t["max"]) else None,
                "blown": t["failed"] is not None,
                "scale": scale,
                "dropped_final": tr.metrics.get("dropped_final"),
            }
        stages.append(Stage(k, model, held, summary | {"seconds": time.perf_counter() - t0}))
        if prev is not None and stopped(stages[-1], prev):
            done = True
            break
    best = best_of(stages)
    return best, {
        "stages": [s.summary for s in stages],
        "converged": done,
        "chosen_stage": best.k,
        "steps": sum(int(s.summary["steps"] or 0) for s in stages),
        "dropped_final": best.summary.get("dropped_final"),
    }


def _scaled(model: Path, cfg: TrainConfig, pool: int) -> tuple[Path, dict[str, Any]]:
    """``model`` with its scale fitted (:func:`numerics.train.scale_fit.fit_scale`), saved beside it
    as ``scaled.npz``; ``model`` itself when the fit keeps ``c = 1``."""
    P, Q, meta = load_model(model)
    c, info = fit_scale(P, Q, cfg.noise, cfg.n, cfg.d, pool)
    if c == 1.0:
        return model, info
    out = model.with_name("scaled.npz")
    save_model(out, P, c * Q, meta | {"scale": c})
    return out, info


def replicas(
    cell: Cell,
    budget: Budget,
    model: Path,
    judged: dict[str, Any],
    summary: dict[str, Any],
    run: Path,
    trainer: Trainer,
) -> tuple[dict[str, Any], bytes]:
    """Fig. 5's spread: the cell's model (its verdict ``judged``) and ``budget.seeds − 1`` replicas
    trained as the cell was, with master seeds ``RULES.replica_seed · r``, each evaluated read-out
    by read-out and judged; the record's ``replicas`` and the stacked ``P, Q`` as ``seeds.npz``
    bytes."""
    P, Q, _ = load_model(model)
    Ps, Qs, info = [P], [Q], [(0, summary, judged)]
    for r in range(1, budget.seeds):
        seed = RULES.replica_seed * r
        best, rs = train_stages(
            cell_config(cell, budget, seed), budget.schedule, run / f"replica{r}", trainer
        )
        P, Q, _ = load_model(best.model)
        Ps.append(P)
        Qs.append(Q)
        ev = verdict.evaluate_model(P, Q, cell.noise, budget.eval_sequences, budget.n, budget.d)
        checks = verdict.checks(P, Q, cell.model, cell.layers, cell.noise, budget.n, budget.d)
        info.append((seed, rs, {"eval": ev} | checks))
    out = {
        "sequences": budget.eval_sequences,
        "seed": [seed for seed, _, _ in info],
        "stage": [rs["chosen_stage"] for _, rs, _ in info],
        "steps": [rs["steps"] for _, rs, _ in info],
        "loss": [j["eval"]["layers"]["loss"] for _, _, j in info],
        "se": [j["eval"]["layers"]["se"] for _, _, j in info],
        "failed": [verdict.failure(j, rs["dropped_final"]) for _, rs, j in info],
    }
    buf = io.BytesIO()
    np.savez(buf, P=np.stack(Ps), Q=np.stack(Qs))
    return out, buf.getvalue()


def train_cell(
    cell: Cell, budget: Budget, rundir: Path, trainer: Trainer = train_run
) -> dict[str, bytes]:
    """Train, judge and record one cell in ``rundir`` (resumable); the finished cell's files by
    name.  A cell that fails its verdict is rescued where :func:`numerics.reproduce.verdict.rescue`
    finds a scale that passes;
    its record keeps the failure the rescue answered (``training.rescue``) and says so in its
    notes."""
    rundir = Path(rundir)
    cfg = cell_config(cell, budget)
    best, summary = train_stages(cfg, budget.schedule, rundir, trainer)
    # the cell's time: its stages' (each over every call that trained it), then what follows them
    t0 = time.perf_counter() - sum(s["seconds"] for s in summary["stages"])
    P, Q, meta = load_model(best.model)
    judged = verdict.judge(P, Q, cell, budget)
    failed, notes, kept = verdict.failure(judged, summary["dropped_final"]), [], best.model
    if failed is not None:
        Qr, again, rescued = verdict.rescue(P, Q, cell, budget, summary["dropped_final"])
        summary = summary | {"rescue": rescued | {"failed": failed}}
        if again is not None:
            kept = rundir / "rescued.npz"
            save_model(kept, P, Qr, meta | {"scale": meta.get("scale", 1.0) * rescued["scale"]})
            judged, failed, Q = again, None, Qr
            notes.append(
                f"its update was scaled by a further c = {rescued['scale']:.3g} after its stages "
                "(rescue)"
            )
    files: dict[str, bytes] = {} if failed else {"model.npz": kept.read_bytes()}
    spread = None
    if cell.replicas and failed is None:
        spread, files["seeds.npz"] = replicas(cell, budget, kept, judged, summary, rundir, trainer)
    record = Record(
        cell=cell.name,
        model=cell.model,
        layers=cell.layers,
        noise=cell.noise,
        budget=budget.name,
        start=start_of(cell),
        plan=plan_of(cell, budget),
        failed=failed,
        **judged,  # eval, profile, tail_check, spectral
        replicas=spread,
        training=summary | {"config": config_dict(cfg)},
        provenance={
            "device": jax.devices()[0].device_kind,
            "master_seed": cfg.seed,
            "seconds": time.perf_counter() - t0,
            "notes": notes,
        },
    )
    return files | {"metrics.json": record.to_json()}
