r"""Exact expected loss of one-step GD (a one-layer linear transformer), from Wishart moments.

Paper: docs/model.md ("this convention is pinned by a closed form"); von Oswald et al. (2023).

A one-layer GD model (``ω_xx = 0``, ``ω_yx = -η``) predicts ``ŷ = η ⟨α, x_t⟩`` (the recursion gives
``w^1 = -ω_yx α``).  With ``α = Σ w + Xᵀ ξ``, independent ``w ~ N(0, I)``, ``x_t ~ N(0, I)`` and
``ξ ~ N(0, σ² I)``,

.. math::

    \mathcal L(η) = \tfrac12 \mathbb E (y_t - ŷ)^2 = \tfrac12 \mathbb E \|w - η α\|^2
    = \tfrac d2 \big(1 - 2ηn + η^2 n (n + d + 1 + σ^2)\big),

using ``E Σ = n I`` and ``E Σ² = n (n + d + 1) I``, both derived here from Gaussian moments
(``E‖x‖² = d``, ``E‖x‖⁴ = d (d + 2)`` from ``sympy.stats``).  The loss is affine in ``σ²``, so under a
noise prior ``σ²`` enters only through ``E σ²``.

==========  ===========================================
symbol      meaning
==========  ===========================================
``n, d``    context length, input dimension
``eta``     GD step ``η = -ω_yx``
``sigma2``  noise variance ``σ²`` (or ``E σ²`` under a prior)
==========  ===========================================
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import sympy as sp
from sympy.stats import ChiSquared, E

from ._bridge import export
from ._recursion import derive_recursion
from ._render import Statement
from .matexpr import simplify_matexpr
from .symbols import A, M, a, b, c, delta, u, w

n, eta, sigma2 = sp.symbols("n eta sigma2", positive=True)
d = sp.Symbol("d", positive=True, integer=True)


class OneStepSymbols(NamedTuple):
    r"""Symbols of the one-step GD closed forms: dimension ``d``, context size ``n``, step ``η``, noise variance ``σ²``."""

    d: sp.Symbol
    n: sp.Symbol
    eta: sp.Symbol
    sigma2: sp.Symbol


ONE_STEP_SYMBOLS = OneStepSymbols(d, n, eta, sigma2)


@dataclass(frozen=True)
class WishartMoments:
    r"""``E Σ = m1 I`` and ``E Σ² = m2 I`` for ``Σ = Σ_{i≤n} x_i x_iᵀ``, ``x_i ~ N(0, I_d)``."""

    m1: sp.Expr
    m2: sp.Expr


@cache
def wishart_moments() -> WishartMoments:
    r"""``E[x xᵀ] = (E‖x‖²/d) I`` and ``E[‖x‖² x xᵀ] = (E‖x‖⁴/d) I`` by isotropy; pairs ``i ≠ j`` factorise."""
    chi = ChiSquared("chi", d)  # ‖x‖²
    second = sp.simplify(E(chi) / d)
    fourth = sp.simplify(E(chi**2) / d)
    return WishartMoments(sp.factor(n * second), sp.factor(n * (n - 1) * second**2 + n * fourth))


@dataclass(frozen=True)
class OneStepGD:
    step_coefficient: sp.Expr  # w^1 = (coefficient) · α, from the recursion
    loss: sp.Expr  # ½ E (y_t - ŷ)² as a function of η, σ²
    eta_opt: sp.Expr
    loss_opt: sp.Expr
    affine_in_sigma2: bool


@cache
def derive_one_step_gd() -> OneStepGD:
    r"""Derive ``ŷ = η⟨α, x_t⟩`` from the recursion, then ``½ E‖w - ηα‖²`` term by term."""
    # Recursion at M=I, u=0, a=1, w=0 with the GD layer's blocks: A = 0, b = 0, c = ω_yx α, δ = 0.
    alpha_m = sp.MatrixSymbol("alpha", w.shape[0], 1)
    omega_yx = sp.Symbol("omega_yx")
    r = derive_recursion()
    Z = lambda m: sp.ZeroMatrix(*m.shape)  # noqa: E731
    w1 = simplify_matexpr(
        r.w_next.xreplace(
            {
                M: sp.Identity(M.shape[0]),
                u: Z(u),
                a: sp.Identity(1),
                w: Z(w),
                A: Z(A),
                b: Z(b),
                delta: Z(delta),
                c: omega_yx * alpha_m,
            }
        )
    )
    coeff = _scalar_coefficient(w1, alpha_m)
    step = coeff.subs(omega_yx, -eta)  # = η
    # ½ E‖w - step α‖², α = Σ w + Xᵀ ξ:  E‖(I - step Σ) w‖² + step² E ξᵀ X Xᵀ ξ  (cross terms: E ξ = 0).
    mom = wishart_moments()
    # E wᵀ B w = tr E B for w ~ N(0, I) independent of B; E ξᵀ X Xᵀ ξ = σ² tr E Σ.
    tr_I, tr_S, tr_S2 = d, d * mom.m1, d * mom.m2
    loss = sp.expand(
        sp.Rational(1, 2) * (tr_I - 2 * step * tr_S + step**2 * tr_S2 + step**2 * sigma2 * tr_S)
    )
    eta_opt = sp.solve(sp.diff(loss, eta), eta)[0]
    loss_opt = sp.factor(sp.simplify(loss.subs(eta, eta_opt)))
    return OneStepGD(
        coeff, sp.factor(loss), sp.factor(eta_opt), loss_opt, sp.diff(loss, sigma2, 2) == 0
    )


def _scalar_coefficient(expr: sp.MatrixExpr, vec: sp.MatrixSymbol) -> sp.Expr:
    """``k`` with ``expr = k · vec`` for a scalar ``k`` (evaluated on a 1-dimensional instance)."""
    v = sp.Symbol("v")
    inst = expr.subs(vec.shape[0], 1).xreplace(
        {sp.MatrixSymbol(vec.name, 1, 1): sp.ImmutableMatrix([[v]])}
    )
    val = sp.Matrix(inst.doit())[0, 0]
    return sp.simplify(val / v)


@cache
def one_step_rule():
    """Bridge export ``(n, d, η, σ²) ↦ loss`` and ``(n, d, σ²) ↦ (η*, loss*)``."""
    g = derive_one_step_gd()
    return (
        export("one_step_loss", (n, d, eta, sigma2), (g.loss,)),
        export("one_step_optimum", (n, d, sigma2), (g.eta_opt, g.loss_opt)),
    )


def closed_form_statements() -> list:

    g, m = derive_one_step_gd(), wishart_moments()
    ref = "One-layer closed form (docs/model.md)"
    return [
        Statement(
            ref,
            "Wishart moments",
            "\\mathbb E\\Sigma,\\ \\mathbb E\\Sigma^2",
            sp.Tuple(m.m1, m.m2),
            "Times $I_d$.",
        ),
        Statement(
            ref,
            "Expected loss of one GD step",
            "\\mathcal L(\\eta)",
            g.loss,
            "Affine in $\\sigma^2$: under a prior replace $\\sigma^2$ by $\\mathbb E\\sigma^2$.",
        ),
        Statement(ref, "Optimal step", "\\eta^*", g.eta_opt),
        Statement(ref, "Optimal one-layer loss", "\\mathcal L(\\eta^*)", g.loss_opt),
    ]
