r"""Attention weights ``(W_Q, W_K, W_V, W_O)`` of one softmax-free head as universal ``(P, Q)``, derived.

A linear-attention head as code bases write it, with a value scale ``s`` and an output mask ``Π``
(``Π = I`` for the plain layer, ``Π = e_y e_yᵀ`` for a layer that updates only the ``y`` coordinate):

* **row** convention (``h @ W``: Haiku, Flax, ``torch.nn.Linear`` weights transposed).  Token ``i`` is
  a row ``r_i = h_iᵀ`` (``1 × (d+1)``); ``W_Q, W_K, W_V`` are ``(d+1) × K`` and ``W_O`` is ``K × (d+1)``:

  .. math::  \Delta r_i = s \sum_{j \le n} (r_i W_Q)(r_j W_K)^\top \, (r_j W_V)\, W_O\, Π .

* **column** convention (``W h``).  Token ``i`` is a column ``h_i``; ``W_Q, W_K, W_V`` are
  ``K × (d+1)`` and ``W_O`` is ``(d+1) × K``:

  .. math::  \Delta h_i = s\, Π\, W_O \sum_{j \le n} (W_V h_j)\,(W_K h_j)^\top (W_Q h_i) .

:func:`derive_attention_head` writes these products as matrix expressions, turns the row form into
a column update by transposition, sums over the context by replacing the adjacent pair
``(h_j, h_jᵀ)`` with ``E = Σ_j h_j h_jᵀ`` and splits the single product at ``E``: the factors on
the left are ``P``, those on the right (before ``h_i``) are ``Q``, so that ``Δh_i = P E Q h_i``, the
head of the layer rule in :mod:`.layer`.  A multi-head layer sums its heads, so each head gives one
pair ``(P_k, Q_k)``.  :func:`derive_attention_inverse` solves the derived ``P, Q`` for ``W_O, W_Q``
with ``K = d+1`` and the choice ``W_K = W_V = I`` (``s`` and ``Π = I`` kept as given).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from ._bridge import Exported, export
from .matexpr import is_zero, replace_adjacent, simplify_matexpr
from .symbols import E_sym, d

CONVENTIONS = ("row", "column")
_D1 = d + 1
K = sp.Symbol("K", integer=True, positive=True)  # key (head) size
s = sp.Symbol("s")  # value scale
Pi = sp.MatrixSymbol("Pi", _D1, _D1)  # output mask
h = sp.MatrixSymbol("h", _D1, 1)  # the token being updated, as a column
_hj = sp.MatrixSymbol("hj", _D1, 1)  # a context token (summed over j), as a column
_rj = sp.MatrixSymbol("rj", 1, _D1)  # the same context token as a row
_P = sp.MatrixSymbol("P", _D1, _D1)
_Q = sp.MatrixSymbol("Q", _D1, _D1)


def weight_symbols(convention: str, key: sp.Expr = K) -> dict[str, sp.MatrixSymbol]:
    """``W_Q, W_K, W_V, W_O`` with the shapes of ``convention`` and key size ``key``."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {', '.join(CONVENTIONS)}; got {convention!r}")
    inner, outer = ((_D1, key), (key, _D1)) if convention == "row" else ((key, _D1), (_D1, key))
    return {name: sp.MatrixSymbol(name, *inner) for name in ("W_Q", "W_K", "W_V")} | {
        "W_O": sp.MatrixSymbol("W_O", *outer)
    }


def attention_update(convention: str, W: dict[str, sp.MatrixExpr]) -> sp.MatrixExpr:
    r"""``Δh_i`` (a column) for one context token ``j``, written as the code base writes it."""
    WQ, WK, WV, WO = W["W_Q"], W["W_K"], W["W_V"], W["W_O"]
    if convention == "row":
        r_i = h.T
        q, k, v = r_i * WQ, _rj * WK, s * _rj * WV
        return (q * k.T * v * WO * Pi).T  # the row update, as a column
    q, k, v = WQ * h, WK * _hj, s * WV * _hj
    return Pi * WO * v * k.T * q


def _split_at(
    term: sp.MatrixExpr, middle: sp.MatrixSymbol, last: sp.MatrixSymbol
) -> tuple[sp.MatrixExpr, sp.MatrixExpr]:
    """``(left, right)`` with ``term = left · middle · right · last`` for a single product."""
    if not isinstance(term, sp.MatMul):
        raise ValueError(f"expected a single matrix product, got {term}")
    scalars = [f for f in term.args if not getattr(f, "is_Matrix", False)]
    mats = [f for f in term.args if getattr(f, "is_Matrix", False)]
    if mats.count(middle) != 1 or mats[-1] != last:
        raise ValueError(f"{term} is not of the form left * {middle} * right * {last}")
    k = mats.index(middle)
    return sp.MatMul(*scalars, *mats[:k]).doit(), sp.MatMul(*mats[k + 1 : -1]).doit()


