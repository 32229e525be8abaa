r"""Exact rational test data: NumPy ``object`` arrays of :class:`fractions.Fraction`, from a seed.

Used by the proof scripts and tests as the *numeric* route of algebraic checks: the literal
forward pass (:func:`~lintf_theory.layer.layer_forward`) and the bridge exports both run on
these arrays, and the comparison is exact equality.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp


def rational_array(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    num: int = 5,
    den: int = 4,
    nonzero: bool = False,
) -> Any:
    r"""Entries ``p/q`` with ``p ∈ [-num, num]`` (``p ≠ 0`` if ``nonzero``), ``q ∈ [1, den]`` (object array of Fraction)."""
    if num < 1 or den < 1:
        raise ValueError(f"num and den must be >= 1, got num={num}, den={den}")
    flat = []
    for _ in range(int(np.prod(shape, dtype=int))):
        p = (
            int(rng.integers(1, num + 1)) * (1 if rng.integers(2) else -1)
            if nonzero
            else int(rng.integers(-num, num + 1))
        )
        flat.append(Fraction(p, int(rng.integers(1, den + 1))))
    return np.array(flat, dtype=object).reshape(shape)


def fraction_eye(d: int) -> Any:
    """``I_d`` as an object array of Fraction."""
    return np.array([[Fraction(int(i == j)) for j in range(d)] for i in range(d)], dtype=object)


def diag_universal(px: Any, py: Any, qx: Any, qy: Any, d: int) -> tuple[Any, Any]:
    r"""DIAG heads as universal object arrays ``P, Q`` of shape ``(L, H, d+1, d+1)``.

    ``P_k^l = diag(p_x I_d, p_y)``, ``Q_k^l = diag(q_x I_d, q_y)`` (docs/model.md); ``px..qy`` are ``(L, H)``.
    """
    px, py, qx, qy = (np.asarray(v, dtype=object) for v in (px, py, qx, qy))
    if px.ndim != 2 or not (px.shape == py.shape == qx.shape == qy.shape):
        raise ValueError(
            f"px, py, qx, qy must all have shape (L, H); got {px.shape}, {py.shape}, {qx.shape}, {qy.shape}"
        )
    L, H = px.shape
    out = []
    for xs, ys in ((px, py), (qx, qy)):
        arr = np.full((L, H, d + 1, d + 1), Fraction(0), dtype=object)
        for l in range(L):
            for k in range(H):
                for i in range(d):
                    arr[l, k, i, i] = Fraction(xs[l, k])
                arr[l, k, d, d] = Fraction(ys[l, k])
        out.append(arr)
    return out[0], out[1]


def tokens(X: Any, y: Any, x_query: Any) -> Any:
    """Token matrix ``(n+1, d+1)``: rows ``(x_i, y_i)`` then the query ``(x_t, 0)``."""
    ctx = np.concatenate([X, y.reshape(-1, 1)], axis=1)
    q = np.concatenate([x_query, np.array([Fraction(0)], dtype=object)]).reshape(1, -1)
    return np.concatenate([ctx, q], axis=0)


def solve(A: Any, b: Any) -> Any:
    """Exact solution of ``A z = b`` (``A`` square, invertible) by SymPy's rational LU."""
    sol = sp.Matrix(A.tolist()).LUsolve(sp.Matrix(b.reshape(len(b), -1).tolist()))
    return np.array(
        [[Fraction(int(v.p), int(v.q)) for v in row] for row in sol.tolist()], dtype=object
    ).reshape(b.shape)
