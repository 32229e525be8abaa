r"""One set of names for the symbolic half, shared with the numeric half.

Block-level symbols are SymPy ``MatrixSymbol`` objects of symbolic size ``d``; scalars that
enter matrix products (``a``, ``delta``, ``lam``, ``rho``, ``y``) are ``1 \times 1`` matrices so
that every product is a ``MatMul``.  A symbol that shadows a numeric quantity carries ``_sym``
where both appear in one module.

The layer and its implicit state:

=============  ==============================================  ==================
symbol         meaning (docs/model.md)                         shape
=============  ==============================================  ==================
``M, u, a, w`` implicit state of Theorem 4.1 at layer ``l``     d×d, d×1, 1×1, d×1
``A, b, c``    blocks of ``G = Σ_k P_k E Q_k``                 d×d, d×1, d×1
``delta``      bottom-right block of ``G``                     1×1
``x, y``       a context token ``(x_i, y_i)`` at layer 0       d×1, 1×1
``E_sym``      context Gram ``E = Σ_j e_j e_jᵀ``               (d+1)×(d+1)
``G_sym``      the layer matrix ``G``                          (d+1)×(d+1)
=============  ==============================================  ==================

The context statistics and the diagonal parametrisation; the numeric half uses the same names:

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

from .matexpr import simplify_matexpr

d = sp.Symbol("d", integer=True, positive=True)

M = sp.MatrixSymbol("M", d, d)
u = sp.MatrixSymbol("u", d, 1)
a = sp.MatrixSymbol("a", 1, 1)
w = sp.MatrixSymbol("w", d, 1)

A = sp.MatrixSymbol("A", d, d)
b = sp.MatrixSymbol("b", d, 1)
c = sp.MatrixSymbol("c", d, 1)
delta = sp.MatrixSymbol("delta", 1, 1)

x = sp.MatrixSymbol("x", d, 1)
y = sp.MatrixSymbol("y", 1, 1)

STATE = (M, u, a, w)
BLOCKS = (A, b, c, delta)

E_sym = sp.MatrixSymbol("E", d + 1, d + 1)
G_sym = sp.MatrixSymbol("G", d + 1, d + 1)

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
    out = (simplify_matexpr(expr) if is_mat else expr).xreplace(
        {Sigma.T: Sigma, Sigma_l.T: Sigma_l}
    )
    return simplify_matexpr(out) if is_mat else out
