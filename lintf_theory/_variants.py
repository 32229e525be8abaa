r"""Reviewers' questions (docs/model.md): which changes to the layer keep the Theorem 4.1 token form.

The token form says: there is one context-dependent, query-free matrix ``T^l = [[M^l, u^l], [-w^lᵀ, a^l]]``
with ``e_i^l = T^l e_i`` for every context token and for the query ``(x_t, 0)``.  The plain layer acts on
every token as ``e ↦ (I + G) e`` with *one* ``G = Σ_k P_k E Q_k``, so ``T ↦ (I + G) T``
(:func:`~lintf_theory._recursion.derive_recursion`).  Two variants of the key sum are written literally
here as a *row-weighted* layer

.. math::  e_i^{l+1} = e_i^l + \sum_k P_k \Big(\sum_{j\le n} W_{ij}\, e_j^l e_j^{l\top}\Big) Q_k e_i^l ,

with ``W`` from :func:`attention_weights`:

* ``standard``: ``W_ij = 1`` (the paper's layer);
* ``key_decay``: ``W_ij = γ^{n-1-j}`` for every attending token (a per-layer scalar decay of the keys,
  by key position only); a key-independent ``γ_l`` multiplying all keys is ``P ↦ γ_l P``;
* ``causal``: context token ``i`` attends to ``j ≤ i``; the query attends to all ``n``;
* ``retnet``: causal with relative decay ``W_ij = γ^{i-j}`` (``j ≤ i``); the query sits at position ``n``.

Token ``i`` then moves by its own ``G_i = Σ_k P_k (Σ_j W_ij e_j e_jᵀ) Q_k``.  Derived here at block level:
the query's update ``(M x_t, -⟨w, x_t⟩) ↦ (I + G_t)(M x_t, -⟨w, x_t⟩)`` keeps its form and involves neither
``u`` nor ``a`` (:func:`derive_query_recursion`), so ``ŷ = ⟨w_t^L, x_t⟩`` stays linear in ``x_t`` whenever the
query's ``G_t^l`` is query-free, whatever the context tokens do.

A tokenwise quadratic feed-forward layer ``e ↦ e + W_2 (W_1 e)^{∘2}`` (:func:`quadratic_ffn`) breaks the
form: the second difference of the query's target along ``h`` is ``2β (kᵀ M h)^2`` for the feature
``y += β (kᵀ x)^2`` (:func:`derive_ffn_break`).  Exact counterexamples live in ``proofs/reviewers_*.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

import numpy as np
import sympy as sp

from ._bridge import _xp, export, split_blocks
from ._recursion import derive_recursion, token_form
from ._render import Statement
from .layer import apply_layer_block
from .matexpr import coefficient, is_zero, simplify_matexpr
from .symbols import A, M, a, b, c, d, delta, u, w, x

VARIANTS = ("standard", "key_decay", "causal", "retnet")


def attention_weights(kind: str, n: int, gamma: Any = 1, queries: int = 1) -> np.ndarray:
    r"""``W`` of shape ``(n + queries, n)``: row ``i`` weights the keys seen by token ``i`` (queries last).

    ``gamma`` may be a number, a :class:`fractions.Fraction`, a SymPy symbol or a polynomial-ring element.
    """
    if kind not in VARIANTS:
        raise ValueError(f"kind must be one of {', '.join(VARIANTS)}; got {kind!r}")
    if int(n) < 1 or int(queries) < 0:
        raise ValueError(f"need n >= 1 and queries >= 0, got n={n}, queries={queries}")
    one, zero = gamma**0, 0 * gamma
    rows = []
    for i in range(n + queries):
        pos = min(i, n)  # every query sits at position n (after the context)
        if kind == "standard":
            row = [one] * n
        elif kind == "key_decay":
            row = [gamma ** (n - 1 - j) for j in range(n)]
        elif kind == "causal":
            row = [one if (j <= i or i >= n) else zero for j in range(n)]
        else:
            row = [gamma ** (pos - j) if (j <= i or i >= n) else zero for j in range(n)]
        rows.append(row)
    return np.array(rows, dtype=object)


def token_G(P: Any, Q: Any, Z: Any, n: int, W: Any) -> list[Any]:
    r"""``G_i = Σ_k P_k (Σ_{j≤n} W_ij e_j e_jᵀ) Q_k`` for every row of ``Z`` (entry level, literal)."""
    C = Z[:n, :]
    out = []
    for i in range(Z.shape[0]):
        E_i = (C.T * W[i][None, :]) @ C
        G = P[0] @ E_i @ Q[0]
        for Pk, Qk in zip(P[1:], Q[1:], strict=True):
            G = G + Pk @ E_i @ Qk
        out.append(G)
    return out


def weighted_layer_forward(P: Any, Q: Any, Z: Any, n: int, W: Any) -> np.ndarray:
    r"""One row-weighted layer on every token of ``Z`` (``(n + queries, d+1)`` object or float array)."""
    if W.shape != (Z.shape[0], n):
        raise ValueError(f"W must have shape ({Z.shape[0]}, {n}) to match Z, got {W.shape}")
    Gs = token_G(P, Q, Z, n, W)
    return np.stack([Z[i] + Gs[i] @ Z[i] for i in range(Z.shape[0])])


def quadratic_ffn(Z: Any, W1: Any, W2: Any) -> np.ndarray:
    r"""Tokenwise ``e ↦ e + W_2 (W_1 e)^{∘2}`` (``W_1 (m, d+1)``, ``W_2 (d+1, m)``) on every row of ``Z``."""
    H = Z @ W1.T
    return Z + (H * H) @ W2.T


def square_feature(d_: int, coord: int = 0, beta: Any = 1) -> tuple[np.ndarray, np.ndarray]:
    r"""``(W_1, W_2)`` of the feature ``y ↦ y + β x(coord)²``: ``W_1 = e_coordᵀ``, ``W_2 = β e_y``."""
    if not 0 <= coord < d_:
        raise ValueError(f"coord must be in [0, {d_ - 1}], got {coord}")
    W1 = np.array([[1 if k == coord else 0 for k in range(d_ + 1)]], dtype=object)
    W2 = np.array([[0] for _ in range(d_)] + [[beta]], dtype=object)
    return W1, W2


def shared_tuple(Z0: Any, Z1: Any) -> sp.Matrix | None:
    r"""The one matrix ``T`` with ``Z1 = Z0 Tᵀ`` (every row ``e_i^1 = T e_i^0``), or ``None`` if none exists.

    Exact over QQ: ``T`` exists iff ``rank [Z0 | Z1] = rank Z0``; with ``rank Z0 = d + 1`` it is unique.
    """
    A0, A1 = sp.Matrix(Z0.tolist()), sp.Matrix(Z1.tolist())
    if A0.row_join(A1).rank() != A0.rank():
        return None
    sol = (A0.T * A0).LUsolve(A0.T * A1)
    return sol.T


# ---------------------------------------------------------------------------------------------
# Block level.
# ---------------------------------------------------------------------------------------------
k_sym = sp.MatrixSymbol("k", d, 1)
h_sym = sp.MatrixSymbol("h", d, 1)
beta_sym = sp.MatrixSymbol("beta", 1, 1)


class VariantSymbols(NamedTuple):
    r"""Symbols of the quadratic feed-forward block: key ``k``, hidden ``h`` (``d×1``) and scale ``β`` (``1×1``)."""

    k_sym: sp.MatrixSymbol
    h_sym: sp.MatrixSymbol
    beta_sym: sp.MatrixSymbol


VARIANT_SYMBOLS = VariantSymbols(k_sym, h_sym, beta_sym)


@dataclass(frozen=True)
class QueryRecursion:
    r"""The query alone under ``e ↦ (I + G_t) e``: ``M_t' , w_t'`` and whether ``u, a`` enter."""

    M_next: sp.MatrixExpr
    w_next: sp.MatrixExpr
    uses_u_or_a: bool
    matches_lemma_4_3: bool


@cache
def derive_query_recursion() -> QueryRecursion:
    """Apply ``e ↦ e + G e`` to the query ``(M x_t, -⟨w, x_t⟩)`` and read off the new ``(M, w)``."""
    qx, qy = apply_layer_block(*token_form(x, sp.ZeroMatrix(1, 1)))
    Mq = coefficient(qx, x, ())
    wq = simplify_matexpr((-coefficient(qy, x, ())).T)
    uses = bool({u, a} & (Mq.free_symbols | wq.free_symbols))
    r = derive_recursion()

    return QueryRecursion(Mq, wq, uses, is_zero(Mq - r.M_next) and is_zero(wq - r.w_next))


@cache
def query_recursion_rule():
    """Bridge export ``(M, w, A, b, c, δ) ↦ (M', w')`` of the query's own recursion."""
    q = derive_query_recursion()
    return export("query_step", (M, w, A, b, c, delta), (q.M_next, q.w_next))


