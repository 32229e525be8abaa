r"""The linear-attention family: one recurrent state per head, written literally (entry level).

Context tokens ``e_1..e_n`` and queries ``e_t = (x_t, 0)`` are the rows of ``Z`` (context first).
Head ``h`` has ``k_i = W_K e_i``, ``v_i = W_V e_i``, ``q_i = W_Q e_i`` (all ``D × D`` with ``D
= d + 1``) and a ``D × D`` state ``S``.  Each member is one state update (:func:`family_step`):

.. math::

    \begin{aligned}
    \text{linear, causal:}\quad & S_i = S_{i-1} + v_i k_i^\top \\
    \text{retnet:}\quad & S_i = \gamma S_{i-1} + v_i k_i^\top \\
    \text{ssd:}\quad & S_i = \alpha_i S_{i-1} + v_i k_i^\top,
        \quad \alpha_i = \operatorname{sigmoid}(w_\alpha^\top e_i) \\
    \text{gla:}\quad & S_i = S_{i-1} \operatorname{diag}(\alpha_i) + v_i k_i^\top,
        \quad \alpha_i = \operatorname{sigmoid}(W_\alpha e_i) \\
    \text{deltanet:}\quad & S_i = S_{i-1}(I - \beta_i k_i k_i^\top) + \beta_i v_i k_i^\top,
        \quad \beta_i = \operatorname{sigmoid}(w_\beta^\top e_i) \text{ or a constant} \\
    \text{gated\_deltanet:}\quad & S_i = \alpha_i S_{i-1}(I - \beta_i k_i k_i^\top) + \beta_i v_i
    k_i^\top
    \end{aligned}

with ``S_0 = 0``.  A token moves by the sum of its heads' outputs, ``e_i ← e_i + Σ_h o_i^h``: the
output projection ``W_O`` is absorbed into ``W_V`` (every update is linear in ``S`` from the left,
so ``W_O S`` obeys the same recursion with ``W_O v_i``).  Context token ``i`` reads ``o_i = S_i
q_i`` (causal), except for ``linear``, the paper's non-causal layer, where every token reads
``S_n``.  A query reads the context state, ``o_t = S_n q_t`` (the default convention), or, with
``query_reads_itself``, ``S_t q_t`` where ``S_t`` is one more update with the query's own key, value
and gates.  ``linear`` is the paper's layer with ``P = W_V`` and ``Q = W_Kᵀ W_Q``.  Keys and queries
are not normalised unless ``normalise_keys`` or ``normalise_queries`` says so (L2, for every token).
The gates of a token come from that token (:func:`family_gates`), or are given (``gates``), e.g. as
free symbols.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

FAMILY_MEMBERS = ("linear", "causal", "retnet", "ssd", "gla", "deltanet", "gated_deltanet")
#: Members whose state update takes a gate ``α`` (a scalar, or a ``D``-vector for ``gla``) and a
# step ``β``.
ALPHA_MEMBERS = ("retnet", "ssd", "gla", "gated_deltanet")
BETA_MEMBERS = ("deltanet", "gated_deltanet")


def _check_member(member: str) -> None:
    if member not in FAMILY_MEMBERS:
        raise ValueError(f"member must be one of {', '.join(FAMILY_MEMBERS)}; got {member!r}")


@dataclass(frozen=True)
class FamilyHead:
    r"""One head: ``W_Q, W_K, W_V`` (``D × D``), and the gate parameters its member reads.

    ``gamma``: RetNet's decay; ``w_alpha``: ``(D,)`` for ``ssd`` and ``gated_deltanet``, ``(D, D)``
    for ``gla``; ``w_beta``: ``(D,)``, or ``None`` for the constant step ``beta``.
    """

    WQ: Any
    WK: Any
    WV: Any
    gamma: Any = 1
    w_alpha: Any = None
    w_beta: Any = None
    beta: Any = 1

    def __post_init__(self) -> None:
        D = np.shape(self.WQ)[0]
        for name in ("WQ", "WK", "WV"):
            if np.shape(getattr(self, name)) != (D, D):
                raise ValueError(
                    f"{name} must have shape ({D}, {D}) like WQ, "
                    f"got {np.shape(getattr(self, name))}"
                )
        if self.w_alpha is not None and np.shape(self.w_alpha) not in ((D,), (D, D)):
            raise ValueError(
                f"w_alpha must have shape ({D},) or ({D}, {D}), got {np.shape(self.w_alpha)}"
            )
        if self.w_beta is not None and np.shape(self.w_beta) != (D,):
            raise ValueError(f"w_beta must have shape ({D},), got {np.shape(self.w_beta)}")


def sigmoid(z: Any) -> Any:
    """``1 / (1 + exp(-z))``: NumPy for floats, exact SymPy for rationals and expressions."""
    if isinstance(z, (float, np.floating)) or (isinstance(z, np.ndarray) and z.dtype.kind == "f"):
        return 1.0 / (1.0 + np.exp(-z))
    if isinstance(z, Fraction):
        z = sp.Rational(z.numerator, z.denominator)
    return 1 / (1 + sp.exp(-z))


def _l2(v: Any) -> Any:
    s = sum(vi * vi for vi in v)
    root = np.sqrt(s) if isinstance(s, (float, np.floating)) else sp.sqrt(sp.nsimplify(s))
    return v / root


def family_step(member: str, S: Any, k: Any, v: Any, alpha: Any = 1, beta: Any = 1) -> Any:
    r"""One update of the state ``S`` with key ``k``, value ``v``, gate ``alpha`` and step
    ``beta``."""
    outer = v[:, None] * k[None, :]
    if member in ("linear", "causal"):
        return S + outer
    if member in ("retnet", "ssd"):
        return S * alpha + outer
    if member == "gla":
        return S * np.asarray(alpha)[None, :] + outer
    erased = S - (S @ k)[:, None] * k[None, :] * beta
    if member == "deltanet":
        return erased + outer * beta
    if member == "gated_deltanet":
        return erased * alpha + outer * beta
    _check_member(member)
    raise AssertionError("unreachable")


def family_gates(
    member: str, head: FamilyHead, e: Any, squash: Callable[[Any], Any] = sigmoid
) -> tuple[Any, Any]:
    r"""``(α, β)`` of one token from its own entries: ``α`` from ``w_alpha`` (or ``γ``), ``β`` from
    ``w_beta``."""
    alpha: Any = 1
    if member == "retnet":
        alpha = head.gamma
    elif member in ("ssd", "gated_deltanet"):
        alpha = squash(np.dot(head.w_alpha, e))
    elif member == "gla":
        alpha = np.array([squash(z) for z in np.asarray(head.w_alpha) @ e], dtype=object)
    beta = head.beta
    if member in BETA_MEMBERS and head.w_beta is not None:
        beta = squash(np.dot(head.w_beta, e))
    return alpha, beta


def family_states(
    member: str,
    head: FamilyHead,
    Z: Any,
    n: int,
    gates: Sequence[tuple[Any, Any]] | None = None,
    normalise_keys: bool = False,
    squash: Callable[[Any], Any] = sigmoid,
) -> list[Any]:
    r"""``[S_0, S_1, …, S_n]`` of one head over the context rows of ``Z``; ``gates[i]`` overrides
    token ``i``'s."""
    D = Z.shape[1]
    S = np.zeros((D, D), dtype=Z.dtype) * Z[0, 0]
    out = [S]
    for i in range(n):
        k = np.asarray(head.WK) @ Z[i]
        k = _l2(k) if normalise_keys else k
        alpha, beta = gates[i] if gates is not None else family_gates(member, head, Z[i], squash)
        S = family_step(member, S, k, np.asarray(head.WV) @ Z[i], alpha, beta)
        out.append(S)
    return out


