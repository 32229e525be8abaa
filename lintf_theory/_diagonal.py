r"""The diagonal reparametrisation of docs/model.md (Section 5 of the paper), derived at block level.

A DIAG head is ``P_k = diag(p_{x,k} I_d, p_{y,k})``, ``Q_k = diag(q_{x,k} I_d, q_{y,k})``.  With the
context Gram ``E = Σ_j e_j e_jᵀ = [[Σ, α], [αᵀ, λ]]`` (itself derived from ``e = (x, y)`` by summing
``e eᵀ`` over tokens), ``block_collapse`` gives

.. math::

    G = \sum_k P_k E Q_k = \begin{bmatrix} \omega_{xx}\Sigma & \omega_{xy}\alpha \\
        \omega_{yx}\alpha^\top & \omega_{yy}\lambda \end{bmatrix},\qquad
    \omega_{xx} = \sum_k p_{x,k} q_{x,k},\ \omega_{xy} = \sum_k p_{x,k} q_{y,k},\
    \omega_{yx} = \sum_k p_{y,k} q_{x,k},\ \omega_{yy} = \sum_k p_{y,k} q_{y,k},

and the layer ``e ↦ e + G e`` becomes

.. math::

    x' = x + \omega_{xx}\Sigma x + \omega_{xy}\,\alpha\, y,\qquad
    y' = y + \omega_{yx}\langle\alpha, x\rangle + \omega_{yy}\lambda y .

The ω's are read off as the scalar coefficient of each block of ``E`` in the matching block of
``G`` (:func:`~lintf_theory.matexpr.scalar_coefficient`), never typed.  For one head
``ω_xx ω_yy − ω_xy ω_yx`` expands to zero; for two heads it does not (:func:`two_head_counterexample`).

Symbols: see :mod:`.symbols`.  ``y`` and ``λ`` are ``1×1`` matrices here.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache

import sympy as sp

from ._bridge import Exported, export
from .layer import apply_layer_block
from .matexpr import is_zero, replace_adjacent, scalar_coefficient, simplify_matexpr
from .symbols import OMEGAS, A, Sigma, alpha, b, c, d, delta, lam, x, y

OMEGA_NAMES = ("omega_xx", "omega_xy", "omega_yx", "omega_yy")


def derive_context_gram() -> sp.BlockMatrix:
    r"""``E = Σ_j e_j e_jᵀ`` in blocks: form ``e eᵀ`` for ``e = (x, y)`` and sum over tokens.

    Summing is the replacement of the adjacent pairs ``(x, xᵀ) ↦ Σ``, ``(x, yᵀ) ↦ α``,
    ``(y, xᵀ) ↦ αᵀ``, ``(y, yᵀ) ↦ λ`` (definitions of docs/model.md).
    """
    e = sp.BlockMatrix([[x], [y]])
    outer = sp.block_collapse(e * e.T)
    rules = {(x, x.T): Sigma, (x, y.T): alpha, (y, x.T): alpha.T, (y, y.T): lam}
    return sp.BlockMatrix(
        [[replace_adjacent(outer.blocks[i, j], rules) for j in range(2)] for i in range(2)]
    )


def diag_head(p_x: sp.Expr, p_y: sp.Expr) -> sp.BlockMatrix:
    r"""``diag(p_x I_d, p_y)`` as a block matrix of symbolic size ``d+1``."""
    return sp.BlockMatrix(
        [[p_x * sp.Identity(d), sp.ZeroMatrix(d, 1)], [sp.ZeroMatrix(1, d), p_y * sp.Identity(1)]]
    )


def head_symbols(H: int) -> tuple[tuple[sp.Symbol, ...], ...]:
    r"""``(p_x, p_y, q_x, q_y)``, each a tuple of ``H`` scalars ``p_{x,1} … p_{x,H}``."""
    if int(H) < 1:
        raise ValueError(f"number of heads H must be >= 1, got {H}")
    return tuple(
        tuple(sp.Symbol(f"{name}_{k}") for k in range(1, H + 1))
        for name in ("p_x", "p_y", "q_x", "q_y")
    )


@dataclass(frozen=True)
class DiagonalLayer:
    r"""A DIAG layer with ``H`` heads, derived.

    ``omegas``: the four ω's as sums over heads (``ω_xx, ω_xy, ω_yx, ω_yy``); ``G_blocks``: the
    blocks ``(A, b, c, δ)`` of ``G`` in the ω symbols; ``x_next, y_next``: the layer on a token
    ``(x, y)`` in the ω symbols.
    """

    H: int
    heads: tuple[tuple[sp.Symbol, ...], ...]
    omegas: tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr]
    G_blocks: tuple[sp.MatrixExpr, sp.MatrixExpr, sp.MatrixExpr, sp.MatrixExpr]
    x_next: sp.MatrixExpr
    y_next: sp.MatrixExpr


@cache
def derive_diagonal(H: int = 1) -> DiagonalLayer:
    r"""Derive ``G = Σ_k P_k E Q_k`` for ``H`` DIAG heads and the diagonal layer rule."""
    heads = head_symbols(H)
    E = derive_context_gram()
    G = None
    for px, py, qx, qy in zip(*heads, strict=True):
        Gk = sp.block_collapse(diag_head(px, py) * E * diag_head(qx, qy))
        G = Gk if G is None else sp.block_collapse(G + Gk)
    # Each block of G is a scalar multiple of the matching block of E; the scalar is the omega.
    omegas = tuple(
        scalar_coefficient(G.blocks[i, j], E.blocks[i, j])
        for i, j in ((0, 0), (0, 1), (1, 0), (1, 1))
    )
    G_omega = [
        om * E.blocks[i, j]
        for om, (i, j) in zip(OMEGAS, ((0, 0), (0, 1), (1, 0), (1, 1)), strict=True)
    ]
    sub = dict(zip(OMEGAS, omegas, strict=True))
    for blk, (i, j) in zip(G_omega, ((0, 0), (0, 1), (1, 0), (1, 1)), strict=True):
        if not is_zero(blk.xreplace(sub) - G.blocks[i, j]):
            raise AssertionError(f"G block {(i, j)} is not of diagonal form")
    # G's blocks: A (d×d), b (d×1), cᵀ (1×d) and δ; c itself is the transpose of the (1, 0) block.
    A_, b_, cT_, dl_ = G_omega
    blocks = (A_, b_, simplify_matexpr(cT_.T), dl_)
    x_l, y_l = apply_layer_block(x, y)
    rep = dict(zip((A, b, c, delta), blocks, strict=True))
    x_next = simplify_matexpr(x_l.xreplace(rep))
    y_next = simplify_matexpr(y_l.xreplace(rep))
    return DiagonalLayer(H, heads, omegas, blocks, x_next, y_next)  # type: ignore[arg-type]


def omegas_as_sums() -> tuple[sp.Expr, ...]:
    r"""The ω's for any number of heads ``H``: ``Σ_{k=1}^H`` of the one-head coefficients.

    ``G`` is a sum over heads by definition, so each ω is the sum of the per-head ω derived
    for one head with indexed parameters ``p_x[k]``, … .
    """
    k, Hs = sp.symbols("k H", integer=True, positive=True)
    one = derive_diagonal(1)
    idx = {s: sp.IndexedBase(s.name[:-2])[k] for s in (v[0] for v in one.heads)}
    return tuple(sp.Sum(om.xreplace(idx), (k, 1, Hs)) for om in one.omegas)


def one_head_residual(H: int = 1) -> sp.Expr:
    r"""``ω_xx ω_yy − ω_xy ω_yx`` expanded in the head parameters (identically 0 iff ``H = 1``)."""
    oxx, oxy, oyx, oyy = derive_diagonal(H).omegas
    return sp.expand(oxx * oyy - oxy * oyx)


def two_head_counterexample() -> tuple[dict[sp.Symbol, Fraction], Fraction]:
    r"""Two heads with ``ω_xx ω_yy ≠ ω_xy ω_yx``, found by scanning 0/1 head parameters.

    Returns the assignment (exact rationals) and the value of ``ω_xx ω_yy − ω_xy ω_yx``.  The
    scan is in lexicographic order, so the result is deterministic.
    """
    res = one_head_residual(2)
    syms = [s for group in derive_diagonal(2).heads for s in group]
    for code in range(1 << len(syms)):
        vals = {s: Fraction((code >> i) & 1) for i, s in enumerate(syms)}
        v = res.xreplace(
            {s: sp.Rational(int(q.numerator), int(q.denominator)) for s, q in vals.items()}
        )
        if v != 0:
            return vals, Fraction(int(v.p), int(v.q))
    raise AssertionError("no two-head counterexample found")  # pragma: no cover


@cache
def diagonal_rule() -> Exported:
    r"""Bridge export ``(Σ, α, λ, ω_xx, ω_xy, ω_yx, ω_yy, x, y) ↦ (x', y')``; ``λ, y`` are ``(1,1)``, ``x`` is ``(d,1)``."""
    r = derive_diagonal(1)
    return export("diagonal_layer", (Sigma, alpha, lam, *OMEGAS, x, y), (r.x_next, r.y_next))


@cache
def omega_rule(H: int) -> Exported:
    r"""Bridge export ``(p_{x,1..H}, p_{y,1..H}, q_{x,1..H}, q_{y,1..H}) ↦ (ω_xx, ω_xy, ω_yx, ω_yy)``."""
    r = derive_diagonal(H)
    return export(f"omegas_H{H}", tuple(s for g in r.heads for s in g), r.omegas)


def layer_omegas(
    px: object, py: object, qx: object, qy: object
) -> tuple[object, object, object, object]:
    r"""``(ω_xx, ω_xy, ω_yx, ω_yy)`` of one layer from its ``H`` heads (sequences of length ``H``), via the bridge."""
    H = len(px)  # type: ignore[arg-type]
    if not (len(py) == len(qx) == len(qy) == H):  # type: ignore[arg-type]
        raise ValueError("px, py, qx, qy must have the same length H (one entry per head)")
    return tuple(omega_rule(H).numpy(*px, *py, *qx, *qy))  # type: ignore[misc]
