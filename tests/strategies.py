"""Shared, typed Hypothesis strategies with commented size bounds.

Exact strategies draw :class:`fractions.Fraction` values so algebraic claims are checked by
equality, not tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

# Small denominators keep exact arithmetic fast while still exercising non-integer values;
# |value| <= 2 keeps three layers of degree-3 growth within a few hundred digits.
exact_values: st.SearchStrategy[Fraction] = st.fractions(min_value=-2, max_value=2, max_denominator=4)


@dataclass(frozen=True)
class Config:
    """Sizes of one model and one sequence."""

    d: int  # input dimension, 1..4
    n: int  # context length, 1..8 (n < d allowed: degenerate but legal)
    H: int  # heads, 1..3
    L: int  # layers, 1..3


configs: st.SearchStrategy[Config] = st.builds(
    Config,
    d=st.integers(1, 4),
    n=st.integers(1, 8),
    H=st.integers(1, 3),
    L=st.integers(1, 3),
)


def exact_array(shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    """Object array of exact rationals with the given shape."""
    size = int(np.prod(shape))
    return st.lists(exact_values, min_size=size, max_size=size).map(
        lambda v: np.array(v, dtype=object).reshape(shape)
    )


@dataclass(frozen=True)
class ExactProblem:
    """Universal parameters ``P, Q (L,H,d+1,d+1)``, context ``X (n,d)``, ``y (n,)`` and query ``x_t (d,)``."""

    cfg: Config
    P: np.ndarray
    Q: np.ndarray
    X: np.ndarray
    y: np.ndarray
    x_query: np.ndarray


@st.composite
def exact_problems(draw: st.DrawFn, cfg_strategy: st.SearchStrategy[Config] = configs) -> ExactProblem:
    cfg = draw(cfg_strategy)
    D = cfg.d + 1
    return ExactProblem(
        cfg,
        draw(exact_array((cfg.L, cfg.H, D, D))),
        draw(exact_array((cfg.L, cfg.H, D, D))),
        draw(exact_array((cfg.n, cfg.d))),
        draw(exact_array((cfg.n,))),
        draw(exact_array((cfg.d,))),
    )


# ---------------------------------------------------------------------------------------------
# Float64 configurations for the layer-by-layer properties.
# ---------------------------------------------------------------------------------------------
KINDS = ("full", "diag", "gdpp")
#: Degenerate but legal data: repeated context points, all-zero targets, rank-one inputs.
DEGENERACIES = ("none", "repeated", "zero_targets", "rank_one")


@dataclass(frozen=True)
class ModelConfig:
    """A model kind and sizes, a data seed and a degeneracy of the context."""

    kind: str
    d: int  # 1..5
    n: int  # 1..10 (n < d happens: degenerate but legal)
    H: int  # 1..3 (1 for gdpp)
    L: int  # 1..7 (the paper's depths)
    seed: int
    degeneracy: str


@st.composite
def model_configs(draw: st.DrawFn, kinds: tuple[str, ...] = KINDS, max_L: int = 7, max_d: int = 5,
                  max_n: int = 10) -> ModelConfig:
    """Default bounds keep one example under a second; the slow tests raise them (d 10, n 30, L 12)."""
    kind = draw(st.sampled_from(kinds))
    return ModelConfig(
        kind=kind,
        d=draw(st.integers(1, max_d)),
        n=draw(st.integers(1, max_n)),
        H=1 if kind == "gdpp" else draw(st.integers(1, 3)),
        L=draw(st.integers(1, max_L)),
        seed=draw(st.integers(0, 2**16)),
        degeneracy=draw(st.sampled_from(DEGENERACIES)),
    )


def config_batch(cfg: ModelConfig, batch: int = 3):  # noqa: ANN201
    """A float64 batch for ``cfg`` (NumPy-drawn: no per-shape compile), with its degeneracy applied."""
    import jax.numpy as jnp

    from numerics.data import Batch
    from tests.model_helpers import toy_batch

    b = toy_batch(cfg.seed, n=cfg.n, d=cfg.d, batch=batch)
    X, y = np.array(b.X), np.array(b.y)
    if cfg.degeneracy == "repeated":
        X[:, 1::2] = X[:, :1]
        y[:, 1::2] = y[:, :1]
    elif cfg.degeneracy == "zero_targets":
        y[:] = 0
    elif cfg.degeneracy == "rank_one":
        X = X[:, :, :1] * np.ones((1, 1, cfg.d))
    return Batch(jnp.asarray(X), jnp.asarray(y), b.x_query, b.y_query, b.sigma, b.w)


def property_settings(default_examples: int = 8):  # noqa: ANN201
    """Settings for the float64 layer-by-layer properties: few examples by default (each draws new
    shapes, so JAX compiles), the ``slow`` profile's count when it is loaded."""
    import os

    from hypothesis import settings

    slow = os.environ.get("HYPOTHESIS_PROFILE") == "slow"
    return settings(max_examples=settings.default.max_examples if slow else default_examples)