def family_layer(
    member: str,
    heads: Sequence[FamilyHead],
    Z: Any,
    n: int,
    *,
    gates: Sequence[Sequence[tuple[Any, Any]]] | None = None,
    query_reads_itself: bool = False,
    normalise_keys: bool = False,
    normalise_queries: bool = False,
    squash: Callable[[Any], Any] = sigmoid,
) -> np.ndarray:
    r"""One residual layer of ``member`` on every row of ``Z`` (``(n + queries, D)``); returns the
    new rows.

    ``gates[h][i]`` gives head ``h``'s ``(α, β)`` of row ``i`` (context rows, then queries); by
    default each token's gates come from the token itself through ``squash`` (:func:`family_gates`).
    """
    _check_member(member)
    if Z.ndim != 2 or not 1 <= n <= Z.shape[0]:
        raise ValueError(
            f"Z must be (n + queries, D) with 1 <= n <= rows; got shape {Z.shape} and n={n}"
        )
    rows = [Z[i] for i in range(Z.shape[0])]
    for h, head in enumerate(heads):
        g = None if gates is None else gates[h]
        states = family_states(member, head, Z, n, g, normalise_keys, squash)
        for i in range(Z.shape[0]):
            q = np.asarray(head.WQ) @ Z[i]
            q = _l2(q) if normalise_queries else q
            if i < n:
                S = states[n] if member == "linear" else states[i + 1]
            elif query_reads_itself:
                k = np.asarray(head.WK) @ Z[i]
                k = _l2(k) if normalise_keys else k
                alpha, beta = g[i] if g is not None else family_gates(member, head, Z[i], squash)
                S = family_step(member, states[n], k, np.asarray(head.WV) @ Z[i], alpha, beta)
            else:
                S = states[n]
            rows[i] = rows[i] + S @ q
    return np.stack(rows)