@dataclass(frozen=True)
class AttentionHead:
    """The derived universal form of one head: ``Δh = P E Q h``; ``identity_holds`` is the exact check."""

    convention: str
    weights: dict[str, sp.MatrixSymbol]
    update: sp.MatrixExpr
    P: sp.MatrixExpr
    Q: sp.MatrixExpr
    identity_holds: bool


@cache
def derive_attention_head(convention: str) -> AttentionHead:
    r"""Derive ``P, Q`` of one head in ``convention`` (see the module docstring)."""
    W = weight_symbols(convention)
    one = attention_update(convention, W)
    summed = replace_adjacent(one, {(_rj.T, _rj): E_sym, (_hj, _hj.T): E_sym})
    P, Q = _split_at(simplify_matexpr(summed), E_sym, h)
    return AttentionHead(convention, W, summed, P, Q, is_zero(P * E_sym * Q * h - summed))


def _solve_single(expr: sp.MatrixExpr, var: sp.MatrixSymbol, rhs: sp.MatrixExpr) -> sp.MatrixExpr:
    r"""Solve ``expr = rhs`` for ``var`` when ``expr`` is ``c · var`` or ``c · varᵀ`` (``c`` a scalar)."""
    expr = simplify_matexpr(expr)
    coeff, mats = expr.as_coeff_matrices() if isinstance(expr, sp.MatMul) else (sp.S.One, [expr])
    if mats == [var]:
        return simplify_matexpr(rhs / coeff)
    if mats == [var.T]:
        return simplify_matexpr((rhs / coeff).T)
    raise ValueError(
        f"cannot solve {expr} = {rhs} for {var}: not a scalar multiple of it or its transpose"
    )


@dataclass(frozen=True)
class AttentionInverse:
    """Weights with ``K = d+1``, ``W_K = W_V = I``, ``Π = I`` that give ``(P, Q)``; ``round_trip`` is the check."""

    convention: str
    W_Q: sp.MatrixExpr
    W_O: sp.MatrixExpr
    round_trip: bool


@cache
def derive_attention_inverse(convention: str) -> AttentionInverse:
    r"""Solve the derived ``P = P(W_O, W_V, s, Π)``, ``Q = Q(W_Q, W_K)`` for ``W_O, W_Q`` at ``W_K = W_V = Π = I``."""
    head = derive_attention_head(convention)
    W = weight_symbols(convention, _D1)
    fixed = {
        head.weights["W_K"]: sp.Identity(_D1),
        head.weights["W_V"]: sp.Identity(_D1),
        Pi: sp.Identity(_D1),
    }
    sq = {head.weights["W_Q"]: W["W_Q"], head.weights["W_O"]: W["W_O"]}
    P_at = simplify_matexpr(head.P.xreplace(fixed).xreplace(sq))
    Q_at = simplify_matexpr(head.Q.xreplace(fixed).xreplace(sq))
    WO = _solve_single(P_at, W["W_O"], _P)
    WQ = _solve_single(Q_at, W["W_Q"], _Q)
    back = {W["W_O"]: WO, W["W_Q"]: WQ}
    ok = is_zero(P_at.xreplace(back) - _P) and is_zero(Q_at.xreplace(back) - _Q)
    return AttentionInverse(convention, WQ, WO, ok)


@cache
def attention_rule(convention: str) -> Exported:
    """``(W_Q, W_K, W_V, W_O, s, Π) ↦ (P, Q)`` for one head in ``convention`` (2-D arrays)."""
    head = derive_attention_head(convention)
    w = head.weights
    return export(
        f"attention_{convention}", (w["W_Q"], w["W_K"], w["W_V"], w["W_O"], s, Pi), (head.P, head.Q)
    )


@cache
def attention_inverse_rule(convention: str) -> Exported:
    """``(P, Q, s) ↦ (W_Q, W_O)`` with ``K = d+1`` and ``W_K = W_V = I`` in ``convention`` (2-D arrays)."""
    inv = derive_attention_inverse(convention)
    return export(f"attention_inverse_{convention}", (_P, _Q, s), (inv.W_Q, inv.W_O))
