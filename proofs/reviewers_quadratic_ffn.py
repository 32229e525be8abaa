r"""Reviewers' question: one quadratic feed-forward layer breaks the Theorem 4.1 token form (docs/model.md).

Model: attention layer → tokenwise FFN → attention layer, ``d = 2``, ``n = 3``, exact rational ``P, Q``.
Two FFNs: the feature ``y ↦ y + x(1)²`` and a general quadratic MLP ``e ↦ e + W_2 (W_1 e)^{∘2}``; as a
control, the linear FFN ``e ↦ e + F e`` (which keeps the form: ``T ↦ (I + F) T``).

Routes:
1. *symbolic block*: after the feature ``y += β (kᵀ x)²`` the query target's second difference along ``h``
   is ``2β (kᵀ M h)²`` (:func:`lintf_theory.derive_ffn_break`); any linear form has zero.
2. *polynomial ring*: context rationals, ``x_t`` symbolic: ``ŷ`` is a polynomial of degree 2 in ``x_t``.
3. *explicit forward pass* (Fractions): ``ŷ(x_t + h) - 2ŷ(x_t) + ŷ(x_t - h)`` is nonzero and equals route 2's
   quadratic part; and after the FFN no single ``T`` reproduces the context tokens and two queries.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import sympy as sp
from sympy.polys.domains import QQ

from lintf_theory import (
    VARIANT_SYMBOLS,
    derive_ffn_break,
    layer_forward,
    quadratic_ffn,
    shared_tuple,
    square_feature,
)
from lintf_theory.symbols import M, d
from proofs._check import Report, claim
from proofs._exact import rational_array

N, D = 3, 2


def _model(ffn, rng: random.Random):
    """``(Z ↦ ffn(layer(Z)), Z ↦ layer(ffn(layer(Z))))`` with fixed rational parameters; any exact entries."""

    P = [[rational_array(rng, (D + 1, D + 1), scale=1, den=2)] for _ in range(2)]
    Q = [[rational_array(rng, (D + 1, D + 1), scale=1, den=2)] for _ in range(2)]
    first = lambda Z: ffn(layer_forward(P[0], Q[0], Z, N))  # noqa: E731
    return first, lambda Z: layer_forward(P[1], Q[1], first(Z), N)


def _tokens(ctx: np.ndarray, xts: list) -> np.ndarray:
    return np.concatenate([ctx, np.array([[*xt, 0 * xt[0]] for xt in xts], dtype=object)])


@claim(
    "One quadratic feed-forward layer breaks the token form: y_hat is quadratic in x_t and no shared "
    "(M, u, a, w) reproduces the tokens; a linear FFN keeps it",
    ref="docs/model.md (reviewers)",
    routes=("symbolic block", "polynomial ring", "explicit exact forward pass"),
)
def check(report: Report) -> None:
    k_sym = VARIANT_SYMBOLS.k_sym
    f = derive_ffn_break()
    e1 = sp.ImmutableMatrix(
        [1] + [0] * (D - 1)
    )  # k = e_1: the feature y += beta x(1)^2 at layer 0 (M = I)
    inst = f.second_difference.subs(d, D)
    at_identity = sp.Matrix(
        inst.xreplace({M.subs(d, D): sp.Identity(D), k_sym.subs(d, D): e1}).as_explicit()
    )
    report.require(
        at_identity[0] != 0,
        f"block level: query target after y += beta (k^T x)^2 is {f.query_y}; second difference along h "
        f"= {f.second_difference} (d=2, M=I, k=e_1: {sp.factor(at_identity[0])}), while every linear form has 0",
    )
    rng = random.Random(3)
    ctx = rational_array(rng, (N, D + 1), scale=2, den=3)
    W1, W2 = (
        rational_array(rng, (2, D + 1), scale=1, den=2),
        rational_array(rng, (D + 1, 2), scale=1, den=2),
    )
    F = rational_array(rng, (D + 1, D + 1), scale=1, den=2)
    ffns = {
        "y += x(1)^2": lambda Z: quadratic_ffn(Z, *square_feature(D, 0, 1)),
        "quadratic MLP": lambda Z: quadratic_ffn(Z, W1, W2),
        "linear FFN (control)": lambda Z: Z + Z @ F.T,
    }
    R, *xt = sp.ring(",".join(f"xt_{k}" for k in range(D)), QQ)
    to_ring = np.vectorize(lambda v: R(QQ(v.numerator, v.denominator)), otypes=[object])
    xt0, h = [Fraction(1, 2), Fraction(-1, 3)], [Fraction(1), Fraction(2, 3)]
    for name, ffn in ffns.items():
        first, model = _model(ffn, random.Random(17))
        y_poly = -model(_tokens(to_ring(ctx), [np.array(xt, dtype=object)]))[N, -1]
        degree = max(sum(m) for m in y_poly.monoms())
        quad_at_h = sum(
            Fraction(int(cf.numerator), int(cf.denominator)) * h[0] ** m[0] * h[1] ** m[1]
            for m, cf in y_poly.terms()
            if sum(m) == 2
        )
        y_at = lambda v: -model(_tokens(ctx, [np.array(v, dtype=object)]))[N, -1]  # noqa: E731
        plus, minus = [p + q for p, q in zip(xt0, h)], [p - q for p, q in zip(xt0, h)]
        second = y_at(plus) - 2 * y_at(xt0) + y_at(minus)
        report.require(
            second == 2 * quad_at_h,
            f"{name}: exact forward pass, second difference of y_hat along h = (1, 2/3) at x_t = (1/2, -1/3): "
            f"{second} = 2 x degree-2 part of the ring polynomial at h; degree of y_hat in x_t: {degree}",
        )
        queries = [
            np.array(v, dtype=object)
            for v in ([Fraction(1), Fraction(2)], [Fraction(-2), Fraction(1, 3)])
        ]
        Z0 = _tokens(ctx, queries)
        T = shared_tuple(Z0, first(Z0))
        linear = name.startswith("linear")
        report.require(
            (second == 0 and degree == 1 and T is not None)
            if linear
            else (second != 0 and degree == 2 and T is None),
            f"{name}: y_hat linear in x_t: {second == 0}; after attention + FFN a shared T with Z' = Z T^T "
            f"over {N} context tokens + 2 queries exists: {T is not None}",
        )


if __name__ == "__main__":
    raise SystemExit(check.main())
