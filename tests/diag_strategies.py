"""Hypothesis strategies for the diagonal-form tests: exact rationals, small sizes."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import strategies as st

# Bounded numerators/denominators keep exact arithmetic fast over up to 3 layers.
rationals = st.fractions(min_value=-3, max_value=3, max_denominator=4)
nonzero_rationals = rationals.filter(lambda q: q != 0)


@st.composite
def fraction_arrays(draw: st.DrawFn, shape: tuple[int, ...], elements: st.SearchStrategy[Fraction] = rationals) -> Any:
    flat = draw(st.lists(elements, min_size=int(np.prod(shape, dtype=int)), max_size=int(np.prod(shape, dtype=int))))
    return np.array(flat, dtype=object).reshape(shape)


@st.composite
def diag_problems(draw: st.DrawFn, max_d: int = 3, max_n: int = 5, max_H: int = 3, max_L: int = 1,
                  min_n_over_d: int = 0) -> dict[str, Any]:
    """A DIAG model (``heads``: ``(L, H, 4)`` = ``p_x, p_y, q_x, q_y``) and an exact context."""
    d = draw(st.integers(1, max_d))  # d in [1, max_d]
    n = draw(st.integers(max(1, d + min_n_over_d), max(max_n, d + min_n_over_d)))  # n in [1, max_n]
    H = draw(st.integers(1, max_H))  # heads in [1, max_H]
    L = draw(st.integers(1, max_L))  # layers in [1, max_L]
    return {"d": d, "n": n, "H": H, "L": L,
            "heads": draw(fraction_arrays((L, H, 4))),
            "X": draw(fraction_arrays((n, d))), "y": draw(fraction_arrays((n,))), "x_query": draw(fraction_arrays((d,)))}
