r"""Training one cell of a sweep: in stages until the loss stops moving, from the random start or continued over depth.

A cell ``(model, L, noise)`` is trained in *stages*, each a complete :func:`numerics.train.train` run
(warm-up + cosine schedule, fresh Adam state) into its own run directory ``RUNS/<budget>/<cell>/stage<k>/``
(the budget's ``continuation`` and ``full_from_diag`` flags, :class:`numerics.reproduce.budgets.Budget`, choose the
start):

=========  ===================================================================================================
stage      start and length
=========  ===================================================================================================
1          the *start*: where the budget continues over depth (:func:`start_for`), the finished ``(L−1)``-layer
           cell of the same model and noise, with a new layer near the identity appended
           (:func:`numerics.train.warm_params`), and for FULL the finished DIAG cell of the same depth (its DIAG
           embedding; without one, the finished FULL cell one layer shallower); where it does not continue over
           depth, FULL still starts from the finished DIAG cell of its depth (``full_from_diag``); GD++ at
           ``σ_max = 0`` from the spectral fit; any other cell from the small random start.  ``S`` steps,
           ``seeds`` seeds.
k ≥ 2      the best earlier stage's model, one seed, ``S · 2^{k−2}`` steps at ``Stages.decay`` (half by default) of
           the previous stage's peak rate: stage ``k`` doubles the steps spent so far.
=========  ===================================================================================================

After each stage the model's scale is fitted (:func:`fit_scale`): every layer's update is multiplied by the
``c ∈ [0.5, 1]`` that minimises the mean adjusted loss over a pool of fresh sequences (``Stages.scale_pool``, ``2¹⁹``
by default), when one of them explodes at ``c = 1``, lowered within :data:`SCALE_SLACK` of that mean and then until
the pool predicts an SE below :data:`SCALE_SE` of it. Minibatch training meets the one-in-``10⁵`` context that
explodes a deep model a few times in a stage; the pool holds it at its true rate. Then the model is evaluated on
:data:`HELD_OUT` fresh float64 sequences (a key no other part of the sweep draws from). The cell is *converged* when
doubling its steps lowered the held-out adjusted loss by less than ``rel`` of it or less than ``se`` standard errors
of the paired difference, or did not lower it (a later stage starts from the best so far, and one that ends above it
shows that more steps do not help: at depth 3 a stage's scale fit can cost more than its extra steps gain). A stage
whose held-out sequences fail the tail rules ends the cell the same way, unless ``Stages.retry_blown`` is set and the
stage before it is not blown: then the next stage starts from the best stage so far, at half the rate again (a stage
that blows up after one that did not shows the rate was too high, not that the cell converged). A stage whose
training diverges (:class:`numerics.errors.Diverged`: more rollbacks than the config allows) is blown too, without a
model; only a first stage's divergence ends the cell's training with the error. Where the held-out
sequences of either stage it compares fail the evaluation's tail rules (:func:`numerics.evaluate.losses.tail_stats`),
only ``rel`` counts: next to a stage that explodes on one sequence, any change is within the SE. (At σ ≈ 0 a 2- or
3-layer model at its optimum meets a held-out context with a loss above the rules' limit in every stage: the fixed
step sizes overshoot on its extreme ``XᵀX``.) The cell keeps the stage with the lowest held-out loss among those that
pass. A cell that stopped at a smaller ``most`` without converging goes on from its stored record (:func:`recorded`)
when the cap is raised, and so does one stored without ``retry_blown`` that a blown stage ended, when it is set. Training never excludes a sequence in a stage's final phase
(:data:`numerics.train.TrainConfig.final_fraction`); the count is in ``metrics.json``.

A deeper model holds the shallower one: a layer whose ``Q`` is zero leaves the tokens as they are. So with
``Stages.floor`` a cell whose best stage ends above the finished cell one layer shallower (the *floor*, same model and
setting, the same held-out sequences), by more than ``rel`` of its loss and ``se`` paired SEs (:func:`stuck`), has not
converged, whatever its stages moved: it sits on a plateau. Where the stage rule would end it, its next stage
starts instead from the floor's model with a layer appended near the identity (:func:`numerics.train.warm_params`),
and is marked ``"restart"`` in its summary; the stages after it go on from the best stage as before.

Likewise FULL holds DIAG: its start under ``Stages.floor``, the finished DIAG cell of its depth, is a FULL model whose
off-diagonal entries are zero. Training from it at the FULL rate can end above it (the warm-up leaves the DIAG
optimum), so the start counts as a candidate beside the stages (``begin``, stage ``0``): where the best stage ends
above it by more than ``rel`` of its loss and ``se`` paired SEs (:func:`stuck`, read from the start), the cell keeps
it, and its summary's ``"chosen_stage"`` is ``0`` (:func:`start_record`). A smaller difference keeps the stage, as
the stage rule would.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np

from numerics.evaluate import losses as evaluation
from numerics.data import Noise
from numerics.errors import Diverged
from numerics.io import file_sha256, load_model, save_model
from numerics.train.scale_fit import (RESCUE_POOL, RESCUE_STREAM, SCALE_POOL, Stratified, fit_scale,  # noqa: F401
    rescue_constants, scale_constants, stratify)  # (re-exported)

#: Held-out sequences per stage for the convergence criterion and the choice among stages.
HELD_OUT = 100_000
#: Key of the held-out sequences: ``fold_in(PRNGKey(0), HELD_OUT_STREAM)`` (the evaluation uses ``split``).
HELD_OUT_STREAM = 4


@dataclass(frozen=True)
class Stages:
    """How a cell is trained: the first stage's ``steps`` and ``seeds``, at most ``most`` stages, ``batch``
    sequences a step; converged when doubling the steps moves the held-out loss by less than ``rel`` of it or
    ``se`` paired standard errors."""

    steps: int
    most: int
    batch: int
    seeds: int
    held_out: int = HELD_OUT
    scale_pool: int = SCALE_POOL
    rel: float = 0.03
    se: float = 2.0
    #: A stage whose held-out sequences fail the tail rules ends the cell (``False``), or, where the stage before it
    #: is not blown, does not (``True``: the next stage starts from the best stage so far, at half the rate again).
    #: A cell blown in every stage (σ ≈ 0 at depth 2 or 3, :func:`converged`) still ends after two.
    retry_blown: bool = False
    #: Stage ``k ≥ 2`` trains at ``decay^{k−1}`` of the peak rate.
    decay: float = 0.5
    #: A cell above the cell one layer shallower has not converged, and restarts from it (module docstring).
    floor: bool = False
    #: A DIAG cell of at least ``diag_least_depth`` layers trains at least ``diag_least`` stages (:meth:`least_for`).
    diag_least: int = 1
    diag_least_depth: int = 5

    def __post_init__(self) -> None:
        for k, lo in (("steps", 1), ("most", 2), ("batch", 1), ("seeds", 1), ("held_out", 2), ("scale_pool", 2)):
            if int(getattr(self, k)) < lo:
                raise ValueError(f"stages: {k} must be >= {lo}, got {getattr(self, k)}")
        if not 1 <= self.diag_least <= self.most or self.diag_least_depth < 1:
            raise ValueError(f"stages: diag_least must be in 1..most ({self.most}) and diag_least_depth >= 1, got "
                             f"diag_least={self.diag_least}, diag_least_depth={self.diag_least_depth}")
        if not 0 < self.decay <= 1:
            raise ValueError(f"stages: decay must be in (0, 1], got {self.decay}")
        if not 0 < self.rel < 1 or not 0 <= self.se < float("inf"):
            raise ValueError(f"stages: rel must be in (0, 1) and se finite and >= 0, got rel={self.rel}, se={self.se}")

    @property
    def cap(self) -> int:
        """The most steps a cell trains: ``S (1 + 1 + 2 + ... + 2^{most−2}) = S · 2^{most−1}``."""
        return self.steps * 2 ** (self.most - 1)

    def least_for(self, model: str, layers: int) -> int:
        """The fewest stages a cell of ``model`` and ``layers`` trains: a short stage of a deep DIAG cell can move its
        held-out loss by less than ``rel`` on the way down, and the stage rule would stop it there."""
        return self.diag_least if model == "diag" and layers >= self.diag_least_depth else 1

    def scaled(self, factor: int) -> Stages:
        """The same schedule with every stage ``factor`` times longer (the convergence check's rerun)."""
        return replace(self, steps=self.steps * int(factor))


def held_out_key() -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(0), HELD_OUT_STREAM)


