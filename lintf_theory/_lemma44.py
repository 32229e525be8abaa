r"""Lemma 4.4 / A.1: the diagonal recursion of ``u`` and ``w`` as preconditioned GD, derived.

Write the context as a data matrix ``X`` (``n×d``, rows ``x_iᵀ``) with targets
``y = X w* + r`` and OLS residuals orthogonal to the data, ``Xᵀ r = 0``; ``ρ = rᵀ r``.  The token
form of Theorem 4.1 applied column-wise (``x ↦ Xᵀ``, ``y ↦ yᵀ``) gives the layer-``l`` context, and

.. math::

    \alpha^l = \sum_i y_i^l x_i^l = (M + u\,w^{*\top})\, g + a\rho\, u,
    \qquad g = \Sigma (a w^* - w)

(``XᵀX ↦ Σ``, ``Xᵀr ↦ 0``, ``rᵀr ↦ ρ`` by :func:`~lintf_theory.matexpr.replace_adjacent`, then
``w ↦ a w* − Σ^{-1} g`` inside ``α^l``).  Inserting ``A = ω_xx Σ^l, b = ω_xy α^l, c = ω_yx α^l,
δ = ω_yy λ^l`` (:mod:`._diagonal`) into Lemma 4.3 (:mod:`._recursion`) gives

.. math::

    u^{l+1} = (I - \Lambda) u + \Gamma g, \qquad w^{l+1} = (1 + s) w - \Pi g - \Phi u,

with ``Γ, Π`` the coefficients of ``g`` and ``Λ, s, Φ`` the coefficients of ``u, w`` in the
``g``-free rest.  **Grouping.** The bilinear term ``u (w*ᵀ g)`` could be read as part of the
``u``-coefficient (``Λ`` depending on ``g``) or of the ``g``-coefficient; as the paper does, it is put
in ``Γ`` / ``Π`` (every term containing ``g`` goes to ``Γ`` / ``Π``).

Result (derived, see :func:`derive_lemma44`): ``Λ = −ω_xx Σ^l − ω_xy a² ρ I``,
``Γ = a ω_xy (M + u w*ᵀ)``, ``s = ω_yy λ^l``, ``Π = ω_yx Mᵀ (M + u w*ᵀ)``, ``Φ = a ρ ω_yx Mᵀ``.
The paper prints ``Γ`` and ``Π`` with ``a u w*ᵀ`` instead of ``u w*ᵀ`` (``proofs/lemma_4_4.py``).

Symbols: ``M, u, w`` of :mod:`.symbols` (layer ``l``), ``a`` as the scalar ``a_s``, the rest in
:mod:`.symbols`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from ._bridge import Exported, export
from ._diagonal import derive_diagonal
from ._recursion import derive_recursion, token_form
from .matexpr import (
    coefficient,
    is_zero,
    replace_adjacent,
    scalar_coefficient,
    scalarize,
    simplify_matexpr,
    split_terms,
)
from .symbols import (
    OMEGAS,
    A,
    M,
    Sigma,
    Sigma_l,
    a,
    a_s,
    alpha,
    b,
    c,
    d,
    delta,
    lam,
    lam_l,
    rho,
    symmetric,
    u,
    w,
    w_star,
)

n = sp.Symbol("n", integer=True, positive=True)
X_data = sp.MatrixSymbol("X", n, d)
y_data = sp.MatrixSymbol("Y", n, 1)
r_data = sp.MatrixSymbol("r", n, 1)
g = sp.MatrixSymbol("g", d, 1)

#: Summing over tokens and using the normal equations ``Xᵀ r = 0`` (docs/model.md, OLS).
TOKEN_SUMS = {
    (X_data.T, X_data): Sigma,
    (X_data.T, r_data): sp.ZeroMatrix(d, 1),
    (r_data.T, X_data): sp.ZeroMatrix(1, d),
    (r_data.T, r_data): rho,
}


@cache
def derive_alpha_l() -> sp.MatrixExpr:
    r"""``α^l = Σ_i y_i^l x_i^l`` in terms of ``(M, u, a, w, w*, ρ, Σ)``."""
    Xl_T, yl_T = token_form(X_data.T, y_data.T)  # (X^l)ᵀ: d×n, (y^l)ᵀ: 1×n
    alpha_l = scalarize(Xl_T * yl_T.T, {a: a_s})
    alpha_l = simplify_matexpr(alpha_l.xreplace({y_data: X_data * w_star + r_data}))
    return symmetric(replace_adjacent(alpha_l, TOKEN_SUMS))


def gradient_substitution() -> dict[sp.Basic, sp.MatrixExpr]:
    r"""``w ↦ a w* − Σ^{-1} g``, i.e. ``g = Σ (a w* − w)``."""
    return {w: a_s * w_star - Sigma.I * g}


@cache
def alpha_l_in_g() -> sp.MatrixExpr:
    r"""``α^l`` with ``g = Σ(a w* − w)`` introduced: ``(M + u w*ᵀ) g + a ρ u``."""
    return simplify_matexpr(derive_alpha_l().xreplace(gradient_substitution()))


@dataclass(frozen=True)
class Lemma44:
    r"""The derived matrices of Lemma 4.4 and the updates they come from."""

    u_next: sp.MatrixExpr  # in terms of g (Σ(a w* − w))
    w_next: sp.MatrixExpr
    Lambda: sp.MatrixExpr
    Gamma: sp.MatrixExpr
    s: sp.Expr
    Pi: sp.MatrixExpr
    Phi: sp.MatrixExpr


@cache
def derive_lemma44() -> Lemma44:
    r"""Insert the diagonal blocks of ``G^l`` (with ``α^l`` in terms of ``g``) into Lemma 4.3 and group."""
    rec = derive_recursion()
    blocks = derive_diagonal(1).G_blocks  # (ω_xx Σ, ω_xy α, ω_yx α, ω_yy λ) at layer l
    at_l = {Sigma: Sigma_l, alpha: alpha_l_in_g()}
    rep = {
        A: blocks[0].xreplace(at_l),
        b: blocks[1].xreplace(at_l),
        c: blocks[2].xreplace(at_l),
        delta: blocks[3],
    }
    u_next = symmetric(scalarize(rec.u_next.xreplace(rep), {a: a_s, lam: lam_l}))
    w_next = symmetric(scalarize(rec.w_next.xreplace(rep), {a: a_s, lam: lam_l}))
    # u^{l+1} = (I − Λ) u + Γ g: every term with g goes to Γ (the paper's grouping of u (w*ᵀ g)).
    u_g, u_rest = split_terms(u_next, g)
    Gamma = simplify_matexpr(u_g.xreplace({g: sp.Identity(d)}))
    Lambda = simplify_matexpr(sp.Identity(d) - coefficient(u_rest, u, ()))
    # w^{l+1} = (1 + s) w − Π g − Φ u.
    w_g, w_rest = split_terms(w_next, g)
    Pi = simplify_matexpr(-w_g.xreplace({g: sp.Identity(d)}))
    s = scalar_coefficient(coefficient(w_rest, w, (u,)), sp.Identity(d)) - 1
    Phi = simplify_matexpr(-coefficient(w_rest, u, (w,)))
    # The grouping is exhaustive: reassembling gives the updates back.
    if not (
        is_zero(u_next - ((sp.Identity(d) - Lambda) * u + Gamma * g))
        and is_zero(w_next - ((1 + s) * w - Pi * g - Phi * u))
    ):
        raise AssertionError("Lemma 4.4 grouping does not reassemble the updates")
    return Lemma44(u_next, w_next, Lambda, Gamma, sp.expand(s), Pi, Phi)


def lemma44_residual(u_next: sp.MatrixExpr, w_next: sp.MatrixExpr) -> dict[str, bool]:
    r"""Whether a candidate pair of updates (in ``g``) equals the derived one, term by term."""
    r = derive_lemma44()
    return {"u": is_zero(u_next - r.u_next), "w": is_zero(w_next - r.w_next)}


@cache
def alpha_l_rule() -> Exported:
    r"""Bridge export ``(M, u, a, w, w*, ρ, Σ) ↦ α^l`` (``M (d,d)``, vectors ``(d,1)``, ``a, ρ`` scalars)."""
    return export("alpha_l", (M, u, a_s, w, w_star, rho, Sigma), (derive_alpha_l(),))


LEMMA44_ARGS = (M, u, a_s, w_star, rho, Sigma_l, lam_l, *OMEGAS)


@cache
def lemma44_rule() -> Exported:
    r"""Bridge export ``(M, u, a, w*, ρ, Σ^l, λ^l, ω_xx, ω_xy, ω_yx, ω_yy) ↦ (Λu, Γ, s, Π, Φ)``.

    ``Λ`` is exported through its action ``Λ u`` (it contains ``I_d``, which lambdify cannot size
    for symbolic ``d``).  Shapes: ``M (d,d)``, ``u, w* (d,1)``, scalars plain.
    """
    r = derive_lemma44()
    return export(
        "lemma_4_4", LEMMA44_ARGS, (simplify_matexpr(r.Lambda * u), r.Gamma, r.s, r.Pi, r.Phi)
    )
