r"""Every threshold of a cell's training and verdict, and every PRNG stream a sweep draws from, in
one place.

==================  ==============================================================================
stream              key
==================  ==============================================================================
evaluation          ``split(PRNGKey(0))[1]``: the baselines' evaluation sequences too
                    (:func:`numerics.baselines.table`, seed 0, tunes on ``split(PRNGKey(0))[0]``),
                    so model − baseline is a paired difference
profile             ``fold_in(PRNGKey(0), 2)``, shared with the baselines' per-variance profiles
tail check          ``fold_in(PRNGKey(0), 3)``; also the key of the 1000 sequences of the beyond-
                    the-paper study's implicit weights (:mod:`numerics.reproduce.beyond`)
held-out (stages)   ``fold_in(PRNGKey(0), 4)``: the stopping rule's sequences
scale fit           ``fold_in(PRNGKey(0), 6)`` (:data:`numerics.train.scale_fit.SCALE_STREAM`)
rescue              ``fold_in(PRNGKey(0), 7)``: the scale fit again, on a budget's larger pool, for
                    a cell that fails its verdict (:func:`numerics.reproduce.verdict.rescue`)
training data       ``fold_in(fold_in(PRNGKey(seed), 1), step)`` of the cell's master seed
                    (:func:`numerics.train.objective.data_key`); seed selection uses stream 2
spectral check      numpy ``PCG64(SPECTRAL_SEED + chunk)``
==================  ==============================================================================

A cell's master seed is 0; the Fig. 5 replica ``r`` of a cell trains with master seed
``replica_seed · r``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax

from numerics.evaluate import losses as evaluation
from numerics.train.scale_fit import SCALE_STREAM


@dataclass(frozen=True)
class Rules:
    """The thresholds of the stopping rule (:meth:`numerics.reproduce.grid.Schedule`) and of the
    verdict (:mod:`numerics.reproduce.verdict`), and the seeds of every stream (module
    docstring)."""

    #: Stopping rule: doubling the steps lowered the held-out loss by less than ``stop_rel`` of it,
    #: or by less than ``stop_se`` standard errors of the paired difference, or did not lower it.
    stop_rel: float = 0.03
    stop_se: float = 2.0
    #: Depth from which a model also passes the tail check on ``tail_sequences`` fresh sequences (no
    #: per-sequence adjusted loss above :data:`numerics.evaluate.losses.TAIL_MAX`).
    tail_depth: int = 4
    tail_sequences: int = evaluation.TAIL_SEQUENCES
    #: Spectra of the GD++ spectral check (GD++ at σ_max = 0 from ``tail_depth`` on).
    spectral_sequences: int = 2**21
    spectral_seed: int = 8_000
    #: Seed of the evaluation, profile, tail and held-out keys.
    eval_seed: int = 0
    profile_stream: int = 2
    tail_stream: int = 3
    held_out_stream: int = 4
    scale_stream: int = SCALE_STREAM
    rescue_stream: int = 7
    #: Master-seed step between the replicas of a Fig. 5 cell.
    replica_seed: int = 100

    def __post_init__(self) -> None:
        if not (0 < self.stop_rel < 1 and self.stop_se >= 0):
            raise ValueError(
                f"stop_rel must be in (0, 1) and stop_se >= 0, got {self.stop_rel}, {self.stop_se}"
            )
        streams = (
            self.profile_stream,
            self.tail_stream,
            self.held_out_stream,
            self.scale_stream,
            self.rescue_stream,
        )
        if len(set(streams)) != len(streams):
            raise ValueError(f"the streams must differ, got {streams}")

    def eval_key(self) -> jax.Array:
        return jax.random.split(jax.random.PRNGKey(self.eval_seed))[1]

    def profile_key(self) -> jax.Array:
        return jax.random.fold_in(jax.random.PRNGKey(self.eval_seed), self.profile_stream)

    def tail_key(self) -> jax.Array:
        return jax.random.fold_in(jax.random.PRNGKey(self.eval_seed), self.tail_stream)

    def held_out_key(self) -> jax.Array:
        return jax.random.fold_in(jax.random.PRNGKey(self.eval_seed), self.held_out_stream)


RULES = Rules()

__all__ = ["RULES", "Rules"]
