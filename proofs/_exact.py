"""Exact-arithmetic helpers shared by proof scripts: random rationals and polynomial-ring tokens.

Entry-level checks work on NumPy ``object`` arrays whose entries are elements of a sparse
polynomial ring over QQ (``sympy.ring``): products expand eagerly, so an identity between
polynomials is decided by ``==`` without expression swell.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from sympy.polys.domains import QQ


def rational_array(
    rng: random.Random, shape: tuple[int, ...], scale: int = 3, den: int = 4
) -> np.ndarray:
    """Object array of random :class:`Fraction` with numerators in ``[-scale*den, scale*den]``."""
    flat = [
        Fraction(rng.randint(-scale * den, scale * den), rng.randint(1, den))
        for _ in range(int(np.prod(shape)))
    ]
    return np.array(flat, dtype=object).reshape(shape)


class PolyTokens:
    r"""A polynomial ring whose generators are the entries of the tokens (and optionally of ``P, Q``).

    ``Z`` is the ``(n+1, d+1)`` token matrix with symbolic entries; the query row is ``(x_t, 0)``.
    """

    def __init__(self, n: int, d: int, H: int = 0, layers_symbolic: int = 0) -> None:
        data = [f"x{j}_{k}" for j in range(n) for k in range(d)] + [f"y{j}" for j in range(n)]
        query = [f"xt_{k}" for k in range(d)]
        D = d + 1
        params = [
            f"{m}{l}{k}_{i}{j}"
            for l in range(layers_symbolic)
            for m in "PQ"
            for k in range(H)
            for i in range(D)
            for j in range(D)
        ]
        self.R, *gens = sp.ring(",".join(data + query + params), QQ)
        g = dict(zip(data + query + params, gens, strict=True))
        self.n, self.d, self.H = n, d, H
        self.query_gens = [g[q] for q in query]
        rows = [[g[f"x{j}_{k}"] for k in range(d)] + [g[f"y{j}"]] for j in range(n)]
        rows.append(self.query_gens + [self.R.zero])
        self.Z = np.array(rows, dtype=object)
        self.params = [
            (
                [
                    np.array(
                        [[g[f"P{l}{k}_{i}{j}"] for j in range(D)] for i in range(D)], dtype=object
                    )
                    for k in range(H)
                ],
                [
                    np.array(
                        [[g[f"Q{l}{k}_{i}{j}"] for j in range(D)] for i in range(D)], dtype=object
                    )
                    for k in range(H)
                ],
            )
            for l in range(layers_symbolic)
        ]

    def const(self, arr: np.ndarray) -> np.ndarray:
        """Rational constants as ring elements."""
        f = np.vectorize(
            lambda v: self.R(QQ(Fraction(v).numerator, Fraction(v).denominator)), otypes=[object]
        )
        return f(arr)

    def eye(self, k: int) -> np.ndarray:
        return np.array(
            [[self.R.one if i == j else self.R.zero for j in range(k)] for i in range(k)],
            dtype=object,
        )

    def zeros(self, *shape: int) -> np.ndarray:
        return np.full(shape, self.R.zero, dtype=object)

    def depends_on_query(self, arr: Any) -> bool:
        """True iff some entry involves a query generator."""
        idx = [self.R.gens.index(q) for q in self.query_gens]
        for e in np.ravel(np.asarray(arr, dtype=object)):
            if any(mon[i] for mon in e.monoms() for i in idx):
                return True
        return False


def state_matrix(M: Any, u: Any, a: Any, w: Any) -> np.ndarray:
    r"""``T = [[M, u], [−wᵀ, a]]`` as an object array: a token in Theorem 4.1 form is ``T (x, y)``."""
    top = np.concatenate([M, np.reshape(u, (-1, 1))], axis=1)
    bottom = np.concatenate([-np.reshape(w, (1, -1)), np.reshape(a, (1, 1))], axis=1)
    return np.concatenate([top, bottom], axis=0)
