r"""Section 5.3: the ``ω_xy → ω_yx`` two-layer model as a noise-adaptive GD step, derived.

Layer 1 has only ``ω_xy``, layer 2 only ``ω_yx`` (both from the diagonal rule, :mod:`._diagonal`).
Layer 1 maps ``x_i^1 = x_i + ω_xy α y_i``, ``y_i^1 = y_i`` and leaves the query ``(x_t, 0)``
unchanged; layer 2 writes ``y_t^2 = ω_yx ⟨α^1, x_t⟩`` with ``α^1 = Σ_i y_i^1 x_i^1``.  Exactly,

.. math::

    \hat y = -y_t^2 = -\omega_{yx}\,(1 + \omega_{xy}\lambda)\,\langle\alpha, x_t\rangle .

With ``y_i = ⟨w*, x_i⟩ + r_i`` (``Σ_i r_i x_i = 0``, ``α = Σ w*``) the layer-1 update of ``x_i`` splits
into a *multiplicative* part ``ω_xy α w*ᵀ x_i`` (linear in ``x_i``) and an additive part
``ω_xy r_i α = ω_xy r_i Σ w*``.  Dropping the multiplicative part gives

.. math::

    \hat y_{\rm approx} = -\omega_{yx}(1 + \omega_{xy}\rho)\,\langle\alpha, x_t\rangle,

one GD step from ``w = 0`` (whose result is ``η α``) with step ``η = −ω_yx (1 + ω_xy ρ)``.  The
neglected part, propagated through layer 2, is

.. math::

    \hat y - \hat y_{\rm approx} = -\omega_{yx}\,\omega_{xy}\,\langle\alpha, w^*\rangle\,\langle\alpha, x_t\rangle ,
    \qquad \langle\alpha, w^*\rangle = w^{*\top}\Sigma w^* ,

derived from the dropped term itself (not as a difference), and ``exact = approx + neglected``
holds identically (:func:`derive_step_size`).  Symbols: :mod:`.symbols`; ``x_t`` is the query.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import sympy as sp

from ._bridge import Exported, export
from ._diagonal import derive_diagonal
from ._gdpp import only
from .matexpr import (
    coefficient,
    is_zero,
    replace_adjacent,
    scalar_coefficient,
    scalarize,
    simplify_matexpr,
    split_terms,
)
from .symbols import Sigma, alpha, d, lam, omega_xy, omega_yx, rho, w_star, x, y

x_t = sp.MatrixSymbol("x_t", d, 1)
r_tok = sp.MatrixSymbol("r", 1, 1)  # the residual r_i of one token


class StepSizeSymbols(NamedTuple):
    r"""Symbols of the step-size derivation: the query ``x_t`` and the residual ``r`` of one token (``1×1``)."""

    x_t: sp.MatrixSymbol
    r_tok: sp.MatrixSymbol


STEP_SIZE_SYMBOLS = StepSizeSymbols(x_t, r_tok)

#: Sums over context tokens: definitions of Σ, α, λ, and the OLS facts Σ r_i x_i = 0, Σ r_i² = ρ.
RAW_SUMS = {(x, x.T): Sigma, (x, y.T): alpha, (y, x.T): alpha.T, (y, y.T): lam}
OLS_SUMS = {
    (x, x.T): Sigma,
    (x, r_tok.T): sp.ZeroMatrix(d, 1),
    (r_tok, x.T): sp.ZeroMatrix(1, d),
    (r_tok, r_tok.T): rho * sp.Identity(1),
}


@dataclass(frozen=True)
class StepSize:
    r"""Derived Section 5.3 quantities (predictions are ``1×1`` expressions in ``x_t``)."""

    x1: sp.MatrixExpr  # layer-1 context token
    query_x1: sp.MatrixExpr  # layer-1 query x-part
    exact_lam: sp.MatrixExpr  # ŷ in (α, λ, x_t)
    exact: sp.MatrixExpr  # ŷ in (α, Σ, w*, ρ, x_t), after y = ⟨w*, x⟩ + r
    multiplicative: sp.MatrixExpr  # the dropped part of x_i^1 − x_i
    approx: sp.MatrixExpr  # ŷ with the multiplicative part dropped
    neglected: sp.MatrixExpr  # the dropped part propagated to ŷ
    step: sp.Expr  # η with ŷ_approx = η ⟨α, x_t⟩


def _alpha_next(x_next: sp.MatrixExpr, y_next: sp.MatrixExpr, ols: bool) -> sp.MatrixExpr:
    r"""``Σ_i x_i' (y_i')ᵀ`` summed over tokens; with ``ols`` first ``y ↦ w*ᵀ x + r``, then ``Σ w* ↦ α``."""
    outer = simplify_matexpr(x_next * y_next.T)
    if not ols:
        return replace_adjacent(outer, RAW_SUMS)
    outer = simplify_matexpr(outer.xreplace({y: w_star.T * x + r_tok}))
    return replace_adjacent(replace_adjacent(outer, OLS_SUMS), {(Sigma, w_star): alpha})


def _layer2_prediction(alpha1: sp.MatrixExpr, query_x1: sp.MatrixExpr) -> sp.MatrixExpr:
    r"""``ŷ = −y_t^2`` for a query ``(x_t^1, 0)`` under an ``ω_yx``-only layer with context ``α^1``."""
    rule = derive_diagonal(1)
    y2 = rule.y_next.xreplace(only(omega_yx)).xreplace(
        {alpha: alpha1, x: query_x1, y: sp.ZeroMatrix(1, 1)}
    )
    return simplify_matexpr(-y2)


@cache
def derive_step_size() -> StepSize:
    r"""Derive the exact and approximate Section 5.3 predictions and the neglected term."""
    rule = derive_diagonal(1)
    x1 = simplify_matexpr(rule.x_next.xreplace(only(omega_xy)))
    y1 = simplify_matexpr(rule.y_next.xreplace(only(omega_xy)))
    query_x1 = simplify_matexpr(x1.xreplace({x: x_t, y: sp.ZeroMatrix(1, 1)}))
    exact_lam = scalarize(_layer2_prediction(_alpha_next(x1, y1, ols=False), query_x1), {})
    exact = _layer2_prediction(_alpha_next(x1, y1, ols=True), query_x1)
    # Split the layer-1 update after y ↦ w*ᵀ x + r (with α = Σ w*) into the x-linear and the r part.
    update = simplify_matexpr((x1 - x).xreplace({y: w_star.T * x + r_tok}))
    multiplicative, additive = split_terms(update, x)
    approx = _layer2_prediction(_alpha_next(x + additive, y1, ols=True), query_x1)
    neglected = _layer2_prediction(_alpha_next(multiplicative, y1, ols=True), query_x1)
    if not is_zero(exact - approx - neglected):
        raise AssertionError("Section 5.3: exact != approx + neglected")
    w_eff = simplify_matexpr(coefficient(approx, x_t, ()).T)  # ŷ_approx = w_effᵀ x_t
    step = scalar_coefficient(scalarize(w_eff, {}), alpha)
    return StepSize(x1, query_x1, exact_lam, exact, multiplicative, approx, neglected, step)


STEP_ARGS = (alpha, Sigma, w_star, rho, x_t, omega_xy, omega_yx)


@cache
def step_size_rule() -> Exported:
    r"""Bridge export ``(α, Σ, w*, ρ, x_t, ω_xy, ω_yx) ↦ (ŷ, ŷ_approx, neglected, η)``; vectors ``(d,1)``."""
    s = derive_step_size()
    return export("step_size_5_3", STEP_ARGS, (s.exact, s.approx, s.neglected, s.step))


@cache
def exact_prediction_rule() -> Exported:
    r"""Bridge export ``(α, λ, x_t, ω_xy, ω_yx) ↦ ŷ`` of the two-layer model (no OLS substitution)."""
    return export(
        "prediction_5_3", (alpha, lam, x_t, omega_xy, omega_yx), (derive_step_size().exact_lam,)
    )