def held_out_losses(model: Path, noise: str, n: int, d: int, sequences: int) -> np.ndarray:
    """Per-sequence adjusted losses ``(sequences,)`` of a saved model on the held-out sequences (float64)."""
    P, Q, _ = load_model(model)
    return evaluation.adjusted_per_sequence(P, Q, noise, n, d, held_out_key(), sequences)


def scaled_model(model: Path, noise: str, n: int, d: int, pool: int = SCALE_POOL) -> tuple[Path, dict]:
    """``model`` with its scale fitted (:func:`fit_scale`), saved beside it as ``scaled.npz`` with the scale in its
    meta; ``model`` itself when the fit keeps ``c = 1``."""
    P, Q, meta = load_model(model)
    c, info = fit_scale(P, Q, noise, n, d, pool)
    if c == 1.0:
        return model, info
    out = model.with_name("scaled.npz")
    save_model(out, P, c * Q, meta | {"scale": c})
    return out, info


def converged(new: np.ndarray, old: np.ndarray, st: Stages, blown: bool = False) -> bool:
    """Doubling the steps lowered the mean of ``old`` to that of ``new`` (paired, same sequences) by less than
    ``st.rel`` of the old mean or ``st.se`` standard errors of the difference, or did not lower it; by less than
    ``st.rel`` alone when one of the two stages is ``blown`` (one exploding sequence makes the paired SE as large as
    any change).  One-sided: a stage that ends above the stage it started from shows that more steps do not help,
    and the cell keeps the better one."""
    diff = old - new
    gain, rel = float(diff.mean()), st.rel * abs(float(old.mean()))
    return gain <= (rel if blown else max(rel, st.se * float(diff.std(ddof=1) / np.sqrt(len(diff)))))


