"""Random parameters and data of the family's members (docs/family.md), shared by the model and
testing-kit tests."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from numerics import models
from numerics.models import family
from tests.strategies.model_params import toy_batch


def member_params(
    name: str, seed: int, layers: int = 3, d: int = 3, heads: int = 2, scale: float | None = None
):
    """Random parameters of ``name``: maps ``N(0, scale²)`` (tokens stay O(1)-O(10) on
    :func:`member_data`; keys that are the tokens themselves need a smaller scale), gate weights and
    biases ``N(0, 1)`` (gates spread over (0, 1), so a gate in the wrong place shows)."""
    kind = models.kind_of(name)
    scale = (0.15 if kind.keys else 0.06) if scale is None else scale
    # drawn with NumPy on the shapes of the kind's own init (jax.random would compile a program for
    # every member and depth a test process meets)
    shapes = family.parameter_shapes(kind, layers, d, heads)
    rng = np.random.default_rng(seed)
    return type(shapes)(
        **{
            f: jnp.asarray(
                (scale if f in ("W_V", "W_K", "W_Q") else 1.0)
                * rng.standard_normal(getattr(shapes, f).shape)
            )
            for f in shapes._fields
        }
    )


def member_data(
    seed: int = 3, n: int = 5, d: int = 3, batch: int = 3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, x_query)`` as float64 NumPy arrays (:func:`toy_batch`)."""
    b = toy_batch(seed, n=n, d=d, batch=batch)
    return tuple(np.asarray(v) for v in (b.X, b.y, b.x_query))
