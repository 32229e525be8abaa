"""Exact rationals for algebraic claims: the one rational generator, arrays of it, whole problems.

Exact strategies draw :class:`fractions.Fraction` values so algebraic claims are checked by
equality, not tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

# Small denominators keep exact arithmetic fast while still exercising non-integer values.
MAX_DENOMINATOR = 4


def rationals_in(lo: Fraction | int, hi: Fraction | int) -> st.SearchStrategy[Fraction]:
    """Fractions in ``[lo, hi]`` with denominator ``<= MAX_DENOMINATOR``: every exact value drawn by the tests."""
    return st.fractions(min_value=lo, max_value=hi, max_denominator=MAX_DENOMINATOR)


# |value| <= 2 keeps three layers of degree-3 growth within a few hundred digits.
rationals: st.SearchStrategy[Fraction] = rationals_in(-2, 2)
nonzero_rationals: st.SearchStrategy[Fraction] = rationals.filter(lambda q: q != 0)


def rational_arrays(
    shape: tuple[int, ...], elements: st.SearchStrategy[Fraction] = rationals
) -> st.SearchStrategy[np.ndarray]:
    """Object array of exact rationals with the given shape."""
    size = int(np.prod(shape, dtype=int))
    return st.lists(elements, min_size=size, max_size=size).map(
        lambda v: np.array(v, dtype=object).reshape(shape)
    )


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
def exact_problems(
    draw: st.DrawFn, cfg_strategy: st.SearchStrategy[Config] = configs
) -> ExactProblem:
    """A FULL model in universal form and one exact sequence, sizes from ``cfg_strategy``."""
    cfg = draw(cfg_strategy)
    D = cfg.d + 1
    return ExactProblem(
        cfg,
        draw(rational_arrays((cfg.L, cfg.H, D, D))),
        draw(rational_arrays((cfg.L, cfg.H, D, D))),
        draw(rational_arrays((cfg.n, cfg.d))),
        draw(rational_arrays((cfg.n,))),
        draw(rational_arrays((cfg.d,))),
    )
