"""DIAG parameters on exact rationals: per-head ``p_x, p_y, q_x, q_y`` and one exact context."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.strategies.exact import rational_arrays


@st.composite
def diag_problems(
    draw: st.DrawFn,
    max_d: int = 3,
    max_n: int = 5,
    max_H: int = 3,
    max_L: int = 1,
    min_n_over_d: int = 0,
) -> dict[str, Any]:
    """A DIAG model (``heads``: ``(L, H, 4)`` = ``p_x, p_y, q_x, q_y``) and an exact context."""
    d = draw(st.integers(1, max_d))  # d in [1, max_d]
    n = draw(st.integers(max(1, d + min_n_over_d), max(max_n, d + min_n_over_d)))  # n in [1, max_n]
    H = draw(st.integers(1, max_H))  # heads in [1, max_H]
    L = draw(st.integers(1, max_L))  # layers in [1, max_L]
    return {
        "d": d,
        "n": n,
        "H": H,
        "L": L,
        "heads": draw(rational_arrays((L, H, 4))),
        "X": draw(rational_arrays((n, d))),
        "y": draw(rational_arrays((n,))),
        "x_query": draw(rational_arrays((d,))),
    }
