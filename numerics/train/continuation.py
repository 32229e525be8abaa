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
that blows up after one that did not shows the rate was too high, not that the cell converged). Where the held-out
sequences of either stage it compares fail the evaluation's tail rules (:func:`numerics.evaluate.losses.tail_stats`),
only ``rel`` counts: next to a stage that explodes on one sequence, any change is within the SE. (At σ ≈ 0 a 2- or
3-layer model at its optimum meets a held-out context with a loss above the rules' limit in every stage: the fixed
step sizes overshoot on its extreme ``XᵀX``.) The cell keeps the stage with the lowest held-out loss among those that
pass. A cell that stopped at a smaller ``most`` without converging goes on from its stored record (:func:`recorded`)
when the cap is raised, and so does one stored without ``retry_blown`` that a blown stage ended, when it is set. Training never excludes a sequence in a stage's final phase
(:data:`numerics.train.TrainConfig.final_fraction`); the count is in ``metrics.json``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, NamedTuple

import jax
import numpy as np

from numerics.evaluate import losses as evaluation
from numerics.data import Batch, Noise
from numerics.io import load_model, save_model

#: Held-out sequences per stage for the convergence criterion and the choice among stages.
HELD_OUT = 100_000
#: Key of the held-out sequences: ``fold_in(PRNGKey(0), HELD_OUT_STREAM)`` (the evaluation uses ``split``).
HELD_OUT_STREAM = 4
#: The scale fit (:func:`fit_scale`): a pool of ``SCALE_POOL`` fresh sequences from
#: ``fold_in(PRNGKey(0), SCALE_STREAM)``, of which the ``pool // SCALE_SHARE`` with the largest adjusted loss at
#: ``c = 1`` and as many drawn uniformly from the others are kept (a stratified sample of the pool).
SCALE_POOL = 2**19
SCALE_SHARE = 64
SCALE_STREAM = 6
#: The fit searches ``c`` in ``[SCALE_LOW, 1]`` when a pool sequence's adjusted loss exceeds ``SCALE_AT`` (the
#: evaluation's failure threshold, :data:`numerics.evaluate.losses.FAIL_MAX`): a model without such a tail keeps ``c = 1``.
SCALE_AT = evaluation.FAIL_MAX
SCALE_LOW = 0.5
#: Golden-section steps of the scale fit (the bracket shrinks to ``0.618^SCALE_STEPS`` of its width).
SCALE_STEPS = 12
#: From the best mean, the fit lowers ``c`` in steps of ``SCALE_DOWN`` while the pool's mean stays within
#: ``SCALE_SLACK`` of the best (the mean is flat near its minimum; the risk of a context beyond the pool's grows
#: with ``c``), and further until an evaluation on ``SCALE_EVAL`` sequences is expected to have an SE below
#: ``SCALE_SE`` × its mean (half the failure threshold :data:`numerics.evaluate.losses.FAIL_SE_REL`).
SCALE_DOWN = 0.01
SCALE_SLACK = 0.05
SCALE_SE = 0.05
SCALE_EVAL = 100_000
#: The rescue of a cell that fails its evaluation (:func:`numerics.reproduce.experiments.run_cell`): the scale fit
#: again, on a pool of ``RESCUE_POOL`` sequences from ``fold_in(PRNGKey(0), RESCUE_STREAM)``, eight times the
#: stage pool, so that it holds about four of the one-in-``10⁶`` contexts the tail check can meet.
RESCUE_POOL = 2**22
RESCUE_STREAM = 7

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

    def __post_init__(self) -> None:
        for k, lo in (("steps", 1), ("most", 2), ("batch", 1), ("seeds", 1), ("held_out", 2), ("scale_pool", 2)):
            if int(getattr(self, k)) < lo:
                raise ValueError(f"stages: {k} must be >= {lo}, got {getattr(self, k)}")
        if not 0 < self.decay <= 1:
            raise ValueError(f"stages: decay must be in (0, 1], got {self.decay}")

    @property
    def cap(self) -> int:
        """The most steps a cell trains: ``S (1 + 1 + 2 + ... + 2^{most−2}) = S · 2^{most−1}``."""
        return self.steps * 2 ** (self.most - 1)

    def scaled(self, factor: int) -> Stages:
        """The same schedule with every stage ``factor`` times longer (the convergence check's rerun)."""
        return replace(self, steps=self.steps * int(factor))


def held_out_key() -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(0), HELD_OUT_STREAM)


def held_out_losses(model: Path, noise: str, n: int, d: int, sequences: int) -> np.ndarray:
    """Per-sequence adjusted losses ``(sequences,)`` of a saved model on the held-out sequences (float64)."""
    P, Q, _ = load_model(model)
    return evaluation.adjusted_per_sequence(P, Q, noise, n, d, held_out_key(), sequences)


class Stratified(NamedTuple):
    """A stratified sample of a pool: its sequences (float64 ``Batch`` and ``Spectral`` rows) and the weight of
    each, so that ``Σ weight · loss`` estimates the pool's mean loss without bias; and the pool's largest loss."""

    batch: Any
    spectra: Any
    weight: np.ndarray
    pool_max: float


