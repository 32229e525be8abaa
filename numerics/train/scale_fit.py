"""The scale fit of a trained model (:func:`fit_scale`): every layer's update multiplied by the
``c`` that minimises the mean adjusted loss over a large pool of fresh float64 sequences, sampled by
stratum (:func:`stratify`) so that the pool's rare exploding contexts are all kept.  Every stage of
a sweep's cell is fitted so (:func:`numerics.reproduce.cell.train_stages`)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from numerics.data import Batch, Noise
from numerics.evaluate import losses as evaluation

#: The scale fit (:func:`fit_scale`): a pool of ``SCALE_POOL`` fresh sequences from
#: ``fold_in(PRNGKey(0), SCALE_STREAM)``, of which the ``pool // SCALE_SHARE`` with the largest
#: adjusted loss at ``c = 1`` and as many drawn uniformly from the others are kept (a stratified
#: sample of the pool).
SCALE_POOL = 2**19
SCALE_SHARE = 64
SCALE_STREAM = 6
#: The fit searches ``c`` in ``[SCALE_LOW, 1]`` when a pool sequence's adjusted loss exceeds
#: ``SCALE_AT`` (the evaluation's failure threshold, :data:`numerics.evaluate.losses.FAIL_MAX`): a
#: model without such a tail keeps ``c = 1``.
SCALE_AT = evaluation.FAIL_MAX
SCALE_LOW = 0.5
#: Golden-section steps of the scale fit (the bracket shrinks to ``0.618^SCALE_STEPS`` of its
#: width).
SCALE_STEPS = 12
#: From the best mean, the fit lowers ``c`` in steps of ``SCALE_DOWN`` while the pool's mean stays
#: within ``SCALE_SLACK`` of the best (the mean is flat near its minimum; the risk of a context
#: beyond the pool's grows with ``c``), and further until an evaluation on ``SCALE_EVAL`` sequences
#: is expected to have an SE below ``SCALE_SE`` × its mean (half the failure threshold
#: :data:`numerics.evaluate.losses.FAIL_SE_REL`).
SCALE_DOWN = 0.01
SCALE_SLACK = 0.05
SCALE_SE = 0.05
SCALE_EVAL = 100_000


class Stratified(NamedTuple):
    """A stratified sample of a pool: its sequences (float64 ``Batch`` and ``Spectral`` rows) and
    the weight of each, so that ``Σ weight · loss`` estimates the pool's mean loss without bias; and
    the pool's largest loss."""

    batch: Any
    spectra: Any
    weight: np.ndarray
    pool_max: float


def pool_losses(
    P: Any,
    Q: Any,
    noise: str,
    n: int,
    d: int,
    key: jax.Array,
    pool: int,
    chunk: int = evaluation.CHUNK,
) -> np.ndarray:
    """The adjusted loss under ``P, Q`` of each of ``pool`` fresh float64 sequences of ``key``, a
    non-finite one as ``inf`` (8 bytes a sequence)."""
    a = evaluation.adjusted_per_sequence(P, Q, noise, n, d, key, pool, chunk)
    return np.where(np.isfinite(a), a, np.inf)


def pool_rows(
    noise: str,
    n: int,
    d: int,
    key: jax.Array,
    pool: int,
    idx: np.ndarray,
    chunk: int = evaluation.CHUNK,
) -> Batch:
    """The float64 sequences ``idx`` of the pool of :func:`pool_losses`, in the order of ``idx``:
    each chunk that holds one is drawn again, or taken from
    :data:`numerics.evaluate.losses.BATCH_CACHE`."""
    noise = Noise.parse(noise)
    parts, where, lo = [], [], 0
    for i, b in enumerate(evaluation.chunks(pool, chunk)):
        sel = np.nonzero((idx >= lo) & (idx < lo + b))[0]
        if sel.size:
            with jax.enable_x64(True):
                batch = evaluation.chunk_batch(key, noise, i, b, n, d, chunk)
            parts.append(jax.tree_util.tree_map(lambda x: np.asarray(x)[idx[sel] - lo], batch))
            where.append(sel)
        lo += b
    back = np.argsort(np.concatenate(where))
    return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs)[back], *parts)


