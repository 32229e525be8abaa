r"""The learning-rate schedule: linear warm-up, then cosine decay to 0, as a traced argument.

.. math::

    η_t = η\,\min(1, (t+1)/t_w)\,\tfrac12\,(1+\cos(π\,\min(t, N)/N))

with ``η`` = ``lr``, ``t_w`` = ``warmup`` and ``N`` = ``steps`` (:func:`lr_at`; docs/training.md).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from numerics.models.kinds import DIAG
from numerics.train.config import TrainConfig, default_warmup


class Schedule(NamedTuple):
    """The learning-rate schedule and the final phase's start of one run (:func:`schedule`): traced
    arguments of the compiled chunk, so that runs differing only in ``steps``, ``lr``, ``warmup`` or
    ``diag_steps`` (the stages of a sweep's cell) share one program.  Floats are float32 scalars,
    folded as XLA folded the constants of the schedule when it was built into the program
    (:func:`lr_at`), so that the traced arithmetic is that program's, bit for bit
    (``tests/train/test_schedule.py``)."""

    half_peak: Any  # η/2 (float32 η halved, exact)
    warm_inv: Any  # 1/t_w of the (last) phase (inf for t_w = 0)
    start: Any  # S₁, the first step of the last phase
    length: Any  # N − S₁
    angle: Any  # π/(N − S₁) as π · (1/(N − S₁)), each factor float32
    diag_warm_inv: Any  # 1/default_warmup(S₁) of the DIAG phase (1 without one)
    diag_angle: Any  # π/S₁ as π · (1/S₁) (π without a DIAG phase)
    s1: Any  # S₁, int32 (the DIAG phase is ``step < S₁``)
    final_start: Any  # :attr:`TrainConfig.final_start`, int32


def _inv(n: int) -> np.float32:
    """``1/n`` in float32, as XLA folds a division by the float32 constant ``n`` (``inf`` for
    ``n = 0``)."""
    with np.errstate(divide="ignore"):
        return np.float32(1) / np.float32(n)


def schedule(cfg: TrainConfig) -> Schedule:
    """The traced schedule of ``cfg`` (:class:`Schedule`)."""
    s1 = cfg.phase1_steps
    n = cfg.steps - s1
    return Schedule(
        np.float32(0.5) * np.float32(cfg.peak_lr),
        _inv(cfg.warmup_steps),
        np.float32(s1),
        np.float32(n),
        np.float32(np.pi) * _inv(n),
        _inv(default_warmup(s1)) if s1 else np.float32(1),
        np.float32(np.pi) * _inv(s1 or 1),
        np.int32(s1),
        np.int32(cfg.final_start),
    )


def _warm_cosine(t: jax.Array, half_peak: Any, warm_inv: Any, steps: Any, angle: Any) -> jax.Array:
    """``η min(1, (t+1)/t_w) ½(1 + cos(π min(t, N)/N))`` in the order XLA evaluated it with ``η``,
    ``t_w`` and ``N`` constants: ``(t+1)·(1/t_w)``, ``min(t, N)·(π·(1/N))`` and
    ``(warm·(cos + 1))·(η/2)``."""
    warm = jnp.minimum((t + 1.0) * warm_inv, 1.0)
    return warm * (jnp.cos(jnp.minimum(t, steps) * angle) + 1.0) * half_peak


def lr_at(cfg: TrainConfig, step: jax.Array, sched: Schedule | None = None) -> jax.Array:
    """``η_t``: linear warm-up to ``peak_lr``, then cosine decay to 0 at ``steps``.  A FULL model
    with a DIAG phase runs that schedule twice: DIAG's peak over the first ``S₁`` steps, then its
    own over the rest.  ``sched`` (default ``schedule(cfg)``) gives the numbers; ``cfg`` only
    whether there is a DIAG phase."""
    sched = schedule(cfg) if sched is None else sched
    t = step.astype(jnp.float32)
    last = _warm_cosine(t - sched.start, sched.half_peak, sched.warm_inv, sched.length, sched.angle)
    if not cfg.phase1_steps:
        return last
    first = _warm_cosine(
        t,
        np.float32(0.5) * np.float32(DIAG.default_lr),
        sched.diag_warm_inv,
        sched.start,
        sched.diag_angle,
    )
    return jnp.where(t < sched.start, first, last)