def stage_config(cfg: Any, st: Stages, k: int, start: Path | None) -> Any:
    """Stage ``k``'s :class:`numerics.train.TrainConfig` from the cell's base config ``cfg``."""
    steps = st.steps * 2 ** max(0, k - 2)
    kw: dict[str, Any] = {"steps": steps, "batch": st.batch, "seeds": st.seeds if k == 1 else 1,
                          "warmup": None, "warm_start": None if start is None else str(start)}
    if start is not None:
        kw["init"] = "random"
        if cfg.kind.diag_phase:
            kw["diag_steps"] = 0  # the start is already a trained DIAG or FULL model
    if k > 1:
        kw["lr"] = cfg.peak_lr * st.decay ** (k - 1)
    return replace(cfg, **kw)


@dataclass
class StageResult:
    k: int
    model: Path | None  # ``None``: a stage of a stored record whose model was not kept (:func:`recorded`)
    metrics: dict[str, Any]
    held: np.ndarray | None
    seconds: float
    scale: dict = field(default_factory=dict)  # :func:`fit_scale`'s summary
    stored: dict | None = None  # the stage's summary in a stored record (:func:`recorded`)
    restart: bool = False  # it started from the floor (:func:`stuck`), not from the best stage before it

    @property
    def mean(self) -> float:
        if self.held is not None:
            return float(self.held.mean())
        return float("inf") if self.stored["held_out"] is None else float(self.stored["held_out"])  # None: diverged

    @property
    def blown(self) -> bool:
        """The held-out sequences fail the evaluation's tail rules (:func:`numerics.evaluate.losses.tail_stats`)."""
        if self.held is None:
            return bool(self.stored["blown"])
        return evaluation.tail_stats(self.held)["failed"] is not None

    def summary(self) -> dict[str, Any]:
        if self.stored is not None:
            return self.stored
        t = evaluation.tail_stats(self.held)
        return {"stage": self.k, "steps": self.metrics.get("steps"), "held_out": t["mean"], "held_out_se": t["se"],
                "held_out_max": t["max"] if np.isfinite(t["max"]) else None, "blown": self.blown,
                "seconds": self.seconds, "scale": self.scale,
                "dropped_final": self.metrics.get("dropped_final"),
                "rollbacks": len(self.metrics.get("rollbacks") or []),
                "rejected_steps": self.metrics.get("rejected_steps")} | ({"restart": True} if self.restart else {})


