r"""GD++ is a second-order method: Lemmas A.2, A.3 and the layer count of Theorem 5.1, derived.

Paper: Vladymyrov et al. (NeurIPS 2024), Section 5.1, Theorem 5.1, Lemmas A.2-A.3 (docs/model.md).

**Eigenvalue map.**  A GD++ layer has ``P = diag(ω_xx I, ω_yx)``, ``Q = diag(I, 0)``.  Putting
``G = P E Q`` into the derived Gram map ``E' = E + E Gᵀ + G E + G E Gᵀ`` (Lemma 4.3 module) with
``d = 1`` (``Σ^{l+1}`` is a polynomial in ``Σ^l``, so it acts on every eigenvector as it acts on
a scalar) gives the image of an eigenvalue ``μ``:

.. math::  f_{ω}(μ) = μ (1 + ω_{xx} μ)^2 .

**Lemma A.3.**  With ``γ = -ω_xx`` and ``γν = t`` (``t = 1/3`` in the paper), ``f`` is
non-decreasing on ``[0, ν]`` iff ``t <= 1/3``; then the condition number ``κ = ν/μ`` becomes

.. math::  κ' = f(ν)/f(ν/κ) \overset{t=1/3}{=} \frac{4κ^3}{(3κ-1)^2},
           \qquad κ'(1+ε) - 1 = \frac{ε^2 (ε + 3/4)}{(1 + 3ε/2)^2}.

Everything is derived by SymPy from the eigenvalue map; inequalities are proved by
:mod:`.certify` (Sturm root counting), never by sampling.

=============  ======================================================
symbol         meaning
=============  ======================================================
``mu, nu``     smallest / largest eigenvalue bound of ``Σ^l``
``kappa``      ``ν/μ``; ``eps``: ``κ - 1`` near 1
``t``          ``γν``, the step relative to the top eigenvalue
``omega_xx``   GD++ layer parameter, ``= -γ``
=============  ======================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import sympy as sp

from ._bridge import export
from ._recursion import derive_gram_update
from ._render import Statement
from .certify import Certificate, nonnegative_on, positive_on_ray
from .layer import head_sum
from .symbols import d as d_sym

mu, nu, kappa, eps, t, s = sp.symbols("mu nu kappa epsilon t s", positive=True)
omega_xx, omega_yx, alpha_s, lam = sp.symbols("omega_xx omega_yx alpha lam", real=True)


class SecondOrderSymbols(NamedTuple):
    r"""Symbols of the second-order analysis (table in this module's docstring); positive ``mu``, ``omega_xx`` real."""

    mu: sp.Symbol
    nu: sp.Symbol
    kappa: sp.Symbol
    eps: sp.Symbol
    t: sp.Symbol
    s: sp.Symbol
    omega_xx: sp.Symbol
    omega_yx: sp.Symbol
    alpha_s: sp.Symbol
    lam: sp.Symbol


SECOND_ORDER_SYMBOLS = SecondOrderSymbols(
    mu, nu, kappa, eps, t, s, omega_xx, omega_yx, alpha_s, lam
)


@cache
def gdpp_eigenvalue_map() -> sp.Expr:
    r"""``f(μ) = μ (1 + ω_xx μ)^2``: the top-left entry of the derived Gram map for a GD++ layer, ``d = 1``."""
    E = sp.ImmutableMatrix([[mu, alpha_s], [alpha_s, lam]])
    G = sp.ImmutableMatrix(head_sum([sp.diag(omega_xx, omega_yx)], [sp.diag(1, 0)], E))
    g = derive_gram_update().subs(d_sym, 1)
    E1 = sp.Matrix(
        g.xreplace({sp.MatrixSymbol("E", 2, 2): E, sp.MatrixSymbol("G", 2, 2): G}).doit()
    )
    return sp.factor(E1[0, 0])


def f_of(x: sp.Expr, gamma: sp.Expr) -> sp.Expr:
    """The eigenvalue map at ``ω_xx = -γ``."""
    return gdpp_eigenvalue_map().subs({omega_xx: -gamma}).subs(mu, x)


@dataclass(frozen=True)
class LemmaA3:
    r"""Derived objects of Lemma A.3 (see module docstring)."""

    fprime_scaled: sp.Expr  # f'(ν s) at γν = 1/3, as a polynomial in s
    monotone: Certificate  # f'(ν s) >= 0 on s in [0, 1]
    fprime_roots_t: list  # roots in s of f'(ν s) for general t = γν
    kappa_next_t: sp.Expr  # κ' for general t <= 1/3
    first_order_t: sp.Expr  # coefficient of ε in κ'(1+ε), general t
    t_cancel: list  # solutions t of first_order_t = 0
    kappa_next: sp.Expr  # κ'(κ) at t = 1/3
    eps_next: sp.Expr  # κ'(1+ε) - 1, factored
    series: sp.Expr  # Taylor of κ'(1+ε) to O(ε^4)
    leading: sp.Expr  # coefficient of ε^2
    bound_printed: Certificate  # κ' <= 1 + 2ε² on [0, 1/10]
    bound_sharp_all_eps: bool  # κ' <= 1 + (leading) ε² for every ε >= 0 (ray certificate)
    c: sp.Rational  # best c with κ' <= c κ on κ >= 11/10
    ratio_decreasing: bool  # d/dκ (κ'/κ) < 0 on κ >= 11/10 (ray certificate)
    kappa_next_increasing: bool  # dκ'/dκ >= 0 on κ >= 1 (so κ <= 1.1 is kept)
    c_limit: sp.Expr  # lim_{κ→∞} κ'/κ


def _kappa_next(tt: sp.Expr) -> sp.Expr:
    gamma = tt / nu
    return sp.simplify(f_of(nu, gamma) / f_of(nu / kappa, gamma))


@cache
def derive_lemma_a3() -> LemmaA3:
    """Derive every statement of Lemma A.3 from the GD++ eigenvalue map."""
    third = sp.Rational(1, 3)
    x = sp.Symbol("x", positive=True)
    # Monotonicity: f'(x) at x = ν s, γ = t/ν.
    fp_t = sp.factor(sp.diff(f_of(x, t / nu), x).subs(x, nu * s))
    roots_t = sorted(sp.solve(sp.Eq(fp_t, 0), s), key=sp.default_sort_key)
    fp = sp.expand(fp_t.subs(t, third))
    monotone = nonnegative_on(fp, s, 0, 1)
    # Condition number map.
    kn_t = _kappa_next(t)
    first = sp.factor(sp.diff(kn_t.subs(kappa, 1 + eps), eps).subs(eps, 0))
    t_cancel = sp.solve(sp.Eq(first, 0), t)
    kn = sp.factor(_kappa_next(third))
    eps_next = sp.factor(kn.subs(kappa, 1 + eps) - 1)
    series = sp.series(kn.subs(kappa, 1 + eps), eps, 0, 4).removeO()
    leading = series.coeff(eps, 2)
    # κ' <= 1 + C ε²  <=>  (1 + C ε²) den - num >= 0 (den > 0).
    num, den = sp.fraction(sp.together(kn.subs(kappa, 1 + eps)))
    printed = nonnegative_on(sp.expand((1 + 2 * eps**2) * den - num), eps, 0, sp.Rational(1, 10))
    sharp_gap = sp.expand((1 + leading * eps**2) * den - num)
    sharp = all(sharp_gap.coeff(eps, k) == 0 for k in (0, 1, 2)) and positive_on_ray(
        sp.cancel(sharp_gap / eps**3), eps, 0
    )
    # Best c on κ >= 11/10: κ'/κ decreasing there, so the sup is its value at 11/10.
    k0 = sp.Rational(11, 10)
    ratio = sp.factor(kn / kappa)
    dnum, dden = sp.fraction(sp.factor(sp.diff(ratio, kappa)))
    decreasing = positive_on_ray(-dnum, kappa, k0) and positive_on_ray(dden, kappa, k0)
    knum, kden = sp.fraction(sp.factor(sp.diff(kn, kappa)))
    increasing = (
        bool(sp.factor(knum).subs(kappa, 1) == 0)
        and positive_on_ray(sp.cancel(knum / (kappa - 1)), kappa, 1)
        and positive_on_ray(kden, kappa, 1)
    )
    return LemmaA3(
        fp,
        monotone,
        roots_t,
        kn_t,
        first,
        t_cancel,
        kn,
        eps_next,
        series,
        leading,
        printed,
        bool(sharp),
        sp.nsimplify(ratio.subs(kappa, k0)),
        bool(decreasing),
        bool(increasing),
        sp.limit(ratio, kappa, sp.oo),
    )


# ---------------------------------------------------------------------------------------------
# Lemma A.2: one GD step on data with spectrum in [1, 1+ε].
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LemmaA2:
    r"""``ŵ - w* = (Σ - I) w*`` (from ``α = Σ w*``); per eigen-direction the factor is ``λ - 1``."""

    error_factor: sp.Expr  # per-eigenvalue error factor of one step with step η
    bound: Certificate  # ε² - (λ-1)² >= 0 for λ = 1 + ε s, s in [0, 1]
    sup_unit_step: sp.Expr  # max over λ in [1, 1+ε] of |λ - 1| with η = 1
    best_step: sp.Expr  # η minimising the worst factor (equioscillation)
    best_error: sp.Expr  # worst factor at the best step


@cache
def derive_lemma_a2() -> LemmaA2:
    lam_e, eta = sp.symbols("lambda eta", positive=True)
    # One GD step from w = 0 with step η: ŵ = η α = η Σ w*  ⇒  ŵ - w* = (ηΣ - I) w*.
    factor = eta * lam_e - 1
    unit = factor.subs(eta, 1)
    gap = sp.expand(eps**2 - unit.subs(lam_e, 1 + eps * s) ** 2)
    cert = nonnegative_on(sp.cancel(gap / eps**2), s, 0, 1)
    sup_unit = sp.Max(*(sp.Abs(unit.subs(lam_e, v)) for v in (1, 1 + eps)))
    eta_star = sp.solve(sp.Eq(-factor.subs(lam_e, 1), factor.subs(lam_e, 1 + eps)), eta)[0]
    return LemmaA2(
        factor,
        cert,
        sp.simplify(sup_unit),
        sp.simplify(eta_star),
        sp.simplify(sp.Abs(factor.subs({lam_e: 1, eta: eta_star}))),
    )


# ---------------------------------------------------------------------------------------------
# Theorem 5.1: the explicit layer count.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerCount:
    r"""``l(κ, ε) = K1 + K2 + 1``: ``K1`` layers bring ``κ`` below ``1.1`` (factor ``c`` each),
    ``K2`` layers bring ``κ - 1`` below ``ε`` (``ε' <= 2ε²``), one GD read-out layer (Lemma A.2)."""

    K1: int
    K2: int

    @property
    def total(self) -> int:
        return self.K1 + self.K2 + 1


def layer_count(kappa_val: float, eps_val: float) -> LayerCount:
    r"""Explicit Theorem 5.1 layer count from the derived constants ``c`` and ``2``:

    ``K1 = ⌈log(κ/1.1) / log(1/c)⌉⁺``, ``K2 = ⌈log₂(log(1/(2ε)) / log 5)⌉⁺`` (``2ε_k <= (2·0.1)^{2^k}``).
    """
    if not (math.isfinite(kappa_val) and kappa_val >= 1):
        raise ValueError(f"kappa must be a finite number >= 1, got {kappa_val}")
    if not (math.isfinite(eps_val) and 0 < eps_val < 1):
        raise ValueError(f"eps must be in (0, 1), got {eps_val}")
    lem = derive_lemma_a3()
    c = float(lem.c)
    K1 = 0 if kappa_val <= 1.1 else math.ceil(math.log(kappa_val / 1.1) / math.log(1 / c) - 1e-12)
    # After phase 1, e_0 = κ - 1 <= 0.1 and e_{k+1} <= 2 e_k²  ⇒  2 e_k <= (0.2)^(2^k).
    K2 = (
        0
        if eps_val >= 0.1
        else math.ceil(math.log2(math.log(1 / (2 * eps_val)) / math.log(5)) - 1e-12)
    )
    return LayerCount(K1, K2)


@cache
def kappa_next_rule():
    r"""Bridge export of the derived ``κ ↦ κ'`` (``γν = 1/3``) and eigenvalue map ``(μ, ω_xx) ↦ f(μ)``."""
    return (
        export("kappa_next", (kappa,), (derive_lemma_a3().kappa_next,)),
        export("gdpp_eigenvalue_map", (mu, omega_xx), (gdpp_eigenvalue_map(),)),
    )


def layer_count_exact(kappa_val: float, eps_val: float, max_layers: int = 10_000) -> int:
    r"""Smallest ``K + 1`` for the construction itself: iterate the derived ``κ'`` until ``κ_K - 1 <= ε``, plus the read-out."""
    if not (math.isfinite(kappa_val) and kappa_val >= 1):
        raise ValueError(f"kappa must be a finite number >= 1, got {kappa_val}")
    if not (math.isfinite(eps_val) and 0 < eps_val < 1):
        raise ValueError(f"eps must be in (0, 1), got {eps_val}")
    step = kappa_next_rule()[0].numpy
    k, K = float(kappa_val), 0
    while k - 1 > eps_val:
        k, K = float(step(k)), K + 1
        if K > max_layers:
            raise ValueError(f"no convergence within max_layers={max_layers}")
    return K + 1


def second_order_statements() -> list:

    a3, a2 = derive_lemma_a3(), derive_lemma_a2()
    ref3, ref2 = "Lemma A.3 (GD++ condition number)", "Lemma A.2 (one GD step)"
    return [
        Statement(
            "Theorem 5.1 (GD++ eigenvalue map)",
            "Image of an eigenvalue of Sigma",
            "f(\\mu)",
            gdpp_eigenvalue_map(),
        ),
        Statement(
            ref3,
            "f'(nu s) at gamma nu = 1/3",
            "f'(\\nu s)",
            sp.factor(a3.fprime_scaled),
            "Non-negative on $s\\in[0,1]$ (Sturm certificate), so $f$ is non-decreasing on $[0,\\nu]$.",
        ),
        Statement(
            ref3, "New condition number, general t = gamma nu <= 1/3", "\\kappa'", a3.kappa_next_t
        ),
        Statement(
            ref3,
            "First-order coefficient at kappa = 1 + eps",
            "\\partial_\\varepsilon \\kappa'|_0",
            a3.first_order_t,
            "Vanishes only at $t = 1/3$.",
        ),
        Statement(ref3, "New condition number at gamma nu = 1/3", "\\kappa'", a3.kappa_next),
        Statement(
            ref3,
            "Near one",
            "\\kappa'(1+\\varepsilon) - 1",
            a3.eps_next,
            f"Leading coefficient {a3.leading}; $\\kappa' \\le 1 + 2\\varepsilon^2$ on $(0, 0.1]$ and "
            f"$\\kappa' \\le 1 + {sp.latex(a3.leading)}\\varepsilon^2$ for every $\\varepsilon > 0$.",
        ),
        Statement(
            ref3,
            "Best c with kappa' <= c kappa on kappa >= 1.1",
            "c",
            a3.c,
            f"$\\kappa'/\\kappa$ is decreasing; its limit is {a3.c_limit}.",
        ),
        Statement(
            ref2,
            "Error factor per eigen-direction, step eta",
            "\\hat w - w^*",
            a2.error_factor,
            "Unit step: $\\|\\hat w - w^*\\| \\le \\varepsilon \\|w^*\\|$.",
        ),
        Statement(ref2, "Best step on [1, 1+eps]", "\\eta^*", a2.best_step),
        Statement(ref2, "Its worst-case error factor", "\\max|1-\\eta^*\\lambda|", a2.best_error),
    ]
