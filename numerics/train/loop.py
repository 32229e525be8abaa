"""The training loop :func:`train`: chunks of scanned steps, rollbacks, checkpoints, and the
held-out losses.

What each training choice does, in one line (docs/training.md has the measurements behind them):

* **Schedule**: linear warm-up then cosine decay to 0 of a peak rate per model kind
  (:func:`numerics.train.schedule.lr_at`).
* **Initialisation**: small Gaussian entries (``init_scale``), so every layer starts near the
  identity map.
* **Clipping** of the global gradient norm at ``clip`` bounds one bad batch's damage.
* **Huber loss** beyond ``huber · √d`` keeps a rare huge residual from overflowing the step; the
  last ``final_fraction`` of the steps minimise the plain squared loss
  (:func:`numerics.train.objective.loss_fn`).
* **``y_step="scaled"``** divides the step of ``q_y`` (FULL: ``Q_yy``) by ``E y²``
  (:func:`numerics.train.step.y_step`).
* **Divergence guard**: a step with a non-finite or exploding loss is skipped; a seed that keeps
  exploding is rolled back to the chunk's start with its rate halved, and further back (up to
  :data:`HISTORY` chunks) if it fails again.
* **Step rejection** (``trust``): a step that raises the median loss of its own batch more than
  ``trust`` times is rejected and the seed's rate halved until steps are accepted again.
* **Seeds** share the data stream and differ in initialisation; the best on held-out sequences is
  kept.
* **Forward pass**: the Gram-form pass :func:`numerics.models.predict_fast`.
* **FULL from its own start**: every entry trains from the random start; ``diag_steps > 0`` (an
  option) trains the DIAG sub-family first.
* **``init="spectral"``** (GD++): every seed starts from the exact spectral fit; seed 0 stays frozen
  at it.
* **``warm_start``**: the first layers of every seed start from a model file.

See docs/training.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from numerics.baselines.ridge import oracle_weights
from numerics.errors import Diverged
from numerics.model_file import load_model
from numerics.models.forward import predict_fast
from numerics.models.kinds import from_universal, init
from numerics.train.config import TrainConfig
from numerics.train.devices import usable
from numerics.train.objective import data_key, draw, noise_values, static_config
from numerics.train.step import CHUNK_CACHE, TrainState, chunk_fn, optimizer, place, project

#: Good chunk starts kept for rolling back further than one chunk (:func:`train`).
HISTORY = 3
#: Sequences per compiled program of :func:`adjusted_losses`; each chunk of them is drawn from its
#: own key, so the chunk is part of which sequences a held-out loss is taken on.
EVAL_CHUNK = 8192


def init_state(cfg: TrainConfig, template: bool = False) -> TrainState:
    """The state at step 0; ``template=True`` skips the spectral fit (only the structure is needed
    on resume)."""
    keys = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(cfg.seed), 0), cfg.seeds)
    params = jax.vmap(
        lambda k: init(cfg.model, k, cfg.layers, cfg.d, cfg.heads, cfg.init_scale, cfg.jdtype)
    )(keys)
    rho = jnp.ones((cfg.seeds,), cfg.jdtype)
    if cfg.init == "spectral" and not template:
        from numerics.baselines.gdpp_fit import fit_gdpp  # lazy: start-up (SymPy, SciPy)

        fit = fit_gdpp(cfg.layers, cfg.noise_dist, cfg.n, cfg.d, cfg.seed).params
        params = type(params)(
            *(jnp.broadcast_to(jnp.asarray(p, cfg.jdtype), (cfg.seeds, cfg.layers)) for p in fit)
        )
        rho = rho.at[0].set(0.0)  # seed 0 is the fit itself, frozen
    if cfg.warm_start is not None and not template:
        params = warm_params(cfg, params)
    params = project(cfg, params)
    opt_state = jax.vmap(optimizer(cfg).init)(params)
    return TrainState(
        params,
        opt_state,
        rho,
        jnp.zeros((), jnp.int32),
        jnp.ones((cfg.seeds,), cfg.jdtype),
        jnp.zeros((cfg.seeds,), jnp.int32),
        jnp.zeros((cfg.seeds,), jnp.int32),
    )


def warm_params(cfg: TrainConfig, params: Any) -> Any:
    """``params`` (leading seed axis) with their first ``L'`` layers replaced, in every seed, by the
    ``L'`` layers of the model file ``cfg.warm_start`` (read as ``cfg.model`` from its universal
    ``P, Q``: a DIAG file starts a FULL model as its DIAG embedding).  Layers ``L'+1 … L`` keep
    their small random start, close to the identity map, so the warm model computes what the file's
    model computes, up to that start."""
    P, Q, _ = load_model(cfg.warm_start)
    if P.shape[0] > cfg.layers or P.shape[1] != cfg.heads or P.shape[-1] != cfg.d + 1:
        raise ValueError(
            f"warm_start {cfg.warm_start!r} holds {P.shape[0]} layers of {P.shape[1]} heads with "
            f"d = {P.shape[-1] - 1}; it can start at most {cfg.layers} layers of {cfg.heads} "
            f"heads, d = {cfg.d}"
        )
    old = from_universal(cfg.model, P, Q, atol=1e-12)
    return jax.tree_util.tree_map(
        lambda a, o: a.at[:, : o.shape[0]].set(jnp.asarray(o, a.dtype)), params, old
    )


def adjusted_losses(
    cfg: TrainConfig, params: Any, stream: int, sequences: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-sequence losses ``½(y_t−ŷ)²`` ``(K, sequences)`` of ``params`` (leading seed axis) and
    of the oracle ridge ``w_{σ²} = (Σ + σ_τ² I)^{-1} α`` (docs/model.md) ``(sequences,)`` on the
    same sequences.  The adjusted loss is their difference."""
    model, oracle = [], []
    # trained parameters are replicated over the batch's devices
    one = jax.device_put(params, jax.devices()[0])
    for i in range(0, sequences, EVAL_CHUNK):
        m = min(EVAL_CHUNK, sequences - i)
        a, o = _eval_jit(static_config(cfg), m)(
            one, data_key(cfg.seed, stream, i // EVAL_CHUNK), noise_values(cfg)
        )
        model.append(np.asarray(a, np.float64))
        oracle.append(np.asarray(o, np.float64))
    return np.concatenate(model, axis=1), np.concatenate(oracle)


def finite_adjusted(model: np.ndarray, oracle: np.ndarray) -> tuple[float, float | None, int]:
    """Adjusted loss over the sequences where ``model (B,)`` is finite, its standard error, and how
    many were not finite (a deep model is a high-degree polynomial of the data: a rare sequence
    overflows)."""
    fin = np.isfinite(model)
    diff = model[fin] - oracle[fin]
    m = len(diff)
    mean = float(diff.mean()) if m else float("nan")
    return mean, (float(diff.std(ddof=1) / math.sqrt(m)) if m > 1 else None), int((~fin).sum())


_EVAL_CACHE: dict = {}


def eval_key(cfg: TrainConfig, m: int) -> tuple:
    """What the evaluation program of ``m`` sequences reads from the (static) config: the model
    kind, the noise's kind and number of levels, ``n``, ``d`` and the dtype.  Configs that differ
    only in what training alone reads (rate, seeds, step rejection, the ``y`` step, GD++'s sign,
    the Huber loss, batch, chunk, …) share one compiled program."""
    return (cfg.model, cfg.noise, cfg.n, cfg.d, cfg.dtype, m)


def _eval_jit(cfg: TrainConfig, m: int) -> Callable:
    """Per-sequence losses of ``m`` sequences, on one device (:func:`adjusted_losses` moves the
    parameters there), compiled once per :func:`eval_key`.  Not sharded: on 2 host devices (jax
    0.10.2, XLA CPU) the batched LAPACK solve of the oracle ridge deadlocked whenever the program
    spanned both devices (batch split, in ``jit`` and ``shard_map`` alike, or parameters replicated
    by training); ``tests/train/test_devices.py`` evaluates a trained model on the split host."""
    k = eval_key(cfg, m)
    if k not in _EVAL_CACHE:

        def f(params, key, values):
            b = draw(cfg, key, m, None, values)
            w_or = oracle_weights(b.X, b.y, b.sigma)
            oracle = 0.5 * (b.y_query - jnp.einsum("bd,bd->b", w_or, b.x_query)) ** 2
            # a family member's own pass
            fwd = cfg.kind.forward if cfg.kind.own_forward else predict_fast
            yhat = jax.vmap(lambda p: fwd(p, b.X, b.y, b.x_query))(params)
            return 0.5 * (yhat - b.y_query) ** 2, oracle

        _EVAL_CACHE[k] = jax.jit(f)
    return _EVAL_CACHE[k]


def clear_caches() -> None:
    """Drop every compiled program: the training chunks, the held-out programs and JAX's own caches.
    A long sweep compiles new programs cell after cell (each cell's config is a new cache key);
    without this, their code mappings accumulate until XLA cannot map more
    (``LLVM compilation error: Cannot allocate memory``)."""
    CHUNK_CACHE.clear()
    _EVAL_CACHE.clear()
    jax.clear_caches()


@dataclass
class Result:
    """What :func:`train` returns: final state, per chunk
    ``[end step, mean training loss of each seed]``, rollbacks."""

    state: TrainState
    curve: list[list[float]] = field(default_factory=list)
    rollbacks: list[dict[str, Any]] = field(default_factory=list)
    #: steps per second of this call; a run resumed with no steps left has the rate of its earlier
    #: calls (``step / seconds``), or NaN where its checkpoint does not carry their time
    steps_per_s: float = float("nan")
    #: seconds spent training so far, over every call that trained this run (stored in its
    #: checkpoints)
    seconds: float = 0.0
    #: how many devices shared the batch (part of the arithmetic: numerics.train.devices)
    devices: int = 1
    skipped: int = 0
    #: the starts of the last accepted chunks, oldest first, each with the curve's length and
    #: ``skipped`` then
    history: list[tuple[TrainState, int, int]] = field(default_factory=list)


def training_devices(batch: int) -> tuple:
    """The devices :func:`train` shards a batch over by default: every device whose count divides
    ``batch`` (:func:`numerics.train.devices.usable`)."""
    return tuple(usable(jax.devices(), batch))


def train(
    cfg: TrainConfig,
    resume: Result | None = None,
    on_chunk: Callable[[TrainState, Result], Any] | None = None,
    checkpoint: Callable[[TrainState, Result], None] | None = None,
    devices: list | None = None,
    stop_at: int | None = None,
) -> Result:
    """Run (or continue from ``resume``, the :class:`Result` that
    :func:`numerics.train.rundir.prepare` reads from a checkpoint: state, curve, rollbacks, skipped
    steps, seconds and the earlier chunk starts ``history``) to ``cfg.steps`` (or ``stop_at``).

    ``checkpoint(state, result)`` is called after every good chunk (the CLI writes it atomically);
    ``on_chunk`` may return ``True`` to stop early (time-to-quality benchmark).
    """
    devices = training_devices(cfg.batch) if devices is None else tuple(devices)
    ndev = len(devices)
    if cfg.batch % ndev:
        raise ValueError(
            f"batch must be a multiple of the number of devices ({ndev}), got {cfg.batch}"
        )
    res = Result(init_state(cfg)) if resume is None else resume
    res.devices = ndev
    # every start is placed as the chunk returns its state, so that one compile serves every chunk
    # (:func:`place`)
    res.state = place(res.state, devices)
    res.history = [(place(h, devices), n, k) for h, n, k in res.history]
    end = cfg.steps if stop_at is None else min(stop_at, cfg.steps)
    t0, s0, before = time.perf_counter(), int(res.state.step), res.seconds
    failed_at = None  # the start step of the last chunk, if it failed (no chunk accepted since)
    while int(res.state.step) < end:
        step = int(res.state.step)
        length = min(cfg.chunk, end - step)
        new, ok, losses = chunk_fn(cfg, length, devices)(
            res.state, jnp.asarray(cfg.seed, jnp.int32), noise_values(cfg)
        )
        ok = np.asarray(ok)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            rho = np.array(res.state.rho)
            rho[bad] *= 0.5
            event = {"step": step, "seeds": bad.tolist(), "rho": rho[bad].tolist()}
            # failed again from the same start: go back one more chunk
            if failed_at == step and res.history:
                res.state, n, res.skipped = res.history.pop()
                res.curve = res.curve[:n]
                event["to"] = int(res.state.step)
            failed_at = int(res.state.step)
            res.rollbacks.append(event)
            if len(res.rollbacks) > cfg.max_rollbacks:
                wider = ", or train in --dtype float64" if cfg.dtype == "float32" else ""
                raise Diverged(
                    f"training diverged {len(res.rollbacks)} times (last at step {step}, seeds "
                    f"{bad.tolist()}); lower --lr (now {cfg.peak_lr:g}){wider}",
                    step,
                )
            res.state = res.state._replace(rho=place(rho, devices))
            continue
        failed_at = None
        res.history = [*res.history, (res.state, len(res.curve), res.skipped)][-HISTORY:]
        res.state = new
        losses = np.asarray(losses, np.float64)
        res.skipped += int(np.isnan(losses).sum())
        res.curve.append([int(new.step), *nanmean(losses, axis=0).tolist()])
        res.seconds = before + time.perf_counter() - t0
        if checkpoint is not None:
            checkpoint(res.state, res)
        if on_chunk is not None and on_chunk(res.state, res):
            break
    done, spent = int(res.state.step) - s0, time.perf_counter() - t0
    res.seconds = before + spent
    if done:
        res.steps_per_s = done / max(spent, 1e-9)
    elif before > 0:  # nothing left to train: the rate of the calls that trained it
        res.steps_per_s = int(res.state.step) / before
    return res


def nanmean(a: np.ndarray, axis: int) -> np.ndarray:
    """Mean over the non-NaN entries (NaN where there are none), without numpy's empty-slice
    warning."""
    a = np.asarray(a, np.float64)
    cnt = (~np.isnan(a)).sum(axis=axis)
    return np.where(cnt > 0, np.nansum(a, axis=axis) / np.maximum(cnt, 1), np.nan)
