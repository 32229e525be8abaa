r"""One training step and a compiled chunk of them: Adam with clipping, the step-rejection and
rollback guards.

Update (per seed ``s``, step ``t``; Adam with global-norm clipping, warm-up + cosine schedule):

.. math::

    g = \mathrm{clip}_c(\nabla ℒ), \quad θ \leftarrow θ - η_t\,ρ_s\,d_s\,\mathrm{Adam}(g),\quad
    η_t = η\,\min(1, t/t_w)\,\tfrac12\,(1+\cos(π\,\tfrac{t}{N}))

with ``η`` = ``lr``, ``t_w`` = ``warmup``, ``N`` = ``steps``, ``c`` = ``clip``, ``ρ_s`` the per-seed
rollback factor and ``d_s`` the per-seed step-rejection factor (:func:`make_chunk`;
docs/training.md).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.sharding import NamedSharding, PartitionSpec

from numerics.train.config import TrainConfig
from numerics.train.objective import (
    batch_mesh,
    batch_sharding,
    data_key,
    draw,
    loss_and_grad,
    loss_fn,
    static_config,
)
from numerics.train.schedule import Schedule, lr_at, schedule

#: A seed is declared diverged when this many consecutive steps have an exploding batch median.
MAX_SKIPS = 3
#: Step rejection (``trust > 0``): the check runs on every ``TRUST_STRIDE``-th sequence of the
#: step's batch, and an accepted step regrows the rejection factor ``damp`` by this much (up to 1).
TRUST_STRIDE = 8
TRUST_REGROW = 1.1
#: ... and a step is rejected only where the new median is also above this fraction of ``d/2`` (the
#: loss of ``ŷ = 0``): near a low-noise optimum a step that doubles a median of 1e-4 is Adam's
#: ordinary jitter, not a way into the cliff.
TRUST_FLOOR = 0.1


class TrainState(NamedTuple):
    """Per-seed state, every leaf with a leading seed axis ``K``."""

    params: Any
    opt_state: Any
    rho: jax.Array  # (K,) rollback factor on the learning rate
    step: jax.Array  # () global step (shared by all seeds)
    # (K,) step-rejection factor on the learning rate (halved per rejected step, regrown after)
    damp: jax.Array
    rejected: jax.Array  # (K,) int32, steps rejected so far (:data:`TrainConfig.trust`)
    # (K,) int32, sequences left out of the squared loss in the final phase (:class:`Aux`)
    dropped: jax.Array


def optimizer(cfg: TrainConfig) -> optax.GradientTransformation:
    """Clip, then Adam's direction; the learning rate is applied in :func:`make_chunk`."""
    return optax.chain(optax.clip_by_global_norm(cfg.clip), optax.scale_by_adam())


def project(cfg: TrainConfig, params: Any) -> Any:
    r"""GD++ with ``gdpp_xx = "nonpositive"``: ``ω_xx ← min(ω_xx, 0)`` (projected Adam); anything
    else unchanged.

    A GD++ layer maps every ``x`` by ``I + ω_xx Σ̂`` (``Σ̂`` the context's ``X^T X``); ``ω_xx > 0``
    widens the spectrum by ``1 + ω_xx λ`` at every layer and the widening compounds with depth.
    From the small random start, Adam's first, sign-like steps move every ``ω_xx`` up by about the
    learning rate (``git show 57798be:benchmarks/gdpp_first_steps.py``), and GD++-12 at
    ``uniform:0`` then rolled back 8 times.  The GD++ models fitted or trained well here have
    ``ω_xx ≤ 0`` at every layer whose ``ω_xx`` reaches the output (Theorem 5.1's preconditioner
    ``I − γ Σ̂`` with ``γ ≥ 0``), so the constraint leaves them in reach."""
    return cfg.kind.project(params, free=cfg.gdpp_xx == "free")


