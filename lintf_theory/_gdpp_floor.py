r"""GD++ is a spectral filter, so no GD++ model beats ridge with ``λ = E σ²`` (ConstRR at the prior's mean).

The paper observes that trained GD++ settles near ConstRR once noise is present.
This module derives why, from the per-eigenvalue GD++ recursion of :mod:`._gdpp_spectral`.

**Spectral filter.**  With ``ω_xy = ω_yy = 0`` the implicit state keeps ``u^l = 0``, ``a^l = 1``,
``M^l = m_l(Σ)`` and ``w^l = p_l(Σ) α``, and one layer maps

.. math::

    m_{l+1} = m_l\,(1 + ω_{xx}^l μ m_l^2), \qquad p_{l+1} = p_l - ω_{yx}^l m_l^2 (1 - μ p_l),
    \qquad m_0 = 1,\ p_0 = 0,

so ``p_L`` is a polynomial in ``μ`` whose coefficients are polynomials in the ``ω``'s alone (no data).
The residual ``r_L = 1 − μ p_L = Π_{l<L} (1 + ω_yx^l μ_l)`` has the layer eigenvalues
``μ_l = μ m_l²`` as factors; ``μ_l`` is the ``l``-fold composition of the eigenvalue map
``μ ↦ μ(1 + ω_xx μ)²`` of the second-order analysis (degree ``k = 3``), so

.. math::  \deg_μ r_L = \sum_{l<L} k^l = \frac{3^L - 1}{2}, \qquad \deg_μ p_L = \frac{3^L - 3}{2},

against ``L`` for plain GD (``ω_xx = 0``, ``k = 1``).

**Floor.**  For any filter ``ŷ = x_tᵀ f(Σ) α`` the expected loss given ``X`` and ``σ`` is
``Σ_j ℓ(μ_j)`` with ``ℓ = ½(r² + σ² μ s²)``, ``s = f(μ)``, ``r = 1 − μ s`` (derived in
:mod:`._gdpp_spectral`).  ``ℓ`` is affine in ``σ²`` and ``σ`` is drawn independently of ``X``, so
averaging over the noise prior replaces ``σ²`` by ``v = E σ²``:

.. math::

    \bar ℓ(f) = \tfrac12\big[f^2 (μ^2 + μ v) - 2 f μ + 1\big]
              = \bar ℓ(f^*) + \tfrac12 μ (μ + v) (f - f^*)^2, \qquad f^*(μ) = \frac{1}{μ + v},

and ``f*`` is the ridge filter ``(Σ + λ I)^{-1}`` at ``λ = v``.  Every GD++ model, of any depth,
therefore has expected loss at least that of ridge with ``λ = E σ²``, with equality only where
``p_L = f*`` on the spectrum.  Noise enters only through ``E σ²``.

**DIAG is not a filter.**  ``f(Σ) α`` is linear in ``y``; a DIAG layer with ``ω_yy ≠ 0`` scales
``y`` by ``1 + ω_yy λ`` and one with ``ω_xy ≠ 0`` moves ``x`` by ``ω_xy y α``, so the prediction of
a two-layer DIAG model is cubic in ``y`` (``proofs/gdpp_ridge_floor.py`` gives exact rationals).

==============  ==========================================================
symbol          meaning
==============  ==========================================================
``mu``          an eigenvalue ``μ`` of ``Σ = XᵀX``
``f``           a filter value ``f(μ)``: ``w = f(Σ) α``
``v``           ``E σ²`` under the noise prior
``lam_r``       the ridge parameter ``λ`` of ``(Σ + λ I)^{-1} α``
==============  ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import sympy as sp

from ._bridge import Exported, export
from ._gdpp import mu
from ._gdpp_spectral import derive_gdpp_spectral, m_s, r_s, s_s, sigma
from ._second_order import gdpp_eigenvalue_map
from ._second_order import mu as mu_second_order
from ._second_order import omega_xx as omega_xx_second_order
from .symbols import omega_xx, omega_yx

f_s, v_s, lam_r = sp.symbols("f v lam_r")
layer = sp.Symbol("l", integer=True, nonnegative=True)
depth = sp.Symbol("L", integer=True, positive=True)


class GdppFloorSymbols(NamedTuple):
    r"""Symbols of the ridge floor (table in this module's docstring): filter value ``f``, noise ``v``, ridge ``λ``, layer ``l``, depth ``L``."""

    f_s: sp.Symbol
    v_s: sp.Symbol
    lam_r: sp.Symbol
    layer: sp.Symbol
    depth: sp.Symbol


GDPP_FLOOR_SYMBOLS = GdppFloorSymbols(f_s, v_s, lam_r, layer, depth)


def layer_omegas(L: int) -> tuple[tuple[sp.Symbol, ...], tuple[sp.Symbol, ...]]:
    r"""Per-layer parameters ``(ω_xx^0..ω_xx^{L−1}), (ω_yx^0..ω_yx^{L−1})``."""
    return (sp.symbols(f"omega_xx_0:{L}") if L else ()), (
        sp.symbols(f"omega_yx_0:{L}") if L else ()
    )


@dataclass(frozen=True)
class FilterPolynomials:
    r"""``m_l, p_l`` (``l = 0..L``) as expanded polynomials in ``μ`` and the per-layer ``ω``'s."""

    m: tuple[sp.Expr, ...]
    p: tuple[sp.Expr, ...]
    omegas: tuple[tuple[sp.Symbol, ...], tuple[sp.Symbol, ...]]

    @property
    def residual(self) -> sp.Expr:
        """``r_L = 1 − μ p_L``."""
        return sp.expand(1 - mu * self.p[-1])


def filter_step(m: sp.Expr, p: sp.Expr, wxx: sp.Expr, wyx: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    r"""``(m_{l+1}, p_{l+1})`` from ``(m_l, p_l)``: the derived per-eigenvalue GD++ layer, substituted."""
    g = derive_gdpp_spectral()
    rep = {m_s: m, s_s: p, omega_xx: wxx, omega_yx: wyx}
    return sp.expand(g.m_next.xreplace(rep)), sp.expand(g.s_next.xreplace(rep))


@cache
def filter_polynomials(
    L: int, values: tuple[tuple[sp.Rational, ...], tuple[sp.Rational, ...]] | None = None
) -> FilterPolynomials:
    r"""Iterate :func:`filter_step` ``L`` times from ``m_0 = 1, p_0 = 0``.

    ``values``: per-layer ``(ω_xx, ω_yx)`` numbers instead of symbols (exact rationals keep it fast
    at depths where the symbolic coefficients grow large).
    """
    if int(L) < 0:
        raise ValueError(f"L (number of layers) must be >= 0, got {L}")
    sym = layer_omegas(L)
    wxx, wyx = values if values is not None else sym
    if len(wxx) != L or len(wyx) != L:
        raise ValueError(
            f"values must hold {L} omega_xx and {L} omega_yx, got {len(wxx)} and {len(wyx)}"
        )
    m, p = [sp.Integer(1)], [sp.Integer(0)]
    for l in range(L):
        mn, pn = filter_step(m[-1], p[-1], sp.sympify(wxx[l]), sp.sympify(wyx[l]))
        m.append(mn)
        p.append(pn)
    return FilterPolynomials(tuple(m), tuple(p), sym)


@dataclass(frozen=True)
class DegreeLaw:
    r"""Degrees predicted from the eigenvalue map's degree ``k``: ``deg r_L = Σ_{l<L} k^l``, ``deg p_L = deg r_L − 1``."""

    k: int
    residual: sp.Expr  # in the depth symbol L
    filter: sp.Expr
    gd_residual: sp.Expr  # k = 1 (ω_xx = 0): plain GD


@cache
def degree_law() -> DegreeLaw:
    r"""``deg_μ r_L`` from the product form ``r_L = Π (1 + ω_yx^l μ_l)`` and ``deg μ_l = k^l``.

    ``k`` is the degree in ``μ`` of the eigenvalue map derived from the Gram map (second-order analysis).
    """
    eig = gdpp_eigenvalue_map().xreplace({mu_second_order: mu, omega_xx_second_order: omega_xx})
    k = sp.degree(eig, mu)
    res = sp.simplify(sp.summation(sp.Integer(k) ** layer, (layer, 0, depth - 1)))
    gd = sp.summation(sp.Integer(1) ** layer, (layer, 0, depth - 1))
    return DegreeLaw(int(k), res, sp.simplify(res - 1), gd)


@dataclass(frozen=True)
class PointwiseOptimum:
    r"""The noise-averaged per-eigenvalue loss of a filter, its minimiser and the ridge filter."""

    loss_f: sp.Expr  # ℓ(μ) with s = f, r = 1 − μ f (σ kept)
    sigma2_degree: int  # degree of ℓ in σ² (1: affine, so E_σ ℓ = ℓ at σ² = E σ²)
    mean_loss: sp.Expr  # ℓ̄(f) in (μ, f, v)
    f_star: sp.Expr
    curvature: sp.Expr  # ∂²ℓ̄/∂f²
    excess: sp.Expr  # ℓ̄(f) − ℓ̄(f*) − ½ μ (μ + v) (f − f*)², 0 when the square is completed
    ridge: sp.Expr  # ridge filter 1/(μ + λ)
    ridge_gap: sp.Expr  # f* − ridge at λ = v


@cache
def derive_pointwise_optimum() -> PointwiseOptimum:
    r"""Minimise the derived per-eigenvalue loss over the filter value ``f`` (module docstring)."""
    g = derive_gdpp_spectral()
    loss_f = sp.expand(g.loss.xreplace({s_s: f_s, r_s: 1 - mu * f_s}))
    t = sp.Symbol("t")  # t = σ²
    in_t = sp.expand(loss_f.xreplace({sigma: sp.sqrt(t)}))
    if in_t.has(sigma) or sp.expand(in_t.xreplace({t: sigma**2}) - loss_f) != 0:
        raise AssertionError(f"the loss is not a polynomial in sigma^2: {loss_f}")
    deg = int(sp.degree(in_t, t))
    mean_loss = sp.expand(in_t.xreplace({t: v_s})) if deg <= 1 else None
    if mean_loss is None:
        raise AssertionError(
            f"the loss has degree {deg} in sigma^2, so its noise average needs more than E sigma^2"
        )
    sols = sp.solve(sp.diff(mean_loss, f_s), f_s)
    if len(sols) != 1:
        raise AssertionError(f"expected one stationary filter value, got {sols}")
    f_star = sp.factor(sols[0])
    curvature = sp.factor(sp.diff(mean_loss, f_s, 2))
    excess = sp.simplify(
        mean_loss - mean_loss.xreplace({f_s: f_star}) - curvature / 2 * (f_s - f_star) ** 2
    )
    # Ridge (Σ + λ I) w = α on an eigenspace of Σ: (μ + λ) f = 1.
    ridge = sp.solve((mu + lam_r) * f_s - 1, f_s)[0]
    gap = sp.simplify(f_star - ridge.xreplace({lam_r: v_s}))
    return PointwiseOptimum(loss_f, deg, mean_loss, f_star, curvature, excess, ridge, gap)


def mean_sigma2(kind: str, values: tuple[sp.Rational, ...]) -> sp.Expr:
    r"""``E σ²`` of a noise prior, exactly: ``∫_0^{σ_max} σ²/σ_max dσ`` (uniform), the mean of ``σ_k²`` (categorical)."""
    x = sp.Symbol("x", nonnegative=True)
    vals = tuple(sp.nsimplify(v) for v in values)
    if kind == "fixed":
        return vals[0] ** 2
    if kind == "uniform":
        return vals[0] ** 2 if vals[0] == 0 else sp.integrate(x**2 / vals[0], (x, 0, vals[0]))
    if kind == "categorical":
        return sp.Rational(1, len(vals)) * sum(v**2 for v in vals)
    raise ValueError(f"noise kind must be fixed, uniform or categorical, got {kind!r}")


@cache
def filter_coefficient_rule(L: int) -> Exported:
    r"""Bridge export ``(ω_xx^0.., ω_yx^0..) ↦ (c_0, …, c_D)`` with ``p_L(μ) = Σ_j c_j μ^j`` (lowest first)."""
    fp = filter_polynomials(L)
    coeffs = tuple(reversed(sp.Poly(fp.p[-1], mu).all_coeffs())) if L else (sp.Integer(0),)
    return export(f"gdpp_filter_coefficients_{L}", (*fp.omegas[0], *fp.omegas[1]), coeffs)


@cache
def ridge_floor_rule() -> Exported:
    r"""Bridge export ``(μ, v) ↦ f*(μ) = 1/(μ + v)``: the loss-minimising filter under a prior with ``E σ² = v``."""
    return export("ridge_floor_filter", (mu, v_s), (derive_pointwise_optimum().f_star,))
