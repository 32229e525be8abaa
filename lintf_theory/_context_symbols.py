r"""Symbols of the context statistics and of the diagonal parametrisation (docs/model.md).

Shared by :mod:`._diagonal`, :mod:`._lemma44` and :mod:`._gdpp`; the numeric half uses the same
names (``Sigma, alpha, lam, rho, omega_xx, ...``).

=====================  ==================================================  ===========
symbol                 meaning                                             shape
=====================  ==================================================  ===========
``Sigma``              ``Σ = Σ_i x_i x_iᵀ`` (layer-0 context)              d×d
``alpha``              ``α = Σ_i y_i x_i``                                 d×1
``lam``                ``λ = Σ_i y_i²`` (block of ``E``)                   1×1
``Sigma_l, lam_l``     ``Σ^l, λ^l``: the same at layer ``l``               d×d, scalar
``w_star``             OLS weight ``w* = Σ^{-1} α``                        d×1
``rho``                residual energy ``ρ = Σ_i r_i²``                    scalar
``a_s``                the target scale ``a^l`` as a commuting scalar      scalar
``omega_xx .. yy``     diagonal layer parameters (sums over heads)         scalars
=====================  ==================================================  ===========

Names are Python identifiers on purpose: ``lambdify`` replaces any other name by a
*commutative* scalar ``Dummy``, which silently reorders matrix products in the export.

``Σ`` is symmetric: derivations replace ``Σᵀ`` by ``Σ`` with :func:`symmetric`.
"""

from __future__ import annotations

import sympy as sp

from ._matexpr import simplify_matexpr
from ._symbols import d

Sigma = sp.MatrixSymbol("Sigma", d, d)
alpha = sp.MatrixSymbol("alpha", d, 1)
lam = sp.MatrixSymbol("lam", 1, 1)
Sigma_l = sp.MatrixSymbol("Sigma_l", d, d)
lam_l = sp.Symbol("lam_l")
w_star = sp.MatrixSymbol("w_star", d, 1)
rho = sp.Symbol("rho")
a_s = sp.Symbol("a")
omega_xx, omega_xy, omega_yx, omega_yy = sp.symbols("omega_xx omega_xy omega_yx omega_yy")
OMEGAS = (omega_xx, omega_xy, omega_yx, omega_yy)


def symmetric(expr: sp.Basic) -> sp.Basic:
    r"""Use ``Σ = Σᵀ`` and ``Σ^l = (Σ^l)ᵀ`` (Gram matrices)."""
    is_mat = bool(getattr(expr, "is_Matrix", False))
    out = (simplify_matexpr(expr) if is_mat else expr).xreplace({Sigma.T: Sigma, Sigma_l.T: Sigma_l})
    return simplify_matexpr(out) if is_mat else out