def retried(blown: list[bool]) -> bool:
    """Under ``Stages.retry_blown``, the last of stages that are ``blown`` or not does not end the cell: it is blown
    and the one before is not."""
    return len(blown) > 1 and blown[-1] and not blown[-2]


def next_start(stages: list[StageResult]) -> StageResult:
    """The stage the next one starts from and is compared with: the best that is not blown, else the last."""
    return min((s for s in stages if not s.blown), key=lambda s: s.mean, default=stages[-1])


def recorded(summary: dict[str, Any], model: Path, held: np.ndarray) -> list[StageResult] | None:
    """The stages of a stored training ``summary`` (:func:`train_stages`'s), to go on from: the chosen stage holds
    ``model`` (the stored cell's file) and its held-out losses ``held``; the others keep their summaries alone.
    ``None`` when that is not enough: the next stage would start from a stage whose model was not kept, or ``held``
    is not the chosen stage's (another model, or the stage's scale was changed after it, as a rescue does)."""
    chosen = int(summary["chosen_stage"])
    stages = [StageResult(int(s["stage"]), None, {"steps": s.get("steps"), "dropped_final": s.get("dropped_final")},
                          None, float(s.get("seconds") or 0.0), s.get("scale") or {}, s) for s in summary["stages"]]
    if next_start(stages).k != chosen or not np.isclose(float(held.mean()), stages[chosen - 1].mean, rtol=1e-9):
        return None
    stages[chosen - 1] = replace(stages[chosen - 1], model=Path(model), held=held)
    return stages


def kept(stages: list[StageResult], begin: StageResult | None = None, st: Stages | None = None) -> StageResult:
    """The stage a cell keeps: the lowest held-out loss among its stages that are not blown (all of them where every
    one is), or ``begin``, the start it holds (stage ``0``), where that stage is :func:`stuck` above it (by more
    than ``st``'s stage rule allows) and the start is not blown."""
    best = min([s for s in stages if not s.blown] or stages, key=lambda s: s.mean)
    return begin if begin is not None and st is not None and not begin.blown and stuck(best, begin, st) else best


def stuck(best: StageResult, floor: StageResult | None, st: Stages) -> bool:
    """The cell's ``best`` stage ends above its ``floor`` (the cell one layer shallower, on the same held-out
    sequences) by more than the stage rule allows: going from ``best`` to ``floor`` would not count as converged."""
    return floor is not None and not converged(floor.held, best.held, st, best.blown or floor.blown)


def train_stages(cfg: Any, st: Stages, start: Path | None, run: Path, trainer: Callable, least: int = 1,
                 earlier: list[StageResult] | None = None,
                 floor: StageResult | None = None, begin: StageResult | None = None) -> tuple[StageResult, dict]:
    """Train ``cfg``'s cell in stages into ``run/stage<k>`` (each resumable), at least ``least`` of them and at least
    :meth:`Stages.least_for`; returns the chosen stage and a summary for ``metrics.json``.  ``trainer(cfg, dir)``
    trains one stage (:func:`numerics.reproduce.experiments.train_rundir`).  ``earlier`` (:func:`recorded`) are
    stages trained before, which stopped at a smaller cap without converging: training goes on after them.  ``floor``
    (the finished cell one layer shallower, its model and held-out losses) is where a :func:`stuck` cell restarts.
    ``begin`` (its start as a stage ``0``) is kept where the best stage is :func:`stuck` above it (:func:`kept`)."""
    stages: list[StageResult] = list(earlier or [])
    least = max(least, st.least_for(cfg.model, cfg.layers))
    done, low = False, bool(stages) and stuck(kept(stages, begin, st), floor, st)  # a record going on stuck restarts
    for k in range(len(stages) + 1, st.most + 1):
        prev = next_start(stages) if stages else None
        scfg = stage_config(cfg, st, k, start if k == 1 else floor.model if low else prev.model)
        t0 = time.perf_counter()
        try:
            tr = trainer(scfg, run / f"stage{k}")
        except Diverged as e:
            if prev is None:  # no stage to go on from
                raise
            stages.append(diverged(k, e, time.perf_counter() - t0, low))
        else:
            model, scale = scaled_model(tr.model, cfg.noise, cfg.n, cfg.d, st.scale_pool)
            held = held_out_losses(model, cfg.noise, cfg.n, cfg.d, st.held_out)
            stages.append(StageResult(k, model, tr.metrics, held, time.perf_counter() - t0, scale, restart=low))
        low = False
        if st.retry_blown and retried([s.blown for s in stages]):
            continue
        last = stages[-1]  # a diverged stage has no held-out losses: more steps do not help
        if k >= least and prev is not None and (last.held is None
                                                or converged(last.held, prev.held, st, prev.blown or last.blown)):
            low = stuck(kept(stages, begin, st), floor, st)  # converged by the stage rule, yet above the floor: restart
            if not low:
                done = True
                break
    best = kept(stages, begin, st)
    summary = {"stages": [s.summary() for s in stages], "converged": done, "chosen_stage": best.k,
               "start": None if start is None else str(start),
               "steps": sum(int(s.metrics.get("steps") or 0) for s in stages),
               "dropped_final": best.metrics.get("dropped_final")}
    return best, summary | ({"floor": floor_record(best, floor, st)} if floor is not None else {}) \
        | ({"start_check": start_record(stages, begin, st)} if begin is not None else {})


