r"""The cheapest exact forward pass used by training, and the plain pass it is measured against.

Every layer multiplies every token, the query included, by one matrix (docs/model.md):

.. math::

    e_i^{l+1} = (I + G^l)\, e_i^l, \qquad G^l = \sum_k P_k^l E^l Q_k^l, \qquad
    E^{l+1} = (I + G^l)\, E^l\, (I + G^l)^\top ,

so the context enters only through its Gram matrix ``E^l = Σ_{j≤n} e_j^l e_j^{lᵀ}`` (``(d+1)×(d+1)``)
and the ``n`` context tokens never need to be carried.  The factored Gram map ``T E Tᵀ`` with
``T = I + G`` is the derived bridge rule ``E + E Gᵀ + G E + G E Gᵀ``
(:func:`lintf_theory.derive_gram_update`) regrouped; ``tests/models/test_forward.py`` checks the
regrouping symbolically against the derived rule and the pass numerically against the literal
token pass :func:`numerics.models.forward_tokens`.  It costs two batched ``(d+1)³`` products per
layer instead of three.

Structured ``G``.  For DIAG and GD++ heads ``P_k = diag(p_k)``, ``Q_k = diag(q_k)`` with
``p_k = (p_{x,k} 1_d, p_{y,k})`` and ``q_k = (q_{x,k} 1_d, q_{y,k})``, so

.. math::  G^l = \Omega^l \odot E^l, \qquad \Omega^l = \sum_k p_k q_k^\top
           = \begin{pmatrix} \omega_{xx} 1 1^\top & \omega_{xy} 1 \\ \omega_{yx} 1^\top & \omega_{yy}\end{pmatrix},

an element-wise product (``ω`` as in docs/model.md, :func:`numerics.models.omegas`) instead of two
matrix products.  FULL computes ``G = Σ_k P_k E Q_k`` as one GEMM over the whole batch on the
upper triangle of the symmetric ``E`` (:func:`full_g`): ``(B, D(D+1)/2) × (D(D+1)/2, D²)``, the
same cost for any number of heads.  The last layer's Gram update is never formed (only the query is read).

XLA CPU notes (``python benchmarks/fast_pass_variants.py`` times each choice inside the real training
step): a batched dot whose operand is transposed (``Xᵀ X``) runs several times slower than a copy
followed by a plain batched dot, and XLA folds an ordinary transpose back into the dot, so
:func:`context_gram` keeps the copy behind ``optimization_barrier``.

=================  ==========================================
symbol             argument / array
=================  ==========================================
``E^l``            ``E`` ``(B, d+1, d+1)``
``e_{n+1}^l``      ``q`` ``(B, d+1)`` (query token)
``G^l``, ``T``     ``G``, ``T = I + G``
``ŷ``              ``−q[..., -1]`` after the last layer
=================  ==========================================
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from lintf_theory import check_parameters, gram_update
from numerics.models.kinds import Params, kind_of, universal


def context_gram(X: jax.Array, y: jax.Array) -> jax.Array:
    """``E^0 = Σ_{j≤n} e_j e_jᵀ`` of shape ``(B, d+1, d+1)``: a transposed copy of the context, then one
    plain batched matmul (the barrier stops XLA from folding the copy into a slower transposed dot)."""
    ctx = jnp.concatenate([X, y[..., None]], axis=-1)
    return jax.lax.optimization_barrier(jnp.swapaxes(ctx, -1, -2)) @ ctx


@jax.custom_vjp
def sandwich(T: jax.Array, E: jax.Array) -> jax.Array:
    r"""The Gram map ``E' = T E Tᵀ`` (batched), with a hand-written reverse rule.

    For symmetric ``E`` and cotangent ``C`` of ``E'``:
    ``∂/∂T = (C + Cᵀ)(T E)`` (reusing ``T E`` from the forward pass) and ``∂/∂E = Tᵀ C T``:
    three batched matmuls instead of autodiff's four plus transposes (the training step with autodiff's
    rule is the ``autodiff-sandwich`` row of ``python benchmarks/fast_pass_variants.py``).  ``E`` is symmetric in exact arithmetic (a Gram matrix); its round-off
    asymmetry changes the gradient at round-off level only (``tests/models/test_forward.py`` compares with
    autodiff of the literal token pass in float64)."""
    return (T @ E) @ jnp.swapaxes(T, -1, -2)


def _sandwich_fwd(T: jax.Array, E: jax.Array) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    TE = T @ E
    return TE @ jnp.swapaxes(T, -1, -2), (T, TE)


def _sandwich_bwd(res: tuple[jax.Array, jax.Array], C: jax.Array) -> tuple[jax.Array, jax.Array]:
    T, TE = res
    return (C + jnp.swapaxes(C, -1, -2)) @ TE, jnp.swapaxes(T, -1, -2) @ (C @ T)


sandwich.defvjp(_sandwich_fwd, _sandwich_bwd)


def predict_fast(
    params: Params, X: jax.Array, y: jax.Array, x_query: jax.Array, guard: bool = False
) -> jax.Array | tuple[jax.Array, jax.Array]:
    r"""``ŷ = −y_{n+1}^L`` by the factored Gram pass on native parameters; ``(B,)``.

    ``guard=True`` (training) also returns ``alive (B,)`` and keeps a sequence's arrays finite, so that
    its gradient is exactly 0 instead of NaN: a sequence whose ``tr E^l`` or ``‖q^l‖`` exceeds
    ``t = max_float^{1/4}`` (1.4e9 in float32) is *dead* from layer ``l`` on: its ``G^l`` is set to 0,
    so its arrays stop changing.  Below ``t`` one layer cannot overflow (``T E Tᵀ`` is cubic in ``E``,
    with parameters ``|P|, |Q| ≲ 10²``), so every residual the reverse pass multiplies by the dead
    sequence's zero cotangent (the loss masks it) is finite.  Alive sequences are untouched."""
    d = X.shape[-1]
    E = context_gram(X, y)
    q = jnp.concatenate([x_query, jnp.zeros_like(x_query[..., :1])], axis=-1)[
        ..., None
    ]  # (B, D, 1)
    eye = jnp.eye(d + 1, dtype=E.dtype)
    L, g_of = kind_of(params).layer_g(params, d)
    alive = jnp.ones(E.shape[:-2], bool)
    t = float(jnp.finfo(E.dtype).max) ** 0.25
    for l in range(L):
        G = g_of(l, E)
        if guard:
            # E is a Gram matrix (PSD): every entry is at most its trace.  A dead sequence gets G = 0, so T = I
            # and its arrays stay as they were (finite, below t); its zero cotangent then meets finite residuals.
            alive &= (jnp.trace(E, axis1=-2, axis2=-1) <= t) & (
                jnp.sum(q * q, axis=(-2, -1)) <= t * t
            )
            G = jnp.where(alive[:, None, None], G, 0)
        T = eye + G
        q = T @ q
        if l + 1 < L:
            # two batched matmuls; a three-operand einsum here was ~5x slower on XLA CPU
            E = sandwich(T, E)
    yhat = -q[..., -1, 0]
    if guard:
        alive &= jnp.isfinite(yhat)
        return jnp.where(alive, yhat, 0), alive
    return yhat


