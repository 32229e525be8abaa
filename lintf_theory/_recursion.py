r"""Lemma 4.3 and the inductive step of Theorem 4.1, derived from the layer definition.

Start from a context token in the Theorem 4.1 form at layer ``l``,

.. math::  x_i^l = M^l x_i + y_i u^l, \qquad y_i^l = a^l y_i - \langle w^l, x_i \rangle,

apply the layer ``e ↦ e + G e`` (:func:`~lintf_theory.layer.apply_layer_block`) and collect the
coefficients of ``x_i`` and ``y_i``.  The result is the update of ``(M, u, a, w)`` in terms of the
blocks ``A, b, c, δ`` of ``G^l = Σ_k P_k^l E^l Q_k^l`` (docs/model.md, Lemma 4.3).  Applying the same
layer to the query ``(M^l x_t, −⟨w^l, x_t⟩)`` shows it keeps the form ``(M^{l+1} x_t, −⟨w^{l+1}, x_t⟩)``
with the *same* tuple: the inductive step of Theorem 4.1 for every ``L``.  The base case is
``M^0 = I, u^0 = 0, a^0 = 1, w^0 = 0``.

Also derived: the Gram-matrix map ``E^{l+1} = Σ_j e_j^{l+1} (e_j^{l+1})ᵀ`` of the context, which
the fast forward pass uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from .layer import apply_layer_block
from .matexpr import coefficient, is_zero, replace_adjacent, simplify_matexpr
from .symbols import E_sym, G_sym, M, a, d, u, w, x, y


@dataclass(frozen=True)
class Recursion:
    r"""The derived one-layer map of the implicit state (Lemma 4.3).

    ``M_next, u_next, a_next, w_next`` are block-level expressions in ``M, u, a, w`` and the
    blocks ``A, b, c, δ`` of ``G``.  ``x_next``/``y_next`` are the layer applied to a token in
    Theorem 4.1 form, kept for the closure checks.
    """

    M_next: sp.MatrixExpr
    u_next: sp.MatrixExpr
    a_next: sp.MatrixExpr
    w_next: sp.MatrixExpr
    x_next: sp.MatrixExpr
    y_next: sp.MatrixExpr
    query_x_next: sp.MatrixExpr
    query_y_next: sp.MatrixExpr


def token_form(x_in: sp.MatrixExpr, y_in: sp.MatrixExpr) -> tuple[sp.MatrixExpr, sp.MatrixExpr]:
    r"""A token in Theorem 4.1 form: ``(M x + y u, a y − wᵀ x)``."""
    return M * x_in + u * y_in, a * y_in - w.T * x_in


@cache
def derive_recursion() -> Recursion:
    """Derive Lemma 4.3 by applying the layer to a token in Theorem 4.1 form."""
    x_l, y_l = token_form(x, y)
    x_next, y_next = apply_layer_block(x_l, y_l)
    M_next = coefficient(x_next, x, (y,))
    u_next = coefficient(x_next, y, (x,))
    a_next = coefficient(y_next, y, (x,))
    w_next = simplify_matexpr((-coefficient(y_next, x, (y,))).T)
    # The query token: (M x_t, -<w, x_t>) is the token form with y = 0.
    qx, qy = apply_layer_block(*token_form(x, sp.ZeroMatrix(1, 1)))
    return Recursion(
        M_next,
        u_next,
        a_next,
        w_next,
        simplify_matexpr(x_next),
        simplify_matexpr(y_next),
        simplify_matexpr(qx),
        simplify_matexpr(qy),
    )


def closure_residuals() -> dict[str, sp.MatrixExpr]:
    r"""Residuals that vanish iff the layer maps the Theorem 4.1 form into itself.

    ``context_x``: ``x^{l+1} − (M^{l+1} x + y u^{l+1})``; ``context_y``: ``y^{l+1} − (a^{l+1} y − ⟨w^{l+1}, x⟩)``;
    ``query_x``/``query_y``: the same for the query ``(x_t, 0)`` with the *same* tuple.
    """
    r = derive_recursion()
    return {
        "context_x": simplify_matexpr(r.x_next - (r.M_next * x + r.u_next * y)),
        "context_y": simplify_matexpr(r.y_next - (r.a_next * y - r.w_next.T * x)),
        "query_x": simplify_matexpr(r.query_x_next - r.M_next * x),
        "query_y": simplify_matexpr(r.query_y_next + r.w_next.T * x),
    }


def token_form_is_closed() -> bool:
    """True iff every residual of :func:`closure_residuals` is identically zero."""
    return all(is_zero(v) for v in closure_residuals().values())


# ---------------------------------------------------------------------------------------------
# Gram-matrix map of the context: E^{l+1} from E^l and G^l.
# ---------------------------------------------------------------------------------------------
_D1 = d + 1
_e = sp.MatrixSymbol("e", _D1, 1)


@cache
def derive_gram_update() -> sp.MatrixExpr:
    r"""``E^{l+1}`` in terms of ``E^l`` and ``G^l``.

    Each context token maps as ``e ↦ e + G e``; form ``e' e'ᵀ``, expand, and sum over the
    context by replacing the adjacent pair ``(e, eᵀ)`` with ``E``.
    """
    e_next = _e + G_sym * _e
    outer = simplify_matexpr(e_next * e_next.T)
    return replace_adjacent(outer, {(_e, _e.T): E_sym})
