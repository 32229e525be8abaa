r"""Theorem 5.2: a two-layer DIAG model (``ω_yx`` then ``ω_yy``) matches ridge at two noise levels.

Paper: Section 5.2, Theorem 5.2 (docs/model.md).  Project sign convention: ``ŷ = -y_{n+1}^L`` and the
DIAG layer ``y^{l+1} = y^l + ω_yx ⟨α^l, x^l⟩ + ω_yy λ^l y^l``.

Derived here from the Lemma 4.3 recursion (layer 1: ``c = ω_yx α``; layer 2: ``δ = ω_yy λ^1``):

.. math::  w^2 = -ω_{yx} (1 + ω_{yy} λ^1) α,
           \qquad λ^1 = λ + 2 ω_{yx} αᵀα + ω_{yx}^2 αᵀ Σ α .

With ``x_i ~ N(0, I/n)``: ``Σ → I``, ``α = O(1)``, ``λ^1 = n σ² + O(√n)``.  Writing
``ω_yy = v/n``, ``w^2 → -ω_yx (1 + v σ²) α`` while ridge ``(Σ + σ² I)^{-1} α → α/(1 + σ²)``, so
matching at ``σ_1, σ_2`` is the linear system ``-ω_yx - σ_k² (n ω_yx ω_yy) = 1/(1 + σ_k²)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import sympy as sp

from ._bridge import export
from ._closed_forms import _scalar_coefficient
from ._recursion import derive_recursion
from ._render import Statement
from .matexpr import simplify_matexpr
from .symbols import A, M, a, b, c, delta, u, w

omega_yx, omega_yy, lam, lam1, Sig, al = sp.symbols(
    "omega_yx omega_yy lam lambda1 Sigma alpha", real=True
)
n, v, R = sp.symbols("n v R", positive=True)
s1, s2, s3, sig2 = sp.symbols("sigma1_sq sigma2_sq sigma3_sq sigma_sq", positive=True)
P_nyy = sp.Symbol("P")  # n ω_yx ω_yy


class Theorem52Symbols(NamedTuple):
    r"""Symbols of Theorem 5.2: the two layer parameters, the noise variances ``σ_1², σ_2², σ²`` and ``P = n ω_yx ω_yy``."""

    omega_yx: sp.Symbol
    omega_yy: sp.Symbol
    n: sp.Symbol
    s1: sp.Symbol
    s2: sp.Symbol
    sig2: sp.Symbol
    P_nyy: sp.Symbol


THEOREM_5_2_SYMBOLS = Theorem52Symbols(omega_yx, omega_yy, n, s1, s2, sig2, P_nyy)


@dataclass(frozen=True)
class Theorem52:
    w2_coefficient: sp.Expr  # w² = (this) · α, in ω_yx, ω_yy, λ¹
    lambda1: sp.Expr  # λ¹ on a d = 1 instance (λ, α, Σ scalars)
    limit_coefficient: sp.Expr  # lim_{n→∞} of w²/α with ω_yy = v/n, λ¹ = nσ² + R√n
    ridge_limit: sp.Expr  # (Σ + σ²)^{-1} at Σ = 1
    solution: dict  # ω_yx, n ω_yx ω_yy for two levels
    omega_yy: sp.Expr  # ω_yy = P / (n ω_yx)
    three_level_det: sp.Expr  # determinant of the augmented 3×3 system (≠ 0 ⇒ inconsistent)


@cache
def derive_theorem_5_2() -> Theorem52:
    Z = lambda m: sp.ZeroMatrix(*m.shape)  # noqa: E731
    alpha_m = sp.MatrixSymbol("alpha", w.shape[0], 1)
    r = derive_recursion()
    base = {M: sp.Identity(M.shape[0]), u: Z(u), a: sp.Identity(1), A: Z(A), b: Z(b)}
    w1 = simplify_matexpr(
        r.w_next.xreplace({**base, w: Z(w), delta: Z(delta), c: omega_yx * alpha_m})
    )
    a1 = simplify_matexpr(
        r.a_next.xreplace({**base, w: Z(w), delta: Z(delta), c: omega_yx * alpha_m})
    )
    if not (a1 == sp.Identity(1) or sp.Matrix(a1.subs(w.shape[0], 1).doit()) == sp.eye(1)):
        raise AssertionError(f"layer 1 should keep a = 1, got {a1}")
    w2 = simplify_matexpr(
        r.w_next.xreplace({**base, w: w1, c: Z(c), delta: omega_yy * lam1 * sp.Identity(1)})
    )
    coef = sp.factor(_scalar_coefficient(w2, alpha_m))
    # λ¹ = Σ_i (y_i^1)², y_i^1 = a¹ y_i - ⟨w¹, x_i⟩, on a d = 1 instance: map y², y x, x² to λ, α, Σ.
    yi, xi = sp.symbols("y_i x_i")
    w1_scalar = _scalar_coefficient(w1, alpha_m) * al
    poly = sp.Poly(sp.expand((yi - w1_scalar * xi) ** 2), yi, xi)
    stat = {(2, 0): lam, (1, 1): al, (0, 2): Sig}
    lambda1 = sp.expand(
        sum(coef_ * stat[m] for m, coef_ in zip(poly.monoms(), poly.coeffs(), strict=True))
    )
    lim = sp.limit(coef.subs({omega_yy: v / n, lam1: n * sig2 + R * sp.sqrt(n)}), n, sp.oo)
    ridge = 1 / (Sig + sig2)
    ridge_lim = ridge.subs(Sig, 1)
    eqs = [sp.Eq(lim.subs(sig2, s), ridge_lim.subs(sig2, s)) for s in (s1, s2)]
    sol = sp.solve([e.subs(v, P_nyy / omega_yx) for e in eqs], [omega_yx, P_nyy], dict=True)[0]
    sol = {k: sp.factor(val) for k, val in sol.items()}
    # Three levels: unknowns (ω_yx, P) appear linearly; augmented matrix [coeffs | rhs].
    rows = []
    for s in (s1, s2, s3):
        e = sp.expand((lim.subs(v, P_nyy / omega_yx) - ridge_lim).subs(sig2, s))
        rows.append([e.coeff(omega_yx), e.coeff(P_nyy), e.subs({omega_yx: 0, P_nyy: 0})])
    det = sp.factor(sp.Matrix(rows).det())
    return Theorem52(
        coef,
        lambda1,
        sp.factor(lim),
        ridge_lim,
        sol,
        sp.factor(sol[P_nyy] / (n * sol[omega_yx])),
        det,
    )


@cache
def theorem_5_2_rule():
    """Bridge export ``(σ_1², σ_2², n) ↦ (ω_yx, ω_yy)``."""
    t = derive_theorem_5_2()
    return export("theorem_5_2_parameters", (s1, s2, n), (t.solution[omega_yx], t.omega_yy))


def theorem_5_2_parameters(sigma1: float, sigma2: float, n_val: int) -> tuple[float, float]:
    r"""``(ω_yx, ω_yy)`` of Theorem 5.2 for noise levels ``σ_1 ≠ σ_2`` and context length ``n``."""
    if not (sigma1 >= 0 and sigma2 >= 0 and sigma1 != sigma2):
        raise ValueError(f"sigma1, sigma2 must be >= 0 and distinct, got {sigma1}, {sigma2}")
    if int(n_val) < 1:
        raise ValueError(f"n must be >= 1, got {n_val}")
    oyx, oyy = theorem_5_2_rule().numpy(sigma1**2, sigma2**2, int(n_val))
    return float(oyx), float(oyy)


def rescaling_statements() -> list:

    t = derive_theorem_5_2()
    ref = "Theorem 5.2 (two noise levels)"
    return [
        Statement(
            ref,
            "Implicit weight after two layers",
            "w^2",
            sp.Mul(t.w2_coefficient, sp.Symbol("alpha"), evaluate=False),
        ),
        Statement(ref, "Second-layer statistic (d = 1 instance)", "\\lambda^1", t.lambda1),
        Statement(
            ref,
            "Large-n limit of w^2/alpha, omega_yy = v/n",
            "\\lim w^2/\\alpha",
            t.limit_coefficient,
        ),
        Statement(ref, "Solution", "\\omega_{yx}", t.solution[omega_yx]),
        Statement(ref, "Solution", "n\\,\\omega_{yx}\\omega_{yy}", t.solution[P_nyy]),
        Statement(
            ref,
            "Three levels: augmented determinant",
            "\\det",
            t.three_level_det,
            "Non-zero for distinct levels: no solution.",
        ),
    ]