def diverged(k: int, e: Diverged, seconds: float, restart: bool) -> StageResult:
    """Stage ``k``, whose training diverged (``e``): a blown stage without a model, its held-out loss unknown (``None``
    in its summary, above every other stage), what it trained counted up to the step it failed at."""
    return StageResult(k, None, {"steps": e.step}, None, seconds, stored={
        "stage": k, "steps": e.step, "held_out": None, "held_out_se": None, "held_out_max": None, "blown": True,
        "seconds": seconds, "scale": {}, "dropped_final": None, "rollbacks": None, "rejected_steps": None,
        "diverged": str(e)} | ({"restart": True} if restart else {}))


def floor_record(best: StageResult, floor: StageResult, st: Stages) -> dict[str, Any]:
    """What ``metrics.json`` keeps of a cell's floor: its model file and that file's hash, its held-out loss, and
    whether the cell's ``best`` stage is :func:`stuck` above it."""
    sha = floor.metrics.get("sha256") or file_sha256(floor.model)
    return {"model": str(floor.model), "sha256": sha, "held_out": floor.mean, "stuck": stuck(best, floor, st)}


def start_record(stages: list[StageResult], begin: StageResult, st: Stages) -> dict[str, Any]:
    """What ``metrics.json`` keeps of the start a cell compared its ``stages`` with (``begin``): the start file's hash,
    its held-out loss, the best stage's (``"trained"``) and whether the cell kept the start."""
    return {"sha256": begin.metrics.get("sha256"), "held_out": begin.mean, "trained": kept(stages).mean,
            "kept": kept(stages, begin, st) is begin}


def start_for(model: str, layers: int, noise: str, finished: Callable[[str, int], Path | None],
              over_depth: bool = True) -> Path | None:
    """The model file a cell starts from (module docstring): ``finished(model, L)`` is the model file of the
    finished, passing cell ``(model, L, noise)`` or ``None``.  Without ``over_depth`` only FULL has a start, the
    DIAG cell of its depth; every other cell, and FULL without that cell, starts from the random start."""
    from numerics.models import kind_of

    kind = kind_of(model)
    if kind.spectral_init and Noise.parse(noise).sigma_max == 0:
        return None  # the spectral fit
    if kind.diag_phase:  # FULL starts from the DIAG model of its depth (its DIAG embedding)
        return finished("diag", layers) or (finished(model, layers - 1) if layers > 1 and over_depth else None)
    return finished(model, layers - 1) if layers > 1 and over_depth else None


__all__ = ["HELD_OUT", "StageResult", "Stages", "Stratified", "converged", "fit_scale", "floor_record",
           "held_out_losses", "kept", "next_start", "recorded", "rescue_constants", "scale_constants", "scaled_model",
           "stage_config", "start_for", "start_record", "stratify", "stuck", "train_stages"]