def query_step(M_val: Any, w_val: Any, G: Any, backend: str = "numpy") -> tuple[Any, Any]:
    """One layer of the query's recursion with its own ``G_t`` (natural shapes, ``w (d,)``)."""
    xp = _xp(backend)
    A_, b_, c_, dl = split_blocks(G)
    f = getattr(query_recursion_rule(), backend)
    Mn, wn = f(
        M_val,
        xp.reshape(w_val, (-1, 1)),
        A_,
        xp.reshape(b_, (-1, 1)),
        xp.reshape(c_, (-1, 1)),
        xp.reshape(dl, (1, 1)),
    )
    return Mn, xp.reshape(wn, (-1,))


@dataclass(frozen=True)
class FfnBreak:
    r"""The feature ``y ↦ y + β (kᵀ x)²`` applied to a query in token form."""

    query_y: sp.MatrixExpr  # -wᵀ x + β (kᵀ M x)²
    second_difference: sp.MatrixExpr  # y(x+h) - 2 y(x) + y(x-h)


@cache
def derive_ffn_break() -> FfnBreak:
    """Second difference of the query target after the quadratic feature (zero for any linear form)."""

    def after(xq: sp.MatrixExpr) -> sp.MatrixExpr:
        qx, qy = token_form(xq, sp.ZeroMatrix(1, 1))
        return qy + beta_sym * (k_sym.T * qx) * (k_sym.T * qx)

    second = simplify_matexpr(after(x + h_sym) - 2 * after(x) + after(x - h_sym))
    return FfnBreak(simplify_matexpr(after(x)), second)


def variants_statements() -> list:

    q, f = derive_query_recursion(), derive_ffn_break()
    ref = "Reviewers' questions (attention variants, quadratic FFN)"
    return [
        Statement(
            ref, "Query alone under its own G_t (uses neither u nor a)", "M_t^{l+1}", q.M_next
        ),
        Statement(
            ref,
            "Query alone under its own G_t",
            "w_t^{l+1}",
            q.w_next,
            "So $\\hat y = \\langle w_t^L, x_t\\rangle$ whenever $G_t^l$ is query-free (causal masking, RetNet decay).",
        ),
        Statement(ref, "Quadratic feature y += beta (k^T x)^2 on the query", "y_t'", f.query_y),
        Statement(
            ref,
            "Its second difference along h (zero for a linear form)",
            "\\Delta_h^2 y_t'",
            f.second_difference,
        ),
    ]
