r"""Training one cell of a sweep by continuation: over depth, and in stages until the loss stops moving.

A cell ``(model, L, noise)`` is trained in *stages*, each a complete :func:`numerics.train.train` run
(warm-up + cosine schedule, fresh Adam state) into its own run directory ``RUNS/<cell>/stage<k>/``:

=========  ===================================================================================================
stage      start and length
=========  ===================================================================================================
1          the *start*: the finished ``(L−1)``-layer cell of the same model and noise, with a new layer near the
           identity appended (:func:`numerics.train.warm_params`); FULL starts from the finished DIAG cell of
           the same depth (its DIAG embedding); GD++ at ``σ_max = 0`` from the spectral fit; a cell without a
           finished predecessor from the small random start.  ``S`` steps, ``seeds`` seeds.
k ≥ 2      the best earlier stage's model, one seed, ``S · 2^{k−2}`` steps at half the previous stage's peak rate:
           stage ``k`` doubles the steps spent so far.
=========  ===================================================================================================

After each stage the model is evaluated on :data:`HELD_OUT` fresh float64 sequences (a key no other part of the
sweep draws from).  The cell is *converged* when doubling its steps changed the held-out adjusted loss by less
than ``rel`` of it or less than ``se`` standard errors of the paired difference, and the latest stage passes the
held-out sequences have no adjusted loss above :data:`numerics.evaluate.losses.FAIL_MAX`.  The cell keeps the stage
with the lowest held-out loss among those without such a sequence.  Training never excludes a sequence in a stage's final phase
(:data:`numerics.train.TrainConfig.final_fraction`); the count is in ``metrics.json``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np

from numerics.evaluate import losses as evaluation
from numerics.data import Noise
from numerics.io import load_model

#: Held-out sequences per stage for the convergence criterion and the choice among stages.
HELD_OUT = 20_000
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
    rel: float = 0.03
    se: float = 2.0

    def __post_init__(self) -> None:
        for k, lo in (("steps", 1), ("most", 2), ("batch", 1), ("seeds", 1), ("held_out", 2)):
            if int(getattr(self, k)) < lo:
                raise ValueError(f"stages: {k} must be >= {lo}, got {getattr(self, k)}")

    def scaled(self, factor: int) -> Stages:
        """The same schedule with every stage ``factor`` times longer (the convergence check's rerun)."""
        return replace(self, steps=self.steps * int(factor))


def held_out_key() -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(0), HELD_OUT_STREAM)


def held_out_losses(model: Path, noise: str, n: int, d: int, sequences: int) -> np.ndarray:
    """Per-sequence adjusted losses ``(sequences,)`` of a saved model on the held-out sequences (float64)."""
    P, Q, _ = load_model(model)
    return evaluation.adjusted_per_sequence(P, Q, noise, n, d, held_out_key(), sequences)


def converged(new: np.ndarray, old: np.ndarray, st: Stages) -> bool:
    """Doubling the steps moved the mean of ``old`` to that of ``new`` (paired, same sequences) by less than
    ``st.rel`` of the old mean or ``st.se`` standard errors of the difference."""
    diff = new - old
    change = abs(float(diff.mean()))
    return change <= max(st.rel * abs(float(old.mean())), st.se * float(diff.std(ddof=1) / np.sqrt(len(diff))))


def stage_config(cfg: Any, st: Stages, k: int, start: Path | None) -> Any:
    """Stage ``k``'s :class:`numerics.train.TrainConfig` from the cell's base config ``cfg``."""
    steps = st.steps * 2 ** max(0, k - 2)
    kw: dict[str, Any] = {"steps": steps, "batch": st.batch, "seeds": st.seeds if k == 1 else 1,
                          "warmup": None, "warm_start": None if start is None else str(start)}
    if start is not None:
        kw["init"] = "random"
        if cfg.model == "full":
            kw["diag_steps"] = 0  # the start is already a trained DIAG or FULL model
    if k > 1:
        kw["lr"] = cfg.peak_lr * 0.5 ** (k - 1)
    return replace(cfg, **kw)


@dataclass
class StageResult:
    k: int
    model: Path
    metrics: dict[str, Any]
    held: np.ndarray
    seconds: float
    seeds: Callable[[], tuple[np.ndarray, np.ndarray]]

    @property
    def blown(self) -> bool:
        """A held-out sequence above :data:`numerics.evaluate.losses.FAIL_MAX`, or a non-finite one."""
        return not bool(np.all(self.held <= evaluation.FAIL_MAX))

    def summary(self) -> dict[str, Any]:
        t = evaluation.tail_stats(self.held)
        return {"stage": self.k, "steps": self.metrics.get("steps"), "held_out": t["mean"], "held_out_se": t["se"],
                "held_out_max": t["max"] if np.isfinite(t["max"]) else None, "blown": self.blown,
                "seconds": self.seconds,
                "dropped_final": self.metrics.get("dropped_final"), "rollbacks": len(self.metrics.get("rollbacks") or []),
                "rejected_steps": self.metrics.get("rejected_steps")}


def train_stages(cfg: Any, st: Stages, start: Path | None, run: Path, trainer: Callable) -> tuple[StageResult, dict]:
    """Train ``cfg``'s cell in stages into ``run/stage<k>`` (each resumable); returns the chosen stage and a
    summary for ``metrics.json``.  ``trainer(cfg, dir)`` trains one stage (:func:`numerics.reproduce.experiments.train_rundir`)."""
    stages: list[StageResult] = []
    done = False
    for k in range(1, st.most + 1):
        prev = None if not stages else min((s for s in stages if not s.blown),
                                           key=lambda s: float(s.held.mean()), default=stages[-1])
        scfg = stage_config(cfg, st, k, start if k == 1 else prev.model)
        t0 = time.perf_counter()
        tr = trainer(scfg, run / f"stage{k}")
        held = held_out_losses(tr.model, cfg.noise, cfg.n, cfg.d, st.held_out)
        stages.append(StageResult(k, tr.model, tr.metrics, held, time.perf_counter() - t0, tr.seeds))
        if prev is not None and not stages[-1].blown and converged(held, prev.held, st):
            done = True
            break
    ok = [s for s in stages if not s.blown]
    best = min(ok or stages, key=lambda s: float(s.held.mean()))
    return best, {"stages": [s.summary() for s in stages], "converged": done, "chosen_stage": best.k,
                  "start": None if start is None else str(start), "steps": sum(int(s.metrics.get("steps") or 0)
                                                                            for s in stages),
                  "dropped_final": best.metrics.get("dropped_final")}


def start_for(model: str, layers: int, noise: str, finished: Callable[[str, int], Path | None]) -> Path | None:
    """The model file a cell starts from (module docstring): ``finished(model, L)`` is the model file of the
    finished, passing cell ``(model, L, noise)`` or ``None``."""
    if model == "gdpp" and Noise.parse(noise).sigma_max == 0:
        return None  # the spectral fit
    if model == "full":
        return finished("diag", layers) or (finished("full", layers - 1) if layers > 1 else None)
    return finished(model, layers - 1) if layers > 1 else None


__all__ = ["HELD_OUT", "Stages", "converged", "held_out_losses", "stage_config", "start_for", "train_stages"]