def family_forward(
    member: str, layers: Sequence[Sequence[FamilyHead]], Z: Any, n: int, **options: Any
) -> np.ndarray:
    r"""``L`` layers of :func:`family_layer`; ``ŷ = −Z^L[n, −1]`` is the first query's
    prediction."""
    for heads in layers:
        Z = family_layer(member, heads, Z, n, **options)
    return Z


def family_paper_form(heads: Sequence[FamilyHead]) -> tuple[list[Any], list[Any]]:
    r"""``(P_h, Q_h) = (W_V, W_Kᵀ W_Q)`` per head: the paper's layer that the ``linear`` member
    is."""
    return [np.asarray(h.WV) for h in heads], [np.asarray(h.WK).T @ np.asarray(h.WQ) for h in heads]


def family_query_matrix(
    member: str, heads: Sequence[FamilyHead], Z: Any, n: int, **options: Any
) -> Any:
    r"""``G_t = Σ_h S_n^h W_Q^h``: under the default convention the query moves as ``e_t ↦ (I +
    G_t) e_t``."""
    total = None
    for h, head in enumerate(heads):
        g = None if options.get("gates") is None else options["gates"][h]
        S = family_states(
            member,
            head,
            Z,
            n,
            g,
            options.get("normalise_keys", False),
            options.get("squash", sigmoid),
        )[n]
        term = S @ np.asarray(head.WQ)
        total = term if total is None else total + term
    return total


def family_positions(
    member: str, heads: Sequence[FamilyHead], Z: Any, n: int, **options: Any
) -> list[Any]:
    r"""``T_i = I + Σ_h S_{(i)}^h W_Q^h`` for every context row (the one layer as ``e_i ↦ T_i
    e_i``).

    ``S_{(i)} = S_i`` for causal members and ``S_n`` for ``linear``.
    """
    D = Z.shape[1]
    eye = (
        np.eye(D, dtype=int).astype(Z.dtype)
        if Z.dtype != object
        else np.array(
            [[Z[0, 0] ** 0 if i == j else 0 * Z[0, 0] for j in range(D)] for i in range(D)],
            dtype=object,
        )
    )
    out = [eye.copy() for _ in range(n)]
    for h, head in enumerate(heads):
        g = None if options.get("gates") is None else options["gates"][h]
        states = family_states(
            member,
            head,
            Z,
            n,
            g,
            options.get("normalise_keys", False),
            options.get("squash", sigmoid),
        )
        for i in range(n):
            out[i] = out[i] + (states[n] if member == "linear" else states[i + 1]) @ np.asarray(
                head.WQ
            )
    return out
