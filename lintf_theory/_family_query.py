r"""Theorem 4.1's conclusion for the linear-attention family: is ``ŷ`` linear in ``x_t``?

Decided on the literal layer (:func:`~lintf_theory._family.family_layer`) with every context entry,
every entry of ``x_t`` and every context token's gate a generator of a polynomial ring over QQ
(:func:`family_ring`): the gates stand for *any* function of the context tokens, which is what a
gate ``sigmoid(w_αᵀ e_i)`` of a context token is at every layer.  Under the default convention the
query reads ``S_n``, so its token moves as ``e_t ↦ (I + G_t) e_t`` with ``G_t = Σ_h S_n^h W_Q^h``
free of ``x_t``; its ``(M_t, w_t)`` then follow Lemma 4.3's ``M, w`` part
(:func:`~lintf_theory._variants.derive_query_recursion`) and ``ŷ = ⟨w_t^L, x_t⟩``
(:func:`decide_query_linearity`).

When the query also reads itself (``S_t = step(S_n, k_t, v_t)``), the extra term is cubic in
``x_t``; :func:`derive_self_reading` derives it and its factors in SymPy (``D = 3``, every weight a
symbol), so the condition for linearity is read off the factors: a product of polynomials vanishes
iff a factor does. A normalised query ``q_t/‖q_t‖`` makes ``ŷ`` homogeneous of degree 0 in ``x_t``
(:func:`derive_query_scale`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp
from sympy.polys.domains import QQ

from ._bridge import State
from ._family import (
    BETA_MEMBERS,
    FamilyHead,
    family_layer,
    family_query_matrix,
)
from ._variants import query_step
from .exact import rational_array


@dataclass(frozen=True)
class FamilyRing:
    r"""Ring tokens: ``Z`` (context rows, then one query), the ``x_t`` generators, per-layer gate
    generators."""

    R: Any
    Z: np.ndarray
    xt: list[Any]
    gates: list[
        Any
    ]  # [layer][head][row] -> (alpha, beta); None per layer for members without gates


def family_ring(
    member: str,
    n: int,
    d: int,
    layers: int,
    heads: int = 1,
    symbolic_context: bool = True,
    seed: int = 0,
) -> FamilyRing:
    r"""Generators for ``x_t`` and, if ``symbolic_context``, the data and each row's ``(α, β)`` per
    layer and head.

    Otherwise the context and the gates are random rationals from ``seed`` (gates in ``(0, 1]``).
    """
    D = d + 1
    rng = np.random.default_rng(seed + 1000)
    data = [f"x{j}_{k}" for j in range(n) for k in range(d)] + [f"y{j}" for j in range(n)]
    names = (data if symbolic_context else []) + [f"xt_{k}" for k in range(d)]
    gate_names = []
    for l in range(layers):
        for h in range(heads):
            for i in range(n + 1):
                if member == "gla":
                    gate_names += [f"a{l}_{h}_{i}_{k}" for k in range(D)]
                elif member in ("ssd", "gated_deltanet"):
                    gate_names.append(f"a{l}_{h}_{i}")
                if member in BETA_MEMBERS:
                    gate_names.append(f"b{l}_{h}_{i}")
    R, *gens = sp.ring(",".join(names + (gate_names if symbolic_context else [])), QQ)
    g = dict(zip(names + gate_names, gens, strict=False))
    if not symbolic_context:
        g.update(
            zip(data, ring_const(R, rational_array(rng, (len(data),), num=3, den=2)), strict=True)
        )
        g.update(
            zip(
                gate_names,
                ring_const(R, 1 / (1 + np.abs(rational_array(rng, (len(gate_names),))))),
                strict=True,
            )
        )
    rows = [[g[f"x{j}_{k}"] for k in range(d)] + [g[f"y{j}"]] for j in range(n)]
    xt = [g[f"xt_{k}"] for k in range(d)]
    Z = np.array(rows + [xt + [R.zero]], dtype=object)

    def gate(l: int, h: int, i: int) -> tuple[Any, Any]:
        alpha: Any = R.one
        if member == "gla":
            alpha = np.array([g[f"a{l}_{h}_{i}_{k}"] for k in range(D)], dtype=object)
        elif f"a{l}_{h}_{i}" in g:
            alpha = g[f"a{l}_{h}_{i}"]
        return alpha, g.get(f"b{l}_{h}_{i}", R.one)

    gated = member in ("ssd", "gla", *BETA_MEMBERS)
    gates = [
        [[gate(l, h, i) for i in range(n + 1)] for h in range(heads)] if gated else None
        for l in range(layers)
    ]
    return FamilyRing(R, Z, xt, gates)


def ring_const(R: Any, arr: Any) -> np.ndarray:
    """Rational constants (Fraction) as ring elements, elementwise."""
    return np.vectorize(lambda v: R(QQ(v.numerator, v.denominator)), otypes=[object])(
        np.asarray(arr, dtype=object)
    )


def random_heads(
    rng: np.random.Generator, R: Any, D: int, heads: int, gamma: Any = None
) -> list[FamilyHead]:
    """``heads`` heads with random rational ``W_Q, W_K, W_V`` (as ring constants) and RetNet
    ``γ``."""
    out = []
    for _ in range(heads):
        WQ, WK, WV = (ring_const(R, rational_array(rng, (D, D), num=2, den=2)) for _ in range(3))
        g = R(QQ(1, 2)) if gamma is None else gamma
        out.append(FamilyHead(WQ, WK, WV, gamma=g))
    return out


def _degrees(e: Any, idx: list[int]) -> set[int]:
    return {sum(m[i] for i in idx) for m in e.monoms()} if e else set()


@dataclass(frozen=True)
class QueryLinearity:
    r"""What :func:`decide_query_linearity` decided on ring tokens."""

    linear: bool  # ŷ is a homogeneous linear form in x_t
    w: list[Any]  # implicit weights ∂ŷ/∂x_t (ring elements, free of x_t when linear)
    matches_query_recursion: bool  # w equals Lemma 4.3's w-recursion driven by G_t^l
    context_free_of_query: bool  # no context token depends on x_t at any layer
    shares_last_token: (
        bool  # the query's G_t^l equals the last context token's S_n W_Q at every layer
    )


def decide_query_linearity(
    member: str,
    n: int = 3,
    d: int = 1,
    layers: int = 2,
    heads: int = 1,
    seed: int = 0,
    query_reads_itself: bool = False,
    symbolic_context: bool = True,
) -> QueryLinearity:
    r"""Run ``layers`` literal layers of ``member`` on ring tokens with random rational weights and
    decide.

    ``symbolic_context=False`` keeps only ``x_t`` symbolic (rational context and gates): fast for
    deep checks.
    """

    ring = family_ring(member, n, d, layers, heads, symbolic_context, seed)
    R, rng = ring.R, np.random.default_rng(seed)
    idx = [R.gens.index(g) for g in ring.xt]
    Z = ring.Z
    eye = np.array(
        [[R.one if i == j else R.zero for j in range(d)] for i in range(d)], dtype=object
    )
    st = State(
        eye, np.array([R.zero] * d, dtype=object), R.one, np.array([R.zero] * d, dtype=object)
    )
    free, shares, route = True, True, True
    for l in range(layers):
        hs = random_heads(rng, R, d + 1, heads)
        opts = dict(gates=ring.gates[l], query_reads_itself=query_reads_itself)
        Gt = family_query_matrix(member, hs, Z, n, gates=ring.gates[l])
        Z_next = family_layer(member, hs, Z, n, **opts)
        shares &= all(bool(v == 0) for v in Z_next[n - 1] - Z[n - 1] - Gt @ Z[n - 1])
        Mt, wt = query_step(st.M, st.w, Gt, "numpy")
        st = State(Mt, st.u, st.a, wt)
        Z = Z_next
        free &= not any(_degrees(e, idx) - {0} for e in np.ravel(Z[:n]))
    y_hat = -Z[n, -1]
    linear = _degrees(y_hat, idx) == {1}
    w = [y_hat.diff(g) for g in ring.xt]
    route = linear and all(bool(a == b) for a, b in zip(w, st.w, strict=True))
    return QueryLinearity(linear, w, route, free, shares)