def predict_plain(params: Params, X: jax.Array, y: jax.Array, x_query: jax.Array) -> jax.Array:
    r"""The plain pass: all ``n+1`` tokens, the layer rule written literally on universal ``P, Q``
    (a plain jitted implementation).  Used only as the benchmark reference."""
    P, Q = universal(params, X.shape[-1])
    n = X.shape[-2]
    Z = tokens(X, y, x_query)
    for l in range(P.shape[0]):
        C = Z[..., :n, :]
        E = jnp.einsum("bja,bjc->bac", C, C)
        G = jnp.einsum("hac,bce,hef->baf", P[l], E, Q[l])
        Z = Z + jnp.einsum("baf,bif->bia", G, Z)
    return -Z[..., -1, -1]


def check_data(P: Any, Q: Any, X: Any, y: Any, x_query: Any) -> tuple[int, int, int]:
    r"""Validate a batch against universal parameters; return ``(B, n, d)``.

    ``P, Q``: ``(L, H, d+1, d+1)``; ``X``: ``(B, n, d)``; ``y``: ``(B, n)``; ``x_query``: ``(B, d)``.
    Shapes are static, so this also runs under ``jax.jit``.  One-line :class:`ValueError` otherwise.
    """
    xs = getattr(X, "shape", None)
    if xs is None or len(xs) != 3:
        raise ValueError(f"X must have shape (B, n, d), got shape {xs}")
    B, n, d = (int(s) for s in xs)
    if n < 1 or d < 1:
        raise ValueError(
            f"X must have n >= 1 context points and d >= 1 inputs, got shape {tuple(xs)}"
        )
    check_parameters(P, Q, d)
    if tuple(getattr(y, "shape", ())) != (B, n):
        raise ValueError(
            f"y must have shape (B, n) = ({B}, {n}) to match X, got shape {getattr(y, 'shape', None)}"
        )
    if tuple(getattr(x_query, "shape", ())) != (B, d):
        raise ValueError(
            f"x_query must have shape (B, d) = ({B}, {d}) to match X, "
            f"got shape {getattr(x_query, 'shape', None)}"
        )
    return B, n, d


