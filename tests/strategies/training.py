"""Shared pieces of the training tests: a tiny configuration and a flat view of a training state."""

from __future__ import annotations

import jax
import numpy as np

#: A training run of seconds: two layers, ``d = 3``, ``n = 6``, 20 steps of 64 sequences.
TINY = dict(
    layers=2,
    noise="uniform:2",
    n=6,
    d=3,
    batch=64,
    steps=20,
    chunk=5,
    select_sequences=256,
    eval_sequences=256,
)


def leaves(state) -> list[np.ndarray]:  # noqa: ANN001
    """Every leaf of a (training) state as a NumPy array."""
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(state)]