def stratify(P: Any, Q: Any, noise: str, n: int, d: int, key: jax.Array, pool: int, top: int, rest: int,
             chunk: int = evaluation.CHUNK) -> Stratified:
    """The ``top`` sequences of ``pool`` fresh ones with the largest adjusted loss under ``P, Q`` (weight ``1/pool``
    each) and the others among ``rest`` indices drawn uniformly in advance (weight ``(pool − top) / (pool · r)``
    each, ``r`` of them): one pass, memory ``O((top + rest) · n · d)``."""
    import jax.numpy as jnp

    picked = np.sort(np.random.default_rng(np.asarray(jax.random.key_data(key)).tolist()).choice(pool, rest, False))
    keep_rows, keep_loss, keep_idx, uni = [], np.empty(0), np.empty(0, np.int64), []
    start, worst = 0, -np.inf
    for b, a in evaluation.adjusted_chunks(P, Q, noise, n, d, key, pool, chunk):
        a = np.where(np.isfinite(a), a, np.inf)
        worst = max(worst, float(a.max()))
        mine = picked[(picked >= start) & (picked < start + len(a))] - start
        uni.append((jax.tree_util.tree_map(lambda x: np.asarray(x)[mine], b), mine + start))
        best = np.argsort(-a, kind="stable")[:top]
        keep_rows.append(jax.tree_util.tree_map(lambda x: np.asarray(x)[best], b))
        keep_loss = np.concatenate([keep_loss, a[best]])
        keep_idx = np.concatenate([keep_idx, best + start])
        order = np.argsort(-keep_loss, kind="stable")[:top]
        cat = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *keep_rows)
        keep_rows = [jax.tree_util.tree_map(lambda x: x[order], cat)]
        keep_loss, keep_idx = keep_loss[order], keep_idx[order]
        start += len(a)
    uni_rows = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *[u[0] for u in uni])
    others = ~np.isin(np.concatenate([u[1] for u in uni]), keep_idx)
    r = int(others.sum())
    rows = jax.tree_util.tree_map(lambda t, u: np.concatenate([t, u[others]]), keep_rows[0], uni_rows)
    with jax.enable_x64(True):  # the sample's spectra, for the oracle of the scaled models
        sp = jax.tree_util.tree_map(np.asarray, evaluation.spectral(*map(jnp.asarray, (rows.X, rows.y, rows.x_query))))
    weight = np.concatenate([np.full(len(keep_idx), 1.0 / pool), np.full(r, (pool - len(keep_idx)) / (pool * r))])
    return Stratified(rows, sp, weight, worst)


