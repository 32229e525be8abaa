r"""Lemma 4.3: the one-layer update of ``(M, u, a, w)`` in the blocks ``A, b, c, δ`` of ``G``.

Routes:
1. *symbolic*: the recursion derived by :func:`lintf_theory.derive_recursion` (coefficients of
   ``x_i`` and ``y_i`` after applying the layer) equals the statement of docs/model.md, typed
   below only as the claim under test, exactly at block level for symbolic ``d``.
2. *exact forward pass*: on random exact rational parameters and data (several ``d, n, H, L``),
   the bridge's lambdified recursion reproduces every token of the literal forward pass at every
   layer (rational arithmetic, equality not tolerance).
"""

from __future__ import annotations

import random

import numpy as np
import sympy as sp

from lintf_theory import derive_recursion, layer_forward, run_recursion
from lintf_theory.matexpr import is_zero, scalarize
from lintf_theory.symbols import A, M, a, b, c, d, delta, u, w
from proofs._check import Report, claim
from proofs._exact import rational_array, state_matrix

I = sp.Identity(d)
#: docs/model.md, Lemma 4.3, as printed there (the claim under test, never used by the numerics).
PRINTED = {
    "M": (I + A) * M - b * w.T,
    "u": (I + A) * u + b * a,
    "a": (sp.Identity(1) + delta) * a + c.T * u,
    "w": w * (sp.Identity(1) + delta) - M.T * c,
}


def exact_forward_matches(rng: random.Random, d_: int, n: int, H: int, L: int) -> bool:
    """Literal forward pass vs bridge recursion on exact rationals, every layer, every token."""
    P = rational_array(rng, (L, H, d_ + 1, d_ + 1), scale=1, den=3) / 2
    Q = rational_array(rng, (L, H, d_ + 1, d_ + 1), scale=1, den=3) / 2
    X = rational_array(rng, (n, d_), scale=2, den=3)
    y = rational_array(rng, (n,), scale=2, den=3)
    xt = rational_array(rng, (d_,), scale=2, den=3)
    states = run_recursion(P, Q, X, y, backend="numpy")
    Z0 = np.concatenate(
        [
            np.concatenate([X, y[:, None]], axis=1),
            np.concatenate([xt, np.array([0], dtype=object)])[None, :],
        ],
        axis=0,
    )
    Z = Z0
    for l in range(L):
        Z = layer_forward(list(P[l]), list(Q[l]), Z, n)
        s = states[l + 1]
        if not (Z == Z0 @ state_matrix(s.M, s.u, s.a, s.w).T).all():
            return False
    return True


@claim(
    "Recursion M'=(I+A)M-bw^T, u'=(I+A)u+ab, a'=(1+delta)a+<c,u>, w'=(1+delta)w-M^T c",
    ref="Lemma 4.3",
    routes=("symbolic block derivation vs statement", "exact rational forward pass vs bridge"),
)
def check(report: Report) -> None:
    r = derive_recursion()
    derived = {"M": r.M_next, "u": r.u_next, "a": r.a_next, "w": r.w_next}
    scalars = {
        a: sp.Symbol("a"),
        delta: sp.Symbol("delta"),
    }  # 1x1 blocks commute and equal their transposes
    for k, expr in PRINTED.items():
        diff = scalarize(derived[k] - expr, scalars)
        report.require(
            diff == 0 or is_zero(diff),
            f"{k}^(l+1): derived {derived[k]} equals the statement exactly",
        )
    rng = random.Random(43)
    cases = [(1, 1, 1, 3), (2, 3, 2, 2), (3, 4, 1, 3), (2, 5, 3, 2), (4, 2, 2, 2)]
    for d_, n, H, L in cases:
        report.require(
            exact_forward_matches(rng, d_, n, H, L),
            f"d={d_}, n={n}, H={H}, L={L}: every token at every layer equals T^l e_i (exact rationals)",
        )


if __name__ == "__main__":
    raise SystemExit(check.main())
