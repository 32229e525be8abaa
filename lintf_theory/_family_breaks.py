r"""Where Theorem 4.1's conclusion breaks in the family: a self-reading or a normalised query.

When the query also reads itself (``S_t = step(S_n, k_t, v_t)``), the extra term is cubic in
``x_t``; :func:`derive_self_reading` derives it and its factors in SymPy (``D = 3``, every weight a
symbol), so the condition for linearity is read off the factors: a product of polynomials vanishes
iff a factor does. A gate that the query takes from its own token breaks linearity even where the
cubic term vanishes (:func:`gate_from_query_counterexample`), and a normalised query ``q_t/‖q_t‖``
makes ``ŷ`` homogeneous of degree 0 in ``x_t`` (:func:`derive_query_scale`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import sympy as sp

from ._family import BETA_MEMBERS, FamilyHead, family_layer, family_step, sigmoid
from .exact import rational_array


# ---------------------------------------------------------------------------------------------
# The query reads itself: the extra term, in SymPy.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SelfReading:
    r"""``ŷ = ℓ(x_t) + c(x_t)`` when the query reads ``S_t``: ``c`` the part of degree 3 and its
    factors."""

    y_hat: sp.Expr
    linear_part: sp.Expr
    cubic_part: sp.Expr
    factors: tuple[sp.Expr, ...]  # non-constant factors of the cubic part
    xt: tuple[sp.Symbol, ...]


def self_reading_symbols(d: int = 2) -> dict[str, Any]:
    """The symbols of :func:`derive_self_reading`: ``WQ, WK, WV, S`` (``D × D``), ``xt``,
    ``alpha_t, beta_t``."""
    D = d + 1
    mats = {
        name: sp.Matrix(D, D, lambda i, j, name=name: sp.Symbol(f"{name}_{i}{j}"))
        for name in ("WQ", "WK", "WV", "S")
    }
    return dict(
        mats, xt=sp.symbols(f"xt_0:{d}"), alpha_t=sp.Symbol("alpha_t"), beta_t=sp.Symbol("beta_t")
    )


@cache
def derive_self_reading(member: str, d: int = 2) -> SelfReading:
    r"""``ŷ = −(S_t q_t)_y`` with ``S_t`` one update of a symbolic ``S_n`` by the query's own key
    and value.

    The query's gates are the symbols ``α_t, β_t`` (constant in ``x_t``); for ``retnet`` ``α_t = γ``
    is.
    """
    s = self_reading_symbols(d)
    xt = s["xt"]
    e = np.array([*xt, 0], dtype=object)
    arr = {k: np.array(s[k].tolist(), dtype=object) for k in ("WQ", "WK", "WV", "S")}
    k_, v_, q_ = arr["WK"] @ e, arr["WV"] @ e, arr["WQ"] @ e
    alpha = np.array([s["alpha_t"]] * (d + 1), dtype=object) if member == "gla" else s["alpha_t"]
    S_t = family_step(member, arr["S"], k_, v_, alpha, s["beta_t"])
    y_hat = sp.expand(-(S_t @ q_)[-1])
    poly = sp.Poly(y_hat, *xt)
    part = lambda deg: sp.Add(
        *[
            c * sp.prod([x**p for x, p in zip(xt, m)])  # noqa: E731
            for m, c in poly.terms()
            if sum(m) == deg
        ]
    )
    cubic = part(3)
    _, facs = sp.factor_list(cubic) if cubic != 0 else (0, [])
    factors = tuple(f for f, _ in facs if f.free_symbols)
    assert set(sum(m) for m in poly.monoms()) <= {1, 3}, (
        "the query's own update adds only degree-3 terms"
    )
    return SelfReading(y_hat, part(1), cubic, factors, tuple(xt))


def derive_query_scale(member: str, d: int = 2) -> tuple[sp.Expr, sp.Expr]:
    r"""``(ŷ(x_t), ŷ(c x_t))`` for a normalised query ``q_t/‖q_t‖`` reading a symbolic ``S_n``, ``c
    > 0``.

    Their difference simplifies to zero: ``ŷ`` is homogeneous of degree 0 in ``x_t``, never linear
    unless zero.
    """
    s = self_reading_symbols(d)
    c = sp.Symbol("c", positive=True)
    xt = sp.symbols(f"xt_0:{d}", real=True)
    WQ, S = np.array(s["WQ"].tolist(), dtype=object), np.array(s["S"].tolist(), dtype=object)

    def y_hat(scale: Any) -> sp.Expr:
        q = WQ @ np.array([*(scale * x for x in xt), 0], dtype=object)
        return -(S @ q)[-1] / sp.sqrt(sum(qi * qi for qi in q))

    return y_hat(1), y_hat(c)


def gate_from_query_counterexample(member: str, seed: int = 3, n: int = 2, d: int = 1) -> sp.Expr:
    r"""``ŷ(2x_t) − 2ŷ(x_t)`` for one layer whose query reads itself with gates ``sigmoid(w^T
    e_t)``.

    Exact SymPy value (rational data, gates with ``exp``); non-zero means ``ŷ`` is not linear in
    ``x_t``. The value's key is zeroed on ``x`` (``W_K`` reads ``y`` only), so the query's own key
    and value add nothing: what remains is the query's gate.
    """
    rng = np.random.default_rng(seed)
    D = d + 1
    WQ, WV = rational_array(rng, (D, D), num=2, den=2), rational_array(rng, (D, D), num=2, den=2)
    WK = np.zeros((D, D), dtype=object)
    WK[-1, -1] = 1
    wa = rational_array(rng, (D, D) if member == "gla" else (D,), num=2, den=2, nonzero=True)
    wb = rational_array(rng, (D,), num=2, den=2, nonzero=True)
    head = FamilyHead(WQ, WK, WV, w_alpha=wa, w_beta=wb if member in BETA_MEMBERS else None)
    ctx = rational_array(rng, (n, D), num=3, den=2)
    xt = rational_array(rng, (d,), num=3, den=2, nonzero=True)

    def y_hat(scale: int) -> sp.Expr:
        Z = np.concatenate([ctx, np.array([[*(scale * xt), 0]], dtype=object)])
        return -family_layer(member, [head], Z, n, query_reads_itself=True, squash=sigmoid)[n, -1]

    return sp.nsimplify(y_hat(2) - 2 * y_hat(1))
