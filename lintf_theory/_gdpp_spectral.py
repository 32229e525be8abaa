r"""GD++ per eigenvalue: the implicit state and the expected loss as scalar recursions, derived.

Paper: Vladymyrov et al. (NeurIPS 2024), Section 5.1 (GD++, Theorem 5.1) and Theorem 4.1 /
Lemma 4.3 (docs/model.md).  Used by the spectral fit of :mod:`numerics.baselines.gdpp_fit`.

**Route.**  Start from the derived GD++ token rule (:func:`._gdpp.derive_gdpp`) and read off the
blocks of ``G^l`` as coefficients: ``I + A = ∂x'/∂x``, ``b = ∂x'/∂y``, ``cᵀ = ∂y'/∂x``,
``1 + δ = ∂y'/∂y`` (so ``A = ω_xx Σ^l``, ``b = 0``, ``c = ω_yx α^l``, ``δ = 0``, *derived*).  The
layer-``l`` statistics come from the Theorem 4.1 form of the context, ``(X^l)ᵀ = M Xᵀ + u Yᵀ`` and
``(Y^l)ᵀ = a Yᵀ − wᵀ Xᵀ``, summed over tokens (``XᵀX ↦ Σ``, ``XᵀY ↦ α``, ``YᵀY ↦ λ``):
``Σ^l = (X^l)ᵀ X^l`` and ``α^l = (X^l)ᵀ Y^l``.  Both go into the derived Lemma 4.3 map
(:func:`._recursion.derive_recursion`).

**Eigenvalue restriction.**  With ``M^0 = I, u^0 = 0, a^0 = 1, w^0 = 0`` every matrix the
recursion produces is a polynomial in ``Σ`` and ``w^l = s_l(Σ) α``: on an eigenspace of ``Σ``
(eigenvalue ``μ``) each such matrix acts as a scalar, so the substitution
``Σ ↦ μ I, M ↦ m I, u ↦ 0, a ↦ 1, w ↦ s α`` *is* the restriction of the recursion to that
eigenspace.  The derivation checks the ansatz closes (``u' = 0, a' = 1``, ``M'`` a multiple of
``I``, ``w'`` a multiple of ``α``) and reads off

.. math::

    m_{l+1} = m_l\,(1 + ω_{xx}^l μ m_l^2), \qquad
    s_{l+1} = s_l - ω_{yx}^l m_l^2 (1 - μ s_l), \qquad
    r_{l+1} = r_l\,(1 + ω_{yx}^l μ m_l^2),

with ``m_0 = 1, s_0 = 0`` and ``r_l = 1 − μ s_l`` (``r`` by substituting ``s = (1 − r)/μ``).
``μ m_l²`` is the layer-``l`` eigenvalue (the map ``μ ↦ μ(1 + ω_xx μ)²`` of :func:`._gdpp.derive_gdpp`).

**Expected loss.**  ``ŷ = ⟨w^L, x_t⟩ = x_tᵀ s_L(Σ) α`` (Theorem 4.1) with ``α = Σ w_τ + Xᵀ ξ`` and
``y_t = ⟨w_τ, x_t⟩``.  In the eigenbasis ``V`` of ``Σ`` write ``γ = Vᵀx_t``, ``β = Vᵀ w_τ``,
``η = Vᵀ Xᵀ ξ``; given ``X``, ``γ, β ~ N(0, I)`` and ``η ~ N(0, σ² V ᵀΣ V)`` (the covariance
``E[Xᵀ ξ ξᵀ X] = σ² XᵀX`` is derived by ``ξξᵀ ↦ σ² I`` then ``XᵀX ↦ Σ``) are independent and
independent across eigen-directions, so ``½ E[(ŷ − y_t)² | X] = Σ_j ℓ(μ_j)`` with the per-direction
expectation (Gaussian moments applied to the expanded square)

.. math::  ℓ(μ) = \tfrac12\big[(1 - μ s_L)^2 + σ^2 μ s_L^2\big] = \tfrac12\big[r_L^2 + σ^2 μ s_L^2\big].

==============  ==========================================================
symbol          meaning
==============  ==========================================================
``mu``          an eigenvalue ``μ`` of ``Σ = XᵀX`` (layer 0)
``m``           ``M^l`` on that eigenspace (``x_i^l = M^l x_i``)
``s``           ``w^l = s_l(Σ) α``: the implicit weight's polynomial
``r``           ``1 − μ s``: the residual factor, ``w^l − w* = −r_l(Σ) w*`` when ``σ = 0``
``sigma``       the noise level ``σ_τ`` of the sequence
==============  ==========================================================

Checked against the model's forward pass on concrete data in ``proofs/gdpp_spectral.py`` and
``tests/baselines/test_gdpp_fit.py`` (the independent route: :func:`numerics.models.predict`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import sympy as sp

from ._bridge import Exported, export
from ._gdpp import derive_gdpp, mu
from ._recursion import derive_recursion, token_form
from .matexpr import (
    coefficient,
    is_zero,
    replace_adjacent,
    scalar_coefficient,
    simplify_matexpr,
)
from .symbols import (
    A,
    M,
    Sigma,
    a,
    alpha,
    b,
    c,
    d,
    delta,
    lam,
    omega_xx,
    omega_yx,
    symmetric,
    u,
    w,
    x,
    y,
)

n = sp.Symbol("n", integer=True, positive=True)
X_data = sp.MatrixSymbol("X", n, d)
Y_data = sp.MatrixSymbol("Y", n, 1)
xi = sp.MatrixSymbol("xi", n, 1)
m_s, s_s, r_s, sigma = sp.symbols("m s r sigma")


class GdppSpectralSymbols(NamedTuple):
    r"""Symbols of the GD++ spectral loss (table in this module's docstring): the per-eigenvalue ``m, s, r`` and noise ``σ``."""

    m_s: sp.Symbol
    s_s: sp.Symbol
    r_s: sp.Symbol
    sigma: sp.Symbol


GDPP_SPECTRAL_SYMBOLS = GdppSpectralSymbols(m_s, s_s, r_s, sigma)
#: Summing bilinear forms over the context tokens (docs/model.md: Σ, α, λ).
TOKEN_SUMS = {
    (X_data.T, X_data): Sigma,
    (X_data.T, Y_data): alpha,
    (Y_data.T, X_data): alpha.T,
    (Y_data.T, Y_data): lam,
}


@dataclass(frozen=True)
class GdppSpectral:
    r"""The derived objects (see the module docstring)."""

    blocks: tuple[sp.MatrixExpr, sp.MatrixExpr, sp.MatrixExpr, sp.MatrixExpr]  # A, b, c, δ of G^l
    Sigma_l: sp.MatrixExpr  # Σ^l in (M, u, a, w; Σ, α, λ)
    alpha_l: sp.MatrixExpr  # α^l in (M, u, a, w; Σ, α, λ)
    m_next: sp.Expr
    s_next: sp.Expr
    r_next: sp.Expr
    noise_cov: sp.MatrixExpr  # E[Xᵀ ξ ξᵀ X] with E[ξ ξᵀ] = σ² I
    loss: sp.Expr  # ℓ(μ) in (μ, r, s, σ)
    residuals: tuple[sp.Expr, ...]  # ρ_k with ℓ = ½ Σ_k ρ_k² (for Gauss-Newton fits)


def _gdpp_blocks() -> tuple[sp.MatrixExpr, sp.MatrixExpr, sp.MatrixExpr, sp.MatrixExpr]:
    """``A, b, c, δ`` of a GD++ layer, read off its derived token rule as coefficients."""
    g = derive_gdpp()
    A_ = simplify_matexpr(coefficient(g.x_next, x, (y,)) - sp.Identity(d))
    b_ = coefficient(g.x_next, y, (x,))
    c_ = simplify_matexpr(coefficient(g.y_next, x, (y,)).T)
    delta_ = simplify_matexpr(coefficient(g.y_next, y, (x,)) - sp.Identity(1))
    return A_, b_, c_, delta_


def _at_eigenspace(expr: sp.MatrixExpr) -> sp.MatrixExpr:
    """Restrict to an eigenspace: ``Σ ↦ μ I, M ↦ m I, u ↦ 0, a ↦ 1, w ↦ s α`` (powers of ``c I`` become ``c^k I``)."""
    I = sp.Identity(d)
    rep = {Sigma: mu * I, M: m_s * I, u: sp.ZeroMatrix(d, 1), a: sp.Identity(1), w: s_s * alpha}
    e = simplify_matexpr(symmetric(expr).xreplace(rep))
    e = e.xreplace(
        {
            p: p.base.args[0] ** p.exp * I
            for p in e.atoms(sp.MatPow)
            if isinstance(p.base, sp.MatMul) and p.base.args[-1] == I
        }
    )
    return simplify_matexpr(e)


def _gaussian_expectation(poly: sp.Expr, variances: dict[sp.Symbol, sp.Expr]) -> sp.Expr:
    r"""``E[poly]`` for independent centred Gaussians with the given variances: ``E z^k = v^{k/2} (k−1)!!`` (k even)."""
    p = sp.Poly(sp.expand(poly), *variances)
    total = sp.Integer(0)
    for powers, coeff in p.terms():
        term = coeff
        for (_z, v), k in zip(variances.items(), powers, strict=True):
            term *= 0 if k % 2 else v ** (k // 2) * sp.factorial2(k - 1)
        total += term
    return sp.factor(total)


@cache
def derive_gdpp_spectral() -> GdppSpectral:
    r"""Derive the per-eigenvalue GD++ recursion and expected loss (module docstring)."""
    A_, b_, c_, delta_ = _gdpp_blocks()
    # Layer-l context statistics from the Theorem 4.1 token form, summed over tokens.
    Xl_T, Yl_T = token_form(X_data.T, Y_data.T)
    Sigma_l = symmetric(replace_adjacent(simplify_matexpr(Xl_T * Xl_T.T), TOKEN_SUMS))
    alpha_l = symmetric(replace_adjacent(simplify_matexpr(Xl_T * Yl_T.T), TOKEN_SUMS))
    at_l = {Sigma: Sigma_l, alpha: alpha_l}
    rec = derive_recursion()
    rep = {
        A: A_.xreplace(at_l),
        b: b_.xreplace(at_l),
        c: c_.xreplace(at_l),
        delta: delta_.xreplace(at_l),
    }
    M1, u1, a1, w1 = (
        _at_eigenspace(e.xreplace(rep)) for e in (rec.M_next, rec.u_next, rec.a_next, rec.w_next)
    )
    if not (is_zero(u1) and is_zero(a1 - sp.Identity(1))):
        raise AssertionError(f"GD++ eigen ansatz does not close: u' = {u1}, a' = {a1}")
    m_next = sp.factor(scalar_coefficient(M1, sp.Identity(d)))
    s_next = sp.expand(scalar_coefficient(w1, alpha))
    # Residual factor r = 1 − μ s (a definition); its update from s_next by substituting s = (1 − r)/μ.
    r_next = sp.factor(sp.expand((1 - mu * s_next).xreplace({s_s: (1 - r_s) / mu})))
    # Loss: the noise covariance E[Xᵀ ξ ξᵀ X] from E[ξ ξᵀ] = σ² I, then XᵀX ↦ Σ.
    cov = replace_adjacent(X_data.T * xi * xi.T * X_data, {(xi, xi.T): sigma**2 * sp.Identity(n)})
    noise_cov = symmetric(replace_adjacent(cov, TOKEN_SUMS))
    eta_var = scalar_coefficient(_at_eigenspace(noise_cov), sp.Identity(d))
    # Per eigen-direction: ŷ − y_t = γ (s (μ β + η) − β) (α = Σ w_τ + Xᵀ ξ on the eigenspace).
    gam, beta, eta = sp.symbols("gamma beta eta")
    err = gam * (s_s * (mu * beta + eta) - beta)
    half_sq = _gaussian_expectation(
        err**2 / 2, {gam: sp.Integer(1), beta: sp.Integer(1), eta: eta_var}
    )
    # The noiseless part in terms of r (substituting s = (1 − r)/μ), the noise part in s.
    noiseless = sp.expand(half_sq.xreplace({sigma: 0}))
    loss = sp.expand(sp.cancel(noiseless.xreplace({s_s: (1 - r_s) / mu}))) + sp.expand(
        half_sq - noiseless
    )
    return GdppSpectral(
        (A_, b_, c_, delta_),
        Sigma_l,
        alpha_l,
        m_next,
        s_next,
        r_next,
        noise_cov,
        loss,
        _square_roots(loss),
    )


def _square_roots(loss: sp.Expr) -> tuple[sp.Expr, ...]:
    r"""Residuals ``ρ_k`` with ``ℓ = ½ Σ_k ρ_k²``: the square root of each term of ``2ℓ``.

    Roots are taken with ``μ, σ > 0`` and ``r, s`` real, then ``|z| ↦ z`` (a sign choice that leaves
    ``ρ_k²`` unchanged and keeps ``ρ_k`` smooth); the sum of squares is checked to give ``2ℓ`` back.
    """
    real = {
        mu: sp.Symbol("mu", positive=True),
        sigma: sp.Symbol("sigma", positive=True),
        r_s: sp.Symbol("r", real=True),
        s_s: sp.Symbol("s", real=True),
    }
    back = {v: k for k, v in real.items()}
    roots = tuple(
        sp.sqrt(t.xreplace(real)).replace(sp.Abs, lambda z: z).xreplace(back)
        for t in sp.Add.make_args(sp.expand(2 * loss))
    )
    if sp.expand(sum(q**2 for q in roots) - 2 * loss) != 0:
        raise AssertionError(f"residuals {roots} do not square to 2ℓ = {2 * loss}")
    return roots


@cache
def gdpp_spectral_rule() -> Exported:
    r"""Bridge export ``(μ, m, s, r, ω_xx, ω_yx) ↦ (m', s', r')``: one GD++ layer on one eigenvalue (elementwise)."""
    g = derive_gdpp_spectral()
    return export(
        "gdpp_spectral_step",
        (mu, m_s, s_s, r_s, omega_xx, omega_yx),
        (g.m_next, g.s_next, g.r_next),
    )


@cache
def gdpp_spectral_loss_rule() -> Exported:
    r"""Bridge export ``(μ, s, r, σ) ↦ ℓ = ½ (r² + σ² μ s²)``: expected loss of one eigen-direction given ``X``."""
    return export("gdpp_spectral_loss", (mu, s_s, r_s, sigma), (derive_gdpp_spectral().loss,))


@cache
def gdpp_spectral_residual_rule() -> Exported:
    r"""Bridge export ``(μ, s, r, σ) ↦ (ρ_1, …)`` with ``ℓ = ½ Σ_k ρ_k²`` (``ρ = (r, σ √μ s)``, derived)."""
    return export(
        "gdpp_spectral_residuals", (mu, s_s, r_s, sigma), derive_gdpp_spectral().residuals
    )
