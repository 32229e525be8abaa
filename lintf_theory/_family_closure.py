r"""Lemma 4.3's question for the family: does the context's evolution close over a fixed set of
statistics?

For the paper's (non-causal) layer it does: every token moves by one ``I + G`` with ``G = P E Q``,
so the Gram matrix ``E`` and one tuple ``(M, u, a, w)`` carry the whole context from layer to layer.
A causal member moves context token ``i`` by its own ``T_i = I + Σ_h S_i^h W_Q^h``
(:func:`~lintf_theory._family.family_positions`), so the next layer's tokens are ``T_i e_i`` with
``n`` different matrices: the state is per position, and its size grows with ``n``.
:func:`swap_contexts` makes that exact: two contexts of two tokens with keys on orthogonal axes
whose final states ``S_n`` agree (the second swaps the tokens and rescales them by the decay ``c``
that the first token's contribution takes, ``e_1' = e_2/√c``, ``e_2' = √c e_1``), yet whose
next-layer states differ, so no map ``S_n^l ↦ S_n^{l+1}`` exists.  With ``c = 1`` (``causal``,
``deltanet``) the two contexts also share the Gram matrix ``E``, the paper's statistic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ._family import FamilyHead, family_layer, family_positions, family_states
from .exact import rational_array

#: The decay a first token's contribution takes when the second token arrives, with zero gate
# weights
#: (``sigmoid(0) = 1/2``), RetNet's ``γ = 1/4``, and ``1`` for the ungated members.
SWAP_DECAY = {
    "linear": 1,
    "causal": 1,
    "deltanet": 1,
    "retnet": sp.Rational(1, 4),
    "ssd": sp.Rational(1, 2),
    "gla": sp.Rational(1, 2),
    "gated_deltanet": sp.Rational(1, 2),
}


def distinct_positions(member: str, heads: list[FamilyHead], Z: Any, n: int, **options: Any) -> int:
    r"""How many different ``T_i`` the context rows of one layer use (``1`` means one shared
    tuple)."""
    Ts = family_positions(member, heads, Z, n, **options)
    distinct: list[Any] = []
    for T in Ts:
        if not any(bool((T == U).all()) for U in distinct):
            distinct.append(T)
    return len(distinct)


@dataclass(frozen=True)
class SwapCounterexample:
    r"""Two contexts with one final state at layer 0 and different final states at layer 1."""

    contexts: tuple[np.ndarray, np.ndarray]
    same_state: bool  # S_n^0 agree (every head)
    same_gram: bool  # E^0 agree
    next_states_differ: bool  # S_n^1 differ (some head)
    predictions_differ: bool  # ŷ after two layers differ, for one query


def swap_heads(member: str, seed: int, d: int = 2) -> list[FamilyHead]:
    r"""One head with keys on the ``x`` axes (``W_K = diag(I_d, 0)``), random ``W_Q, W_V`` and zero
    gate weights."""
    rng = np.random.default_rng(seed)
    D = d + 1
    WK = np.diag([1] * d + [0]).astype(object)
    WQ, WV = rational_array(rng, (D, D), num=2, den=2), rational_array(rng, (D, D), num=2, den=2)
    zero_a = np.zeros((D, D) if member == "gla" else (D,), dtype=object)
    return [
        FamilyHead(
            WQ,
            WK,
            WV,
            gamma=SWAP_DECAY["retnet"],
            w_alpha=zero_a,
            w_beta=np.zeros(D, dtype=object),
            beta=1,
        )
    ]


def swap_contexts(member: str, seed: int = 0, d: int = 2) -> SwapCounterexample:
    r"""The swap: ``(e_1, e_2)`` with ``x_1 ⊥ x_2`` against ``(e_2/√c, √c e_1)``, both with one
    query.

    Decides exactly (SymPy, in ``Q(√c)``) whether the final states agree at layer 0 and at layer 1.
    """
    rng = np.random.default_rng(seed + 7)
    c = sp.nsimplify(SWAP_DECAY[member])
    y = rational_array(rng, (2,), num=3, den=2, nonzero=True)
    e1 = np.array([sp.Integer(1)] + [sp.Integer(0)] * (d - 1) + [sp.Rational(y[0])], dtype=object)
    e2 = np.array(
        [sp.Integer(0), sp.Integer(1)] + [sp.Integer(0)] * (d - 2) + [sp.Rational(y[1])],
        dtype=object,
    )
    query = np.array(
        [*(sp.Rational(v) for v in rational_array(rng, (d,), num=3, den=2, nonzero=True)), 0],
        dtype=object,
    )
    A = np.stack([e1, e2, query])
    B = np.stack([e2 / sp.sqrt(c), e1 * sp.sqrt(c), query])
    layer0, layer1 = swap_heads(member, seed), swap_heads(member, seed + 1)

    def final(Z: Any) -> list[Any]:
        return [
            np.vectorize(sp.nsimplify, otypes=[object])(family_states(member, h, Z, 2)[2])
            for h in layer0
        ]

    def simplify(arr: Any) -> Any:
        return np.vectorize(lambda v: sp.nsimplify(sp.expand(v)), otypes=[object])(arr)

    same = all(bool((a == b).all()) for a, b in zip(final(A), final(B), strict=True))
    gram = bool((simplify(A[:2].T @ A[:2]) == simplify(B[:2].T @ B[:2])).all())
    A1, B1 = (
        simplify(family_layer(member, layer0, A, 2)),
        simplify(family_layer(member, layer0, B, 2)),
    )
    SA = [simplify(family_states(member, h, A1, 2)[2]) for h in layer1]
    SB = [simplify(family_states(member, h, B1, 2)[2]) for h in layer1]
    differ = any(not bool((a == b).all()) for a, b in zip(SA, SB, strict=True))
    yA = sp.nsimplify(sp.expand(family_layer(member, layer1, A1, 2)[2, -1]))
    yB = sp.nsimplify(sp.expand(family_layer(member, layer1, B1, 2)[2, -1]))
    return SwapCounterexample((A, B), same, gram, differ, yA != yB)
