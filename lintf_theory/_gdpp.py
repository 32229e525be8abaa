r"""GD++ (docs/model.md) and the ``ω_yy`` rescaling of Section 5.2, derived from the diagonal layer.

**GD++** is the diagonal layer (:mod:`._diagonal`) with ``ω_xy = ω_yy = 0``:

.. math::

    x' = (I + \omega_{xx}\Sigma)\,x, \qquad y' = y + \omega_{yx}\langle\alpha, x\rangle,\qquad
    \Sigma' = \sum_i x_i' x_i'^\top = (I + \omega_{xx}\Sigma)\,\Sigma\,(I + \omega_{xx}\Sigma),

so an eigenpair ``Σ v = μ v`` maps to ``Σ' v = μ (1 + ω_xx μ)² v``.  ``Σ'`` comes from summing
``x' x'ᵀ`` over tokens (``(x, xᵀ) ↦ Σ``); ``Σ'`` is a polynomial in ``Σ`` alone, so the eigenvalue
map is that polynomial at ``Σ = μ I`` applied to ``v``.

**Section 5.2.** A layer with only ``ω_yy ≠ 0`` leaves ``x`` alone and maps
``y' = (1 + ω_yy λ) y``; in the implicit state of Theorem 4.1 it scales ``a`` and ``w`` by the same
factor and keeps ``M, u``.  With ``ω_yy < 0`` a larger ``λ`` (noisier data) is shrunk more.

Symbols: :mod:`.symbols` (``λ`` is a ``1×1`` matrix in the rule, a scalar in the factor).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import sympy as sp

from ._bridge import Exported, export
from ._diagonal import derive_diagonal
from ._recursion import derive_recursion
from .matexpr import (
    coefficient,
    is_zero,
    replace_adjacent,
    scalar_coefficient,
    scalarize,
    simplify_matexpr,
)
from .symbols import (
    OMEGAS,
    A,
    Sigma,
    a,
    a_s,
    b,
    c,
    d,
    delta,
    lam,
    lam_l,
    omega_xx,
    omega_yx,
    omega_yy,
    symmetric,
    x,
    y,
)

mu = sp.Symbol("mu")
v = sp.MatrixSymbol("v", d, 1)


class GdppSymbols(NamedTuple):
    r"""Symbols of the GD++ layer: an eigenpair ``Σ v = μ v`` (``mu``, ``v``)."""

    mu: sp.Symbol
    v: sp.MatrixSymbol


GDPP_SYMBOLS = GdppSymbols(mu, v)


def only(*keep: sp.Symbol) -> dict[sp.Symbol, sp.Expr]:
    """Substitution setting every ω except ``keep`` to zero."""
    return {om: sp.Integer(0) for om in OMEGAS if om not in keep}


@dataclass(frozen=True)
class GdppLayer:
    r"""The derived GD++ layer: token rule, ``x``-map ``T = I + ω_xx Σ``, covariance and eigenvalue maps."""

    x_next: sp.MatrixExpr
    y_next: sp.MatrixExpr
    T: sp.MatrixExpr
    Sigma_next: sp.MatrixExpr
    eigen_map: sp.Expr


@cache
def derive_gdpp() -> GdppLayer:
    r"""GD++ from the diagonal rule with ``ω_xy = ω_yy = 0``."""
    r = derive_diagonal(1)
    z = only(omega_xx, omega_yx)
    x_next, y_next = simplify_matexpr(r.x_next.xreplace(z)), simplify_matexpr(r.y_next.xreplace(z))
    T = coefficient(x_next, x, (y,))
    if not is_zero(coefficient(x_next, y, (x,))):
        raise AssertionError("GD++: x' depends on y")
    Sigma_next = symmetric(replace_adjacent(x_next * x_next.T, {(x, x.T): Sigma}))
    # Eigenvalue map: Σ' is a polynomial in Σ alone, so on an eigenvector (Σ v = μ v) it acts as
    # the same polynomial in μ: substitute Σ ↦ μ I and read off the multiple of v.
    mats = {m for m in Sigma_next.atoms(sp.MatrixSymbol)}
    if mats != {Sigma}:
        raise AssertionError(f"GD++: Σ' involves {mats}, not only Σ")
    at_mu = simplify_matexpr(Sigma_next.xreplace({Sigma: mu * sp.Identity(d)}))
    at_mu = at_mu.xreplace(
        {
            p: p.base.args[0] ** p.exp * sp.Identity(d)
            for p in at_mu.atoms(sp.MatPow)
            if p.base == mu * sp.Identity(d)
        }
    )
    expr = simplify_matexpr(at_mu * v)
    return GdppLayer(x_next, y_next, T, Sigma_next, sp.factor(scalar_coefficient(expr, v)))


@cache
def gdpp_covariance_rule() -> Exported:
    r"""Bridge export ``(Σ, ω_xx) ↦ Σ'`` (``Σ`` is ``(d, d)``)."""
    return export("gdpp_covariance", (Sigma, omega_xx), (derive_gdpp().Sigma_next,))


@cache
def gdpp_eigen_rule() -> Exported:
    r"""Bridge export ``(μ, ω_xx) ↦ μ (1 + ω_xx μ)²`` (elementwise on arrays of eigenvalues)."""
    return export("gdpp_eigen_map", (mu, omega_xx), (derive_gdpp().eigen_map,))


@dataclass(frozen=True)
class Rescaling:
    r"""Section 5.2: the ``ω_yy``-only layer on a token and on the implicit state."""

    x_next: sp.MatrixExpr
    y_next: sp.MatrixExpr
    factor: sp.Expr  # y' = factor · y, with λ a scalar
    M_next: sp.MatrixExpr
    u_next: sp.MatrixExpr
    a_next: sp.Expr
    w_next: sp.MatrixExpr


@cache
def derive_rescaling() -> Rescaling:
    r"""A layer with only ``ω_yy``: the token rule and the implicit-state update (Lemma 4.3)."""
    r = derive_diagonal(1)
    z = only(omega_yy)
    x_next, y_next = simplify_matexpr(r.x_next.xreplace(z)), simplify_matexpr(r.y_next.xreplace(z))
    if not is_zero(coefficient(y_next, x, (y,))):
        raise AssertionError("Section 5.2: y' depends on x")
    factor = scalar_coefficient(
        scalarize(coefficient(y_next, y, (x,)), {lam: lam_l}), sp.Identity(1)
    )
    rec = derive_recursion()
    rep = {blk: expr.xreplace(z) for blk, expr in zip((A, b, c, delta), r.G_blocks, strict=True)}
    sc = {a: a_s, lam: lam_l}
    M_next, u_next = (simplify_matexpr(e.xreplace(rep)) for e in (rec.M_next, rec.u_next))
    a_next = scalarize(rec.a_next.xreplace(rep), sc)
    w_next = scalarize(rec.w_next.xreplace(rep), sc)
    return Rescaling(x_next, y_next, factor, M_next, u_next, a_next, w_next)


@cache
def rescaling_rule() -> Exported:
    r"""Bridge export ``(λ, ω_yy, y) ↦ y'`` of the ``ω_yy``-only layer (scalars)."""
    fac = derive_rescaling().factor.xreplace({lam_l: sp.Symbol("lam")})
    yy = sp.Symbol("y")
    return export("rescaling_5_2", (sp.Symbol("lam"), omega_yy, yy), (fac * yy,))
