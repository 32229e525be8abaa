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