def fit_scale(P: Any, Q: Any, noise: str, n: int, d: int, pool: int = SCALE_POOL,
              stream: int = SCALE_STREAM) -> tuple[float, dict]:
    r"""The scale ``c ∈ [SCALE_LOW, 1]`` of the model ``P, c·Q`` fitted to the mean adjusted loss over a pool of
    ``pool`` fresh float64 sequences of the key ``fold_in(PRNGKey(0), stream)`` (golden section on the pool's
    stratified sample, :func:`stratify`, then the conservative edge of the minimum: :data:`SCALE_SLACK`,
    :data:`SCALE_SE`); ``1`` when no pool sequence exceeds :data:`SCALE_AT` at ``c = 1``.  Returns ``c`` and a summary,
    whose ``"slack"`` is the scale before the SE step (the rescue tries it first).

    ``c`` multiplies every layer's update (a layer is linear in its ``Q``) and keeps the model in its kind.  A deep
    model is a high-degree polynomial of its context; minibatch training tunes it to the contexts it meets, and a
    context beyond them, about one in ``10⁵``, can cost ``10⁵``.  The pool holds such contexts at their true rate,
    and the stratified sample keeps every one of its worst."""
    import jax.numpy as jnp

    P, Q = np.asarray(P, np.float64), np.asarray(Q, np.float64)
    key = jax.random.fold_in(jax.random.PRNGKey(0), stream)
    share = max(1, pool // SCALE_SHARE)
    sample = stratify(P, Q, noise, n, d, key, pool, share, share)
    if sample.pool_max <= SCALE_AT:
        return 1.0, {"scale": 1.0, "searched": False, "pool_max": sample.pool_max}
    seen: dict[float, tuple[float, float]] = {}

    def moments(c: float) -> tuple[float, float]:
        """The pool's mean adjusted loss at scale ``c`` and the SE an evaluation on SCALE_EVAL sequences would have."""
        if c not in seen:
            with jax.enable_x64(True):
                a = np.asarray(evaluation.adjusted_full(jnp.asarray(P), jnp.asarray(c * Q),
                                                        Batch(*map(jnp.asarray, sample.batch)),
                                                        type(sample.spectra)(*map(jnp.asarray, sample.spectra))))
            if not np.all(np.isfinite(a)):
                seen[c] = (np.inf, np.inf)
            else:
                with np.errstate(over="ignore"):  # a loss past 1e154 squares to inf: the SE is unbounded
                    m, m2 = float(np.sum(sample.weight * a)), float(np.sum(sample.weight * a**2))
                seen[c] = (m, float(np.sqrt(max(m2 - m**2, 0.0) / SCALE_EVAL)) if np.isfinite(m2) else np.inf)
        return seen[c]

    def mean_at(c: float) -> float:
        return moments(c)[0]

    mean_at(1.0)
    g = (np.sqrt(5.0) - 1) / 2
    lo, hi = SCALE_LOW, 1.0
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    for _ in range(SCALE_STEPS):
        if mean_at(a) <= mean_at(b):
            hi, b = b, a
            a = hi - g * (hi - lo)
        else:
            lo, a = a, b
            b = lo + g * (hi - lo)
    c = best = min(seen, key=mean_at)

    def flat(c: float) -> bool:
        return mean_at(round(c - SCALE_DOWN, 10)) <= (1 + SCALE_SLACK) * mean_at(best)

    while c - SCALE_DOWN >= SCALE_LOW and flat(c):
        c = round(c - SCALE_DOWN, 10)
    slack = c  # the conservative edge of the minimum; then as far as the SE asks
    while c - SCALE_DOWN >= SCALE_LOW and (flat(c) or not moments(c)[1] <= SCALE_SE * moments(c)[0]):
        c = round(c - SCALE_DOWN, 10)
    return c, {"scale": c, "searched": True, "pool_max": sample.pool_max, "mean": seen[c][0], "best": best,
               "se_at_eval": seen[c][1], "mean_unscaled": seen[1.0][0], "slack": slack}


def scale_constants() -> dict[str, float]:
    """The constants of :func:`fit_scale` (part of a sweep cell's signature)."""
    return {"at": SCALE_AT, "low": SCALE_LOW, "steps": SCALE_STEPS, "share": SCALE_SHARE, "down": SCALE_DOWN,
            "slack": SCALE_SLACK, "se": SCALE_SE, "eval": SCALE_EVAL, "stream": SCALE_STREAM}


def rescue_constants(pool: int = RESCUE_POOL) -> dict[str, float]:
    """What a rescued cell's numbers depend on beyond its signature: the rescue pool, its stream and the fit's
    constants."""
    return scale_constants() | {"pool": int(pool), "stream": RESCUE_STREAM, "first": "slack"}


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

    @property
    def mean(self) -> float:
        return float(self.held.mean()) if self.held is not None else float(self.stored["held_out"])

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
                "dropped_final": self.metrics.get("dropped_final"), "rollbacks": len(self.metrics.get("rollbacks") or []),
                "rejected_steps": self.metrics.get("rejected_steps")}


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


def train_stages(cfg: Any, st: Stages, start: Path | None, run: Path, trainer: Callable,
                 least: int = 1, earlier: list[StageResult] | None = None) -> tuple[StageResult, dict]:
    """Train ``cfg``'s cell in stages into ``run/stage<k>`` (each resumable), at least ``least`` of them; returns
    the chosen stage and a summary for ``metrics.json``.  ``trainer(cfg, dir)`` trains one stage
    (:func:`numerics.reproduce.experiments.train_rundir`).  ``earlier`` (:func:`recorded`) are stages trained
    before, which stopped at a smaller cap without converging: training goes on after them."""
    stages: list[StageResult] = list(earlier or [])
    done = False
    for k in range(len(stages) + 1, st.most + 1):
        prev = next_start(stages) if stages else None
        scfg = stage_config(cfg, st, k, start if k == 1 else prev.model)
        t0 = time.perf_counter()
        tr = trainer(scfg, run / f"stage{k}")
        model, scale = scaled_model(tr.model, cfg.noise, cfg.n, cfg.d, st.scale_pool)
        held = held_out_losses(model, cfg.noise, cfg.n, cfg.d, st.held_out)
        stages.append(StageResult(k, model, tr.metrics, held, time.perf_counter() - t0, scale))
        if st.retry_blown and retried([s.blown for s in stages]):
            continue
        if k >= least and prev is not None and converged(held, prev.held, st, prev.blown or stages[-1].blown):
            done = True
            break
    ok = [s for s in stages if not s.blown]
    best = min(ok or stages, key=lambda s: s.mean)
    return best, {"stages": [s.summary() for s in stages], "converged": done, "chosen_stage": best.k,
                  "start": None if start is None else str(start), "steps": sum(int(s.metrics.get("steps") or 0)
                                                                            for s in stages),
                  "dropped_final": best.metrics.get("dropped_final")}


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


__all__ = ["HELD_OUT", "StageResult", "Stages", "Stratified", "converged", "fit_scale", "held_out_losses", "next_start",
           "recorded", "rescue_constants", "scale_constants", "scaled_model", "stage_config", "start_for", "stratify",
           "train_stages"]
