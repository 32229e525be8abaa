r"""The implicit weight ``w^l`` of a family member (docs/family.md), by two routes, and where it
exists.

Under the default convention the query reads the context's state ``S_n^{(h)}`` only, and the context
never reads the query, so each layer maps the query token linearly:

.. math::

    e_t^{l+1} = T^l e_t^l, \qquad T^l = I + \textstyle\sum_h S_n^{(h),l} W_Q^{(h)}

(``S_n = Σ_j (\text{gates}) v_j k_jᵀ`` holds the values ``v_j = W_V e_j`` already).  Hence the
read-out after layer ``l`` is ``ŷ^l = −(T^{l−1} ⋯ T^0 e_t)_{d+1} = ⟨w^l, x_t⟩`` with ``w^l`` the
negated first ``d`` entries of the last row of the product: the **transfer** route
(:func:`transfer_weights`).  The **autodiff** route differentiates the member's token pass
(:func:`autodiff_weights`).  With the query reading itself (``query_self``), ``o_t`` holds ``v_t
k_tᵀ q_t`` (quadratic in ``x_t``) and the query's own gates: ``ŷ`` is not linear in ``x_t``, there
is no ``w^l``, and :func:`linearity_gap` measures how far it is from one.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from numerics.models.kinds import kind_of


def readouts(
    params: Any, X: jax.Array, y: jax.Array, x_query: jax.Array, query_self: bool = False
) -> jax.Array:
    """The read-out ``ŷ^l = −y_t^l`` after every layer ``l = 0 … L``: ``(L+1, B)``."""
    return -kind_of(params).forward_tokens(params, X, y, x_query, query_self)[:, :, -1, -1]


def autodiff_weights(
    params: Any, X: jax.Array, y: jax.Array, x_query: jax.Array, query_self: bool = False
) -> jax.Array:
    """``∂ŷ^l/∂x_t`` at ``x_query`` by reverse-mode autodiff of the token pass: ``(L+1, B, d)``."""
    L = params.W_V.shape[0]

    def row(l: jax.Array) -> jax.Array:
        return jax.grad(lambda xq: jnp.sum(readouts(params, X, y, xq, query_self)[l]))(x_query)

    # one layer's gradient at a time in a loop: the gradient of the token pass is compiled once
    return jax.lax.map(row, jnp.arange(L + 1))


def transfer_weights(params: Any, X: jax.Array, y: jax.Array, x_query: jax.Array) -> jax.Array:
    """``w^l`` from the product of the query's transfer matrices ``T^l = I + Σ_h S_n^{(h),l}
    W_Q^{(h)}``, each built from the context's state at layer ``l``: ``(L+1, B, d)``.  Only the
    context tokens are used."""
    kind = kind_of(params)
    Z = kind.forward_tokens(params, X, y, x_query)
    B, D = Z.shape[1], Z.shape[-1]
    R = jnp.broadcast_to(jnp.eye(D, dtype=Z.dtype), (B, D, D))
    out = [jnp.zeros((B, D - 1), Z.dtype)]
    for l in range(params.W_V.shape[0]):
        p = jax.tree_util.tree_map(lambda a: a[l], params)
        S_n = kind.context_state(p, Z[l])  # (B, H, D, r)
        T = jnp.eye(D, dtype=Z.dtype) + jnp.einsum("bhvr,hrD->bvD", S_n, p.W_Q)
        R = T @ R
        out.append(-R[:, -1, : D - 1])
    return jnp.stack(out)


def linearity_gap(
    params: Any,
    X: jax.Array,
    y: jax.Array,
    w: jax.Array,
    key: jax.Array,
    query_self: bool = False,
    draws: int = 4,
) -> jax.Array:
    r"""Per layer, ``max |ŷ^l(x) − ⟨w^l, x⟩| / max(|ŷ^l(x)|, |⟨w^l, x⟩|)`` over ``draws`` random
    queries ``x ~ N(0, I)`` per sequence: ``(L+1,)``.  Round-off where ``ŷ^l`` is linear in ``x_t``
    with weight ``w^l``."""
    B, d = X.shape[0], X.shape[-1]

    def gap(k: jax.Array) -> jax.Array:
        x = jax.random.normal(k, (B, d), X.dtype)
        got = readouts(params, X, y, x, query_self)
        want = jnp.einsum("lbd,bd->lb", w, x)
        scale = jnp.maximum(jnp.max(jnp.abs(got), axis=1), jnp.max(jnp.abs(want), axis=1))
        return jnp.max(jnp.abs(got - want), axis=1) / jnp.where(scale > 0, scale, 1)

    # one draw at a time in a loop: the token pass is compiled once
    return jnp.max(jax.lax.map(gap, jax.random.split(key, draws)), axis=0)
