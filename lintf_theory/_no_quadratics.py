r"""Theorem 4.2 (no quadratics): with noiseless targets every ``y^l`` lies in the column space of ``X``.

Paper: Theorem 4.2 (docs/model.md).  Derived from the Theorem 4.1 token form
(:func:`~lintf_theory._recursion.token_form`) and the Lemma 4.3 recursion, never typed:

.. math::

    y_i = \langle w_τ, x_i\rangle \;\Rightarrow\;
    y_i^l = a^l y_i - \langle w^l, x_i\rangle = \langle v^l, x_i\rangle, \qquad v^l = a^l w_τ - w^l,

so the context targets at layer ``l`` are ``(y_1^l … y_n^l) = X v^l ∈ \operatorname{col}(X)`` for every
model (any ``P, Q``, any number of heads) and every layer.  ``v^l`` is read off as the coefficient of
``x`` after substituting ``y = w_τᵀ x``; applying one more layer (Lemma 4.3) gives again a linear form,
with ``v^{l+1} = a^{l+1} w_τ - w^{l+1}``: the induction.

With ``q = (x_1(1)², …, x_n(1)²)`` and ``P_X = X (XᵀX)^{-1} Xᵀ`` (symmetric, ``P_X X = X``, both
derived at block level), ``⟨X v, q⟩ = ⟨X v, P_X q⟩`` and Cauchy–Schwarz give the model-free bound

.. math::  |\cos(y^l, q)| \le \|P_X q\| / \|q\| .

Leading order for ``x_i ~ N(0, I_d)`` (ratio of expectations, ``(XᵀX)^{-1} ≈ I/n``; Gaussian moments
from ``sympy.stats``): ``\|P_X q\|^2/\|q\|^2 ≈ (E x^6 + (d-1) E x^2 E x^4)/(n E x^4) = (d+4)/n``.
So the cosine is small once ``n ≫ d``, and the bound is ``1`` when ``n ≤ d`` (``col(X) = R^n``).  In law
(CLT), ``n \|P_X q\|^2/\|q\|^2 → 5 χ^2_1 + χ^2_{d-1}``, which quantifies "with high probability":
``P(|cos| > t) ≤ P(5 χ^2_1 + χ^2_{d-1} > n t^2)`` asymptotically.

==============  ===================================================
symbol          meaning
==============  ===================================================
``w_tau``       task vector ``w_τ`` (noiseless ``y_i = ⟨w_τ, x_i⟩``)
``M, u, a, w``  implicit state of Theorem 4.1 at layer ``l``
``X``           ``n × d`` context inputs, rows ``x_iᵀ``
``v``           ``v^l = a^l w_τ - w^l``: ``y^l = X v^l``
==============  ===================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import sympy as sp
from sympy.stats import Normal, moment

from ._bridge import _xp, export
from ._recursion import derive_recursion, token_form
from ._render import Statement
from .matexpr import coefficient, is_zero, simplify_matexpr
from .symbols import a, d, w, x, y

w_tau = sp.MatrixSymbol("w_tau", d, 1)
n_sym = sp.Symbol("n", integer=True, positive=True)
X_sym = sp.MatrixSymbol("X", n_sym, d)


class Theorem42Symbols(NamedTuple):
    r"""Symbols of Theorem 4.2: the task weight ``w_τ``, the context size ``n`` and the data matrix ``X`` (``n×d``)."""

    w_tau: sp.MatrixSymbol
    n_sym: sp.Symbol
    X_sym: sp.MatrixSymbol


THEOREM_4_2_SYMBOLS = Theorem42Symbols(w_tau, n_sym, X_sym)


@dataclass(frozen=True)
class NoQuadratics:
    r"""Derived objects of Theorem 4.2 (see the module docstring)."""

    weight: sp.MatrixExpr  # v^l: y^l = v^lᵀ x under y = w_τᵀ x
    weight_next: sp.MatrixExpr  # v^{l+1} read off after one more layer
    linear_in_x: bool  # y^l - vᵀx and y^{l+1} - v'ᵀx vanish identically
    next_matches_state: bool  # v^{l+1} = a^{l+1} w_τ - w^{l+1} (Lemma 4.3 state), explicit d = 1, 2
    projector_fixes_X: bool  # P_X X = X
    projector_symmetric: bool  # P_Xᵀ = P_X
    moments: dict[int, sp.Expr]  # E x^k for x ~ N(0, 1), k = 2, 4, 6
    bound_sq_leading: sp.Expr  # leading order of ‖P_X q‖²/‖q‖²
    limit_weights: tuple[sp.Expr, sp.Expr]  # n‖P_X q‖²/‖q‖² → w1 χ²_1 + w2 χ²_{d-1} in law


def _gaussian_moment(k: int) -> sp.Expr:
    """``E z^k`` for ``z ~ N(0, 1)`` (``sympy.stats``)."""
    return sp.simplify(moment(Normal("z", 0, 1), k))


def _explicit_zero(expr: sp.MatrixExpr, dims: tuple[int, ...] = (1, 2)) -> bool:
    """Zero at explicit sizes: there ``1×1`` blocks (``a, δ, cᵀu``) commute, which block level cannot see."""
    return all(sp.expand(sp.Matrix(expr.subs(d, k).as_explicit())).is_zero_matrix for k in dims)


@cache
def derive_theorem_4_2() -> NoQuadratics:
    """Substitute ``y = w_τᵀ x`` into the token form at layer ``l`` and ``l+1`` and read off ``v``."""
    noiseless = {y: w_tau.T * x}
    _, y_l = token_form(x, y)
    y_l = simplify_matexpr(y_l.xreplace(noiseless))
    v = simplify_matexpr(coefficient(y_l, x, ()).T)
    r = derive_recursion()
    y_next = simplify_matexpr(r.y_next.xreplace(noiseless))
    v_next = simplify_matexpr(coefficient(y_next, x, ()).T)
    linear = is_zero(y_l - v.T * x) and is_zero(y_next - v_next.T * x)
    # the same linear form one layer later, compared as rows (1×1 products like cᵀu stay un-transposed)
    v_state_row = v.T.xreplace({a: r.a_next, w: r.w_next})
    PX = X_sym * (X_sym.T * X_sym).I * X_sym.T
    fixes = is_zero(PX * X_sym - X_sym)
    symmetric = is_zero(PX.T - PX)
    m = {k: _gaussian_moment(k) for k in (2, 4, 6)}
    # E‖Xᵀq‖² = n Σ_k E[x(k)² x(1)⁴] = n (m6 + (d-1) m2 m4);  E‖q‖² = n m4;  (XᵀX)^{-1} ≈ I/n.
    lead = sp.factor(n_sym * (m[6] + (d - 1) * m[2] * m[4]) / n_sym / (n_sym * m[4]))
    # CLT: Xᵀq/√n → N(0, diag(m6, m2 m4, …)) (odd moments vanish), ‖q‖²/n → m4, XᵀX/n → I, so
    # n‖P_X q‖²/‖q‖² → (m6/m4) χ²_1 + (m2 m4/m4) χ²_{d-1}; its mean is n times the leading order above.
    weights = (sp.nsimplify(m[6] / m[4]), sp.nsimplify(m[2] * m[4] / m[4]))
    if sp.simplify(weights[0] + (d - 1) * weights[1] - n_sym * lead) != 0:
        raise AssertionError("limit law and leading order disagree")
    return NoQuadratics(
        v,
        v_next,
        linear,
        _explicit_zero(v_next.T - v_state_row),
        fixes,
        symmetric,
        m,
        lead,
        weights,
    )


@cache
def noiseless_weight_rule():
    """Bridge export ``(a, w, w_τ) ↦ v = a w_τ - w`` (column shapes, ``a`` is ``1×1``)."""
    return export("noiseless_weight", (a, w, w_tau), (derive_theorem_4_2().weight,))


def noiseless_weight(a_val, w_val, w_task, backend: str = "numpy"):
    r"""``v^l`` with natural shapes (``a ()``, ``w, w_τ (d,)``): the layer-``l`` targets are ``X v^l``."""
    xp = _xp(backend)
    f = getattr(noiseless_weight_rule(), backend)
    return xp.reshape(
        f(xp.reshape(a_val, (1, 1)), xp.reshape(w_val, (-1, 1)), xp.reshape(w_task, (-1, 1))), (-1,)
    )


def no_quadratics_statements() -> list:

    t = derive_theorem_4_2()
    ref = "Theorem 4.2 (no quadratics)"
    return [
        Statement(
            ref,
            "Noiseless targets at layer l are a linear form in x_i: y_i^l = <v^l, x_i>",
            "v^l",
            t.weight,
        ),
        Statement(
            ref,
            "One layer later (Lemma 4.3)",
            "v^{l+1}",
            t.weight_next,
            "So $(y_1^l,\\dots,y_n^l) = X v^l \\in \\mathrm{col}(X)$ for every model and layer.",
        ),
        Statement(
            ref,
            "Model-free bound: |cos(y^l, q)| <= B",
            "B",
            "\\|P_X q\\| / \\|q\\|",
            "$q = (x_1(1)^2,\\dots,x_n(1)^2)$, $P_X = X(X^TX)^{-1}X^T$ ($P_X X = X$, $P_X^T = P_X$ derived).",
        ),
        Statement(
            ref,
            "Leading order for x ~ N(0, I_d), n -> oo (ratio of expectations)",
            "\\|P_X q\\|^2/\\|q\\|^2",
            t.bound_sq_leading,
        ),
        Statement(
            ref,
            "Limit law (CLT, in distribution)",
            "\\lim_{n\\to\\infty} n\\|P_X q\\|^2/\\|q\\|^2",
            sp.Symbol(f"{t.limit_weights[0]}\\chi^2_1 + {t.limit_weights[1]}\\chi^2_{{d-1}}"),
        ),
    ]