def y_moment(cfg: TrainConfig, values: jax.Array) -> jax.Array:
    """``E y² = d + E σ²`` of the data (``w ~ N(0, I_d)``, ``x ~ N(0, I_d)``), from the traced noise
    levels ``values`` (:meth:`numerics.data.Noise.mean_sigma2_of`)."""
    return cfg.d + cfg.noise_dist.mean_sigma2_of(values)


def y_step(cfg: TrainConfig, updates: Any, values: jax.Array) -> Any:
    r"""Adam's step of DIAG's ``q_y`` (FULL's ``Q_yy``) divided by ``c = E y² = d + E σ²``
    (``y_step="scaled"``).

    Scaling the targets by ``s`` is a symmetry of the layer rule: with ``S = diag(1_d, 1/s)`` the
    model on tokens ``(x, y/s)`` is the model on ``(x, y)`` conjugated by ``S``, and it needs
    ``P ↦ S P S^{-1}``, ``Q ↦ S^{-1} Q S^{-1}``.  For DIAG that leaves ``p`` and ``q_x`` as they are
    and multiplies ``q_y`` by ``s²`` (``ω_xy`` and ``ω_yy``, the two ``ω`` that read ``y``).  Adam's
    step is the same size for every parameter whatever its scale, so without this it moves ``q_y``
    ``c`` times too far in the coordinates where ``y`` has the scale of ``x`` (``s² = c``): the
    ``yy`` entry of ``E`` is ``n c``, and ``1 + ω_yy E_yy`` compounds over the layers.  This is the
    step of Adam run on ``q̃_y = c q_y``, except that the gradient clipping sees ``q_y``'s own
    gradient.  GD++ has no ``q_y`` (its ``y`` column of ``Q`` is 0): unchanged.

    FULL's default (:data:`DEFAULT_Y_STEP`), not DIAG's.  FULL-12, 3000 steps: over all 10 noise
    settings with seed 0, 1 rollback in 1 setting against 9 in 7 with the plain step; seed 1 at
    ``uniform:6`` and ``categorical:1,3,5`` and seed 2 at ``uniform:5``, 0 rollbacks against 2.
    Adjusted losses (4096 sequences) were lower with the scaled step in 7 of the 13 runs: no clear
    difference in quality (docs/training.md, docs/experiments/stability.md).  For DIAG it is not a
    clear gain.  The first 600 steps of DIAG-12 at ``uniform:7`` (``c = 26.3``), 3 seeds, chunks of
    50 without rollback: every seed failed a chunk with the plain step (from step 100, 150 and 200),
    and 2 of 3 with this one (from 150 and 200) (``git show 57798be:benchmarks/early_chunks.py``,
    run as ``python early_chunks.py --model diag --layers 12 --noise uniform:7 --steps 600 --seeds
    3 --variant 'plain={}' --variant 'scaled={"y_step": "scaled"}'``).  Over the default 3000 steps
    at depth 12 and all 10 noise settings, one run each (``benchmarks/smoke_sweep.py``;
    docs/experiments/stability.md): DIAG rolled back 5 times in 4 settings (plain: 8 in 6), with
    lower losses at high noise and higher ones at low noise."""
    if cfg.y_step == "plain":
        return updates
    c = y_moment(cfg, values).astype(jax.tree_util.tree_leaves(updates)[0].dtype)
    return cfg.kind.scale_y_step(updates, c, cfg.d)


def accepts(before: jax.Array, after: jax.Array, trust: float, d: int) -> jax.Array:
    """Step rejection's rule (``trust > 0``) on the check's median losses at the old and the new
    parameters: the step is kept when ``after`` is finite and at most ``trust`` × ``before``, or at
    most :data:`TRUST_FLOOR` × ``d/2`` (the loss of ``ŷ = 0``)."""
    return jnp.isfinite(after) & ((after <= trust * before) | (after <= TRUST_FLOOR * d / 2))


def explode_limit(cfg: TrainConfig) -> float:
    """The batch median loss above which a step's batch counts as exploded: ``explode × d/2``."""
    return cfg.explode * cfg.d / 2.0


