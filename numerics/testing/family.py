r"""Check an implementation of a linear-attention family member (docs/family.md) against the
family's conventions.

The code under test is a callable ``forward(X, y, x_query)``, as for
:func:`numerics.testing.check_theorem_4_1` (predictions ``(B,)`` or every layer's tokens
``(L+1, B, n+1, d+1)``); ``params`` are the member's native parameters
(:mod:`numerics.models.family`), which fix the reference.  Properties (:data:`MEMBER_PROPERTIES`):

1. ``query isolation``: no context token depends on ``x_t`` (tokens only), and ``ŷ`` is linear in
   ``x_t``; this holds for every member when the query reads the context's state ``S_n`` (the
   default), not when it reads itself;
2. ``implicit weight``: ``ŷ = ⟨w^L, x_t⟩`` and ``∂ŷ/∂x_t = w^L``, with ``w^L`` from the query's
   transfer matrices built from lintf's context states
   (:func:`numerics.models.family_weights.transfer_weights`), never from the code under test;
3. ``context order``: permuting the context leaves ``ŷ`` unchanged where the member ignores order
   (causal linear attention at depth 1: the query reads a plain sum) and changes it everywhere else:
   a causal member whose prediction ignores the order of the context is not causal.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from numerics.models.family_weights import transfer_weights
from numerics.models.kinds import kind_of
from numerics.testing.compare import (
    assert_close,
    assert_implicit_weight,
    assert_query_isolation,
    outputs,
    query_gradient,
)

MEMBER_PROPERTIES = ("query isolation", "implicit weight", "context order")
#: A causal member's prediction must move by more than this (relative) when the context is permuted.
ORDER_MIN = 1e-8


def _layers(params: Any) -> int:
    return int(params.W_V.shape[0])


def check_member_query_isolation(
    forward: Any,
    params: Any,
    X: Any,
    y: Any,
    x_query: Any,
    rtol: float = 1e-10,
    seed: int = 0,
    s: float = 0.75,
    t: float = -1.5,
    x_query_alt: Any = None,
) -> None:
    """Property 1: the context's tokens ignore ``x_t``; ``ŷ(s q_1 + t q_2) = s ŷ(q_1) + t
    ŷ(q_2)``."""
    assert_query_isolation(
        forward,
        _layers(params),
        X,
        y,
        x_query,
        rtol,
        seed,
        s,
        t,
        x_query_alt,
        f"(s = {s:g}, t = {t:g}; the query must read the context's state only)",
    )


def check_member_implicit_weight(
    forward: Any,
    params: Any,
    X: Any,
    y: Any,
    x_query: Any,
    rtol: float = 1e-10,
    differentiate: str = "auto",
) -> None:
    """Property 2: ``ŷ = ⟨w^L, x_t⟩`` and ``∂ŷ/∂x_t = w^L``, ``w^L`` from lintf's transfer
    matrices."""
    with jax.enable_x64(True):
        w = np.asarray(transfer_weights(params, X, y, x_query)[-1])
        f, _ = outputs(forward, X, y, x_query, _layers(params))
        grad, route = query_gradient(forward, X, y, x_query, differentiate)
    assert_implicit_weight(
        f,
        grad,
        route,
        w,
        x_query,
        rtol,
        "transfer matrices of lintf's context states",
        "transfer matrices",
    )


def check_context_order(
    forward: Any, params: Any, X: Any, y: Any, x_query: Any, rtol: float = 1e-10, seed: int = 0
) -> None:
    """Property 3: invariance under permuting the context where the member has it; its failure where
    it is causal."""
    kind = kind_of(params)
    perm = np.random.default_rng(seed).permutation(X.shape[1])
    if X.shape[1] > 1 and np.all(perm == np.arange(X.shape[1])):
        perm = np.roll(perm, 1)
    L = _layers(params)
    with jax.enable_x64(True):
        f, _ = outputs(forward, X, y, x_query, L)
        fp, _ = outputs(forward, X[:, perm], y[:, perm], x_query, L)
    if kind.order_invariant(L):
        assert_close(
            f"context order: y_hat of {kind.name} (L = {L}) with the context permuted", fp, f, rtol
        )
        return
    scale = max(float(np.max(np.abs(f), initial=0)), float(np.max(np.abs(fp), initial=0)), 1e-200)
    moved = float(np.max(np.abs(fp - f), initial=0)) / scale
    if X.shape[1] > 1 and not moved > ORDER_MIN:
        raise AssertionError(
            f"context order: {kind.name} (L = {L}) is causal, but permuting the context moves "
            "y_hat "
            f"by {moved:.3g} (relative) <= {ORDER_MIN:g}: the implementation ignores the order"
        )


def check_member(
    forward: Any,
    params: Any,
    X: Any,
    y: Any,
    x_query: Any,
    x_query_alt: Any = None,
    rtol: float = 1e-10,
    differentiate: str = "auto",
    seed: int = 0,
) -> None:
    """All three properties on one batch, in the order of :data:`MEMBER_PROPERTIES`;
    ``AssertionError`` naming the first failure."""
    X, y, x_query = (np.asarray(v, np.float64) for v in (X, y, x_query))
    check_member_query_isolation(
        forward, params, X, y, x_query, rtol, seed, x_query_alt=x_query_alt
    )
    check_member_implicit_weight(forward, params, X, y, x_query, rtol, differentiate)
    check_context_order(forward, params, X, y, x_query, rtol, seed)