def stratify(
    a: np.ndarray,
    noise: str,
    n: int,
    d: int,
    key: jax.Array,
    top: int,
    rest: int,
    chunk: int = evaluation.CHUNK,
) -> Stratified:
    """The ``top`` sequences of the pool of :func:`pool_losses` ``a`` (the adjusted losses of its
    fresh sequences of ``key``) with the largest loss (weight ``1/pool`` each, largest first, ties
    by index) and the others among ``rest`` indices drawn uniformly in advance (weight ``(pool −
    top) / (pool · r)`` each, ``r`` of them, by index).  Memory ``O(pool + (top + rest) · n ·
    d)``."""
    pool = len(a)
    picked = np.sort(
        np.random.default_rng(np.asarray(jax.random.key_data(key)).tolist()).choice(
            pool, rest, False
        )
    )
    keep_idx = np.argsort(-a, kind="stable")[:top]
    others = picked[~np.isin(picked, keep_idx)]
    rows = pool_rows(noise, n, d, key, pool, np.concatenate([keep_idx, others]), chunk)
    with jax.enable_x64(True):  # the sample's spectra, for the oracle of the scaled models
        sp = jax.tree_util.tree_map(
            np.asarray, evaluation.spectral(*map(jnp.asarray, (rows.X, rows.y, rows.x_query)))
        )
    r = len(others)
    weight = np.concatenate(
        [np.full(len(keep_idx), 1.0 / pool), np.full(r, (pool - len(keep_idx)) / (pool * r))]
    )
    return Stratified(rows, sp, weight, float(a.max()))


def fit_scale(
    P: Any, Q: Any, noise: str, n: int, d: int, pool: int = SCALE_POOL, stream: int = SCALE_STREAM
) -> tuple[float, dict]:
    r"""The scale ``c ∈ [SCALE_LOW, 1]`` of the model ``P, c·Q`` fitted to the mean adjusted loss
    over a pool of ``pool`` fresh float64 sequences of the key ``fold_in(PRNGKey(0), stream)``
    (a stage's fit: :data:`SCALE_STREAM`; the rescue of a cell: its own stream)
    (golden section on the pool's stratified sample, :func:`stratify`, then the conservative edge of
    the minimum: :data:`SCALE_SLACK`, :data:`SCALE_SE`); ``1`` when no pool sequence exceeds
    :data:`SCALE_AT` at ``c = 1``.  Returns ``c`` and a summary, whose ``"slack"`` is the scale
    before the SE step.

    ``c`` multiplies every layer's update (a layer is linear in its ``Q``) and keeps the model in
    its kind.  A deep model is a high-degree polynomial of its context; minibatch training tunes it
    to the contexts it meets, and a context beyond them, about one in ``10⁵``, can cost ``10⁵``.
    The pool holds such contexts at their true rate, and the stratified sample keeps every one of
    its worst."""
    P, Q = np.asarray(P, np.float64), np.asarray(Q, np.float64)
    key = jax.random.fold_in(jax.random.PRNGKey(0), stream)
    share = max(1, pool // SCALE_SHARE)
    losses = pool_losses(P, Q, noise, n, d, key, pool)
    if losses.max() <= SCALE_AT:  # no tail: the pool's sample is not needed
        return 1.0, {"scale": 1.0, "searched": False, "pool_max": float(losses.max())}
    sample = stratify(losses, noise, n, d, key, share, share)
    seen: dict[float, tuple[float, float]] = {}

    def moments(c: float) -> tuple[float, float]:
        """The pool's mean adjusted loss at scale ``c`` and the SE an evaluation on SCALE_EVAL
        sequences would have."""
        if c not in seen:
            with jax.enable_x64(True):
                a = np.asarray(
                    evaluation.adjusted_full(
                        jnp.asarray(P),
                        jnp.asarray(c * Q),
                        Batch(*map(jnp.asarray, sample.batch)),
                        type(sample.spectra)(*map(jnp.asarray, sample.spectra)),
                    )
                )
            if not np.all(np.isfinite(a)):
                seen[c] = (np.inf, np.inf)
            else:
                # a loss past 1e154 squares to inf: the SE is unbounded
                with np.errstate(over="ignore"):
                    m, m2 = float(np.sum(sample.weight * a)), float(np.sum(sample.weight * a**2))
                seen[c] = (
                    m,
                    float(np.sqrt(max(m2 - m**2, 0.0) / SCALE_EVAL)) if np.isfinite(m2) else np.inf,
                )
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
    while c - SCALE_DOWN >= SCALE_LOW and (
        flat(c) or not moments(c)[1] <= SCALE_SE * moments(c)[0]
    ):
        c = round(c - SCALE_DOWN, 10)
    return c, {
        "scale": c,
        "searched": True,
        "pool_max": sample.pool_max,
        "mean": seen[c][0],
        "best": best,
        "se_at_eval": seen[c][1],
        "mean_unscaled": seen[1.0][0],
        "slack": slack,
    }
