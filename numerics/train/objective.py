r"""The training objective: the batch drawn for a step, the Huber loss and the divergence guard's
statistics.

``ℒ(θ) = ½ E (y_t − ŷ_θ)²`` (docs/model.md) is estimated on a fresh batch each step, drawn on device
from the key ``fold_in(fold_in(PRNGKey(seed), 1), step)`` (:func:`data_key`), so the data depend on
``(seed, step)`` only.  Training minimises ``mean huber_δ(y_t − ŷ)`` (:func:`loss_fn`);
docs/training.md says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from numerics.data import Noise, sample_with_sigma
from numerics.models.forward import predict_fast, predict_plain
from numerics.models.kinds import Diag, Full, kind_of, universal
from numerics.train.config import TrainConfig


def data_key(seed: jax.Array | int, stream: int, index: jax.Array | int) -> jax.Array:
    """Key of batch ``index`` in stream ``stream`` (1 training, 2 selection, 3 final eval) of master
    ``seed``."""
    return jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), stream), index)


def static_config(cfg: TrainConfig) -> TrainConfig:
    """The config with the seed and the noise levels zeroed, the start forgotten and the schedule
    normalised: compiled programs are cached on it and take the seed, :func:`noise_values`, the
    state and the schedule (:func:`numerics.train.schedule.schedule`) as arguments (one compile
    serves ``uniform:0`` … ``uniform:7``, from any start, for any ``steps``, ``lr``, ``warmup`` and
    ``final_fraction``: the sweep's cells of one model and depth share every stage's programs).  Of
    the schedule only whether a FULL run has a DIAG phase is kept (``diag_steps`` 1 of 2 steps, or
    0)."""
    nz = cfg.noise_dist
    return replace(
        cfg,
        seed=0,
        noise=str(Noise(nz.kind, (0.0,) * len(nz.values))),
        warm_start=None,
        init="random",
        init_scale=TrainConfig.init_scale,
        steps=2,
        lr=None,
        warmup=None,
        diag_steps=1 if cfg.phase1_steps else 0,
        final_fraction=TrainConfig.final_fraction,
    )


def noise_values(cfg: TrainConfig) -> jax.Array:
    """The noise levels of ``cfg.noise``, the traced argument of the compiled programs."""
    return jnp.asarray(cfg.noise_dist.values, cfg.jdtype)


def draw(cfg: TrainConfig, key: jax.Array, batch: int, sharding: Any, values: jax.Array) -> Any:
    """A batch from the config's noise distribution (float ``cfg.dtype``), sharded over the batch
    axis by ``sharding`` (:func:`batch_sharding`; ``None``: not sharded); ``values`` overrides the
    levels of ``cfg.noise`` (same kind and count)."""
    ks, kd = jax.random.split(key)
    sigma = cfg.noise_dist.sample_sigma(ks, batch, cfg.jdtype, values)
    b = sample_with_sigma(kd, sigma, cfg.n, cfg.d, cfg.jdtype)
    if sharding is not None:
        b = jax.tree_util.tree_map(
            lambda a: jax.lax.with_sharding_constraint(a, sharding(a.ndim)), b
        )
    return b


def batch_mesh(devices: list | tuple) -> Mesh:
    """The 1-D ``batch`` mesh of ``devices`` that training runs on."""
    return Mesh(np.asarray(devices), ("batch",))


def batch_sharding(devices: list | tuple) -> Callable[[int], NamedSharding]:
    """``ndim ↦`` sharding that splits axis 0 (the batch) over all devices of :func:`batch_mesh`."""
    mesh = batch_mesh(devices)
    return lambda ndim: NamedSharding(mesh, PartitionSpec("batch", *([None] * (ndim - 1))))


def diag_part(params: Full) -> Diag:
    r"""The DIAG model a FULL ``(P, Q)`` is projected to during the DIAG phase: ``p_x`` = mean of
    the ``x``-block's diagonal, ``p_y = P_{yy}`` (likewise ``q``); the orthogonal projection onto
    ``diag(p_x I, p_y)``, so every diagonal ``x`` entry receives the same gradient and Adam moves
    them together."""
    d = params.P.shape[-1] - 1

    def split(M: jax.Array) -> tuple[jax.Array, jax.Array]:
        dg = jnp.diagonal(M, axis1=-2, axis2=-1)
        return jnp.mean(dg[..., :d], axis=-1), dg[..., d]

    (px, py), (qx, qy) = split(params.P), split(params.Q)
    return Diag(px, py, qx, qy)


def effective_params(cfg: TrainConfig, params: Any, step: int) -> Any:
    """The model that ``params`` (leading seed axis) define after ``step`` steps: in a FULL run's
    DIAG phase, the FULL embedding of their DIAG projection (:func:`diag_part`); otherwise
    ``params``."""
    if cfg.phase1_steps and step <= cfg.phase1_steps:
        return jax.vmap(lambda p: Full(*universal(diag_part(p), cfg.d)))(params)
    return params


def huber(r: jax.Array, delta: float) -> jax.Array:
    """``½ r²`` for ``|r| ≤ δ``, ``δ (|r| − ½ δ)`` beyond, for ``δ > 0`` (:func:`loss_sums` takes
    ``δ = 0`` as ``½ r²`` everywhere without it)."""
    sq = 0.5 * r**2
    a = jnp.abs(r)
    return jnp.where(a <= delta, sq, delta * (a - 0.5 * delta))


class Aux(NamedTuple):
    """:func:`loss_fn`'s auxiliary output."""

    #: batch median of ½ r², a dead sequence counted as +∞ (the divergence guard's statistic)
    median: jax.Array
    #: sequences left out of the squared loss: dead, or beyond δ while the Huber loss applies
    dropped: jax.Array