def readout(tokens: jax.Array) -> jax.Array:
    r"""Prediction ``ŷ = −y_{n+1}`` from token arrays ``(..., n+1, d+1)`` (e.g. :func:`forward_tokens`)."""
    return -tokens[..., -1, -1]


def tokens(X: jax.Array, y: jax.Array, x_query: jax.Array) -> jax.Array:
    """Token matrix ``(B, n+1, d+1)``: context ``(x_i, y_i)`` then the query ``(x_t, 0)``."""
    ctx = jnp.concatenate([X, y[..., None]], axis=-1)
    q = jnp.concatenate([x_query, jnp.zeros_like(x_query[..., :1])], axis=-1)
    return jnp.concatenate([ctx, q[..., None, :]], axis=-2)


def forward_tokens(
    P: jax.Array, Q: jax.Array, X: jax.Array, y: jax.Array, x_query: jax.Array
) -> jax.Array:
    r"""Every layer's tokens, written literally: returns ``(L+1, B, n+1, d+1)``.

    ``e_i^{l+1} = e_i^l + Σ_k P_k^l (Σ_{j≤n} e_j^l e_j^{lᵀ}) Q_k^l e_i^l`` for all ``n+1`` tokens.
    """
    n = check_data(P, Q, X, y, x_query)[1]
    Z = tokens(X, y, x_query)
    out = [Z]
    for l in range(P.shape[0]):
        C = Z[..., :n, :]
        E = jnp.einsum("bja,bjc->bac", C, C)
        G = jnp.einsum("hac,bce,hef->baf", P[l], E, Q[l])
        Z = Z + jnp.einsum("baf,bif->bia", G, Z)
        out.append(Z)
    return jnp.stack(out)


def predict(
    P: jax.Array,
    Q: jax.Array,
    X: jax.Array,
    y: jax.Array,
    x_query: jax.Array,
    all_layers: bool = False,
) -> jax.Array:
    r"""``ŷ = −y_{n+1}^L`` by the Gram-form pass; ``(B,)``, or ``(L+1, B)`` read-outs with ``all_layers``.

    The read-out after layer ``l`` is ``−y_{n+1}^l`` (``0`` at ``l = 0``).
    """
    check_data(P, Q, X, y, x_query)
    ctx = jnp.concatenate([X, y[..., None]], axis=-1)
    E = jnp.einsum("bja,bjc->bac", ctx, ctx)
    q = jnp.concatenate([x_query, jnp.zeros_like(x_query[..., :1])], axis=-1)
    step = jax.vmap(gram_update, in_axes=(0, 0, None))
    reads = [-q[..., -1]]
    for l in range(P.shape[0]):
        G = jnp.einsum("hac,bce,hef->baf", P[l], E, Q[l])
        q = q + jnp.einsum("baf,bf->ba", G, q)
        E = step(E, G, "jax")
        reads.append(-q[..., -1])
    return jnp.stack(reads) if all_layers else reads[-1]