def seed_step(
    cfg: TrainConfig,
    params: Any,
    opt_state: Any,
    rho: jax.Array,
    damp: jax.Array,
    lr: jax.Array,
    b: Any,
    diag_phase: Any,
    values: jax.Array,
    final: jax.Array,
) -> tuple:
    """One seed's step on batch ``b`` (the chunk maps it over the seeds): Adam's update at rate
    ``lr × rho × damp``, kept only where it is ``good`` (finite loss, gradient and new parameters,
    and a batch median below ``explode × d/2``) and :func:`accepts` it.  Returns the parameters and
    Adam's state (new where taken, else as they were), the new ``damp``, whether the step was
    rejected, ``good``, whether the median exploded, the loss (NaN where not good) and the
    sequences dropped from the final phase's loss."""
    (loss, aux), grads = loss_and_grad(
        params, b, cfg.forward, diag_phase, cfg.huber_delta, final, cfg.micro_batch
    )
    med = aux.median
    updates, new_opt = optimizer(cfg).update(grads, opt_state, params)
    updates = y_step(cfg, updates, values)
    new_params = project(
        cfg,
        jax.tree_util.tree_map(
            lambda p, u: p - (lr * rho * damp).astype(p.dtype) * u, params, updates
        ),
    )
    finite = jnp.isfinite(loss) & jnp.isfinite(optax.tree.norm(grads))
    finite &= jnp.all(
        jnp.asarray([jnp.all(jnp.isfinite(p)) for p in jax.tree_util.tree_leaves(new_params)])
    )
    # the batch's typical sequence is fine at these parameters
    sane = jnp.isfinite(med) & (med < explode_limit(cfg))
    good = finite & sane
    # Without a trust region ``accept`` is Python's True and ``good & ~accept`` is ``good & -2``, an
    # int32 zero: no rejection.  A JAX bool would say so plainly, but it changes XLA's fusion of the
    # step and with it the float32 rounding that test_schedule holds to 4 ULP between two programs.
    accept = _trusted(cfg, params, new_params, b, diag_phase) if cfg.trust else True
    take = good & accept

    def keep(new: Any, old: Any) -> Any:
        return jax.tree_util.tree_map(lambda a, c: jnp.where(take, a, c), new, old)

    damp = jnp.where(
        good & ~accept, 0.5 * damp, jnp.where(take, jnp.minimum(1.0, damp * TRUST_REGROW), damp)
    )
    return (
        keep(new_params, params),
        keep(new_opt, opt_state),
        damp.astype(rho.dtype),
        good & ~accept,
        good,
        ~sane,
        jnp.where(good, loss, jnp.nan),
        aux.dropped,
    )


def _trusted(cfg: TrainConfig, params: Any, new_params: Any, b: Any, diag_phase: Any) -> Any:
    """:func:`accepts` on the median loss of every ``TRUST_STRIDE``-th sequence of the step's own
    batch."""
    sub = jax.tree_util.tree_map(lambda a: a[::TRUST_STRIDE], b)
    before = loss_fn(params, sub, cfg.forward, diag_phase)[1].median
    after = loss_fn(new_params, sub, cfg.forward, diag_phase)[1].median
    return accepts(before, after, cfg.trust, cfg.d)