def loss_sums(
    params: Any, b: Any, forward: str, diag_phase: Any, delta: float, final: Any
) -> tuple[jax.Array, tuple[jax.Array, jax.Array, jax.Array]]:
    """The parts of :func:`loss_fn` that add up over a batch's sequences: the sum of the
    per-sequence loss over the alive sequences and, as auxiliary output, their number, every
    sequence's ``½ r²`` (``+∞`` where dead) and the count of sequences the objective did not take as
    ``½ r²``.  A batch split in parts gives the same sums."""
    kind = kind_of(params)

    def sums(p: Any) -> tuple[jax.Array, tuple[jax.Array, jax.Array, jax.Array]]:
        if kind.own_forward:  # a family member (numerics.models.family): its own guarded pass
            yhat, alive = kind.forward(p, b.X, b.y, b.x_query, guard=True)
        elif forward == "fast":
            yhat, alive = predict_fast(p, b.X, b.y, b.x_query, guard=True)
        else:
            yhat, alive = predict_plain(p, b.X, b.y, b.x_query), jnp.ones(b.X.shape[0], bool)
        r = yhat - b.y_query
        sq = 0.5 * r**2
        per = jnp.where(final, sq, huber(r, delta)) if delta else sq
        clipped = (jnp.abs(r) > delta) & ~final if delta else jnp.zeros_like(alive)
        dropped = jnp.sum(~alive | (alive & clipped)).astype(jnp.int32)
        return jnp.sum(jnp.where(alive, per, 0)), (
            jnp.sum(alive),
            jnp.where(alive, sq, jnp.inf),
            dropped,
        )

    if kind.diag_phase and diag_phase is not False:
        return jax.lax.cond(diag_phase, lambda p: sums(diag_part(p)), sums, params)
    return sums(params)


def loss_fn(
    params: Any,
    b: Any,
    forward: str = "fast",
    diag_phase: Any = False,
    delta: float = 0.0,
    final: Any = False,
) -> tuple[jax.Array, Aux]:
    """``mean huber_δ(y_t − ŷ)`` (``½ (y_t − ŷ)²`` where ``|y_t − ŷ| ≤ δ``) over the batch's *alive*
    sequences (``predict_fast(guard=True)``: a sequence whose pass leaves the float range is
    dropped, with gradient exactly 0) and, as auxiliary output (:class:`Aux`), the batch *median* of
    ``½ (y_t − ŷ)²`` with dead sequences counted as ``+∞`` (the divergence guard's statistic) and
    the number of sequences the objective did not take as ``½ r²``.  ``final`` (a traced bool) drops
    the Huber loss: the last :attr:`TrainConfig.final_fraction` of training minimises the plain mean
    squared error.  ``forward="plain"``: the literal token pass.  ``diag_phase`` (FULL only, a
    traced bool): evaluate the DIAG projection :func:`diag_part` instead."""
    total, (alive, sq, dropped) = loss_sums(params, b, forward, diag_phase, delta, final)
    return total / alive, Aux(jnp.nanmedian(sq), dropped)  # NaN if every sequence is dead


def loss_and_grad(
    params: Any, b: Any, forward: str, diag_phase: Any, delta: float, final: Any, micro_batch: int
) -> tuple[tuple[jax.Array, Aux], Any]:
    """``jax.value_and_grad(loss_fn, has_aux=True)``, with the batch's forward and backward passes
    run ``micro_batch`` sequences at a time (0: all at once) and their sums added
    (:func:`loss_sums`): the same loss, statistics and gradient up to the order of the additions,
    each pass on smaller arrays (what that buys is machine dependent:
    ``python benchmarks/micro_batch.py``).  Part ``j`` holds the sequences ``j, j + m, j + 2m, …``
    (``m`` parts), so a batch sharded over devices keeps every part spread over all of them."""
    B = int(jax.tree_util.tree_leaves(b)[0].shape[0])
    if not micro_batch or micro_batch >= B:
        return jax.value_and_grad(loss_fn, has_aux=True)(
            params, b, forward, diag_phase, delta, final
        )
    m = B // micro_batch
    parts = jax.tree_util.tree_map(
        lambda a: jnp.swapaxes(a.reshape(micro_batch, m, *a.shape[1:]), 0, 1), b
    )

    def part(acc: tuple[jax.Array, Any], mb: Any) -> tuple[tuple[jax.Array, Any], tuple]:
        (total, aux), g = jax.value_and_grad(loss_sums, has_aux=True)(
            params, mb, forward, diag_phase, delta, final
        )
        return (acc[0] + total, jax.tree_util.tree_map(jnp.add, acc[1], g)), aux

    zero = (
        jnp.zeros((), jax.tree_util.tree_leaves(params)[0].dtype),
        jax.tree_util.tree_map(jnp.zeros_like, params),
    )
    (total, grads), (alive, sq, dropped) = jax.lax.scan(part, zero, parts)
    n = jnp.sum(alive)
    return (total / n, Aux(jnp.nanmedian(sq), jnp.sum(dropped))), jax.tree_util.tree_map(
        lambda g: g / n, grads
    )