def make_chunk(cfg: TrainConfig, length: int, sharding: Any) -> Callable:
    """A jitted function ``run(state, seed, values, sched)`` running ``length`` steps of
    :func:`seed_step` with ``lax.scan``; returns (state, ok (K,), losses (length, K)).  The schedule
    ``sched`` (:func:`schedule`) is an argument: of ``cfg``'s schedule only whether there is a DIAG
    phase is built in (the phase's ``lax.cond`` is in the program or not)."""

    def phase(step: jax.Array, sched: Schedule) -> Any:
        return step < sched.s1 if cfg.phase1_steps else False

    def body(sched, carry, xs):
        seed, values = xs
        state, run_bad, worst, skips = carry
        b = draw(cfg, data_key(seed, 1, state.step), cfg.batch, sharding, values)
        lr = lr_at(cfg, state.step, sched)
        final = state.step >= sched.final_start
        params, opt_state, damp, rejected, good, boom, loss, dropped = jax.vmap(
            partial(seed_step, cfg), in_axes=(0, 0, 0, 0, None, None, None, None, None)
        )(
            state.params,
            state.opt_state,
            state.rho,
            state.damp,
            lr,
            b,
            phase(state.step, sched),
            values,
            final,
        )
        run_bad = jnp.where(boom, run_bad + 1, 0)
        carry = (
            TrainState(
                params,
                opt_state,
                state.rho,
                state.step + 1,
                damp,
                state.rejected + rejected.astype(jnp.int32),
                state.dropped + jnp.where(final, dropped, 0).astype(jnp.int32),
            ),
            run_bad,
            jnp.maximum(worst, run_bad),
            skips + (~good).astype(jnp.int32),
        )
        return carry, loss

    @jax.jit
    def run(state: TrainState, seed: jax.Array, values: jax.Array, sched: Schedule):
        zero = jnp.zeros(state.rho.shape, jnp.int32)
        xs = (jnp.broadcast_to(seed, (length,)), jnp.broadcast_to(values, (length, *values.shape)))
        (state, _, worst, skips), losses = jax.lax.scan(
            partial(body, sched), (state, zero, zero, zero), xs
        )
        # the chunk's last update is verified too (finite parameters, bounded median loss on the
        # last batch)
        b = draw(cfg, data_key(seed, 1, state.step - 1), cfg.batch, sharding, values)
        med = jax.vmap(loss_fn, in_axes=(0, None, None, None))(
            state.params, b, cfg.forward, phase(state.step - 1, sched)
        )[1].median
        finite = jnp.all(
            jnp.stack(
                [
                    jnp.all(jnp.isfinite(p).reshape(p.shape[0], -1), axis=1)
                    for p in jax.tree_util.tree_leaves(state.params)
                ]
            ),
            axis=0,
        )
        ok = (worst < MAX_SKIPS) & (2 * skips <= length) & finite & (med < explode_limit(cfg))
        return state, ok, losses

    return run


class Chunk(NamedTuple):
    """:func:`make_chunk`'s ``program`` with a run's :func:`schedule` bound:
    ``chunk(state, seed, values)``."""

    program: Callable
    sched: Schedule

    def __call__(self, state: TrainState, seed: jax.Array, values: jax.Array) -> Any:
        return self.program(state, seed, values, self.sched)

    def lower(self, state: TrainState, seed: jax.Array, values: jax.Array) -> Any:
        return self.program.lower(state, seed, values, self.sched)


CHUNK_CACHE: dict = {}


def place(state: Any, devices: tuple) -> Any:
    """``state`` (a :class:`TrainState`, or any tree of its arrays) replicated over the 1-D
    ``batch`` mesh of ``devices`` (:func:`numerics.train.objective.batch_mesh`), committed, as the
    compiled chunk returns it: a chunk's program is keyed on its arguments' types, and an array's
    type carries its mesh, so a start built on the host (:func:`numerics.train.loop.init_state`, a
    checkpoint, a rollback's halved ``rho``) would otherwise compile the chunk a second time.
    Values unchanged."""
    return jax.device_put(state, NamedSharding(batch_mesh(devices), PartitionSpec()))


def chunk_fn(cfg: TrainConfig, length: int, devices: tuple) -> Chunk:
    """The compiled chunk of ``length`` steps for ``cfg`` on ``devices``.  The program is cached on
    :func:`static_config`, which holds no schedule: the stages of a cell, which differ in steps and
    learning rate, share it, each with its own :func:`schedule`."""
    key = (static_config(cfg), length, devices)
    if key not in CHUNK_CACHE:
        CHUNK_CACHE[key] = make_chunk(key[0], length, batch_sharding(list(devices)))
    return Chunk(CHUNK_CACHE[key], schedule(cfg))
