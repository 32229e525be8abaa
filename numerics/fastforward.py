r"""The cheapest exact forward pass used by training, and the plain pass it is measured against.

Every layer multiplies every token, the query included, by one matrix (PAPER.md §1):

.. math::

    e_i^{l+1} = (I + G^l)\, e_i^l, \qquad G^l = \sum_k P_k^l E^l Q_k^l, \qquad
    E^{l+1} = (I + G^l)\, E^l\, (I + G^l)^\top ,

so the context enters only through its Gram matrix ``E^l = Σ_{j≤n} e_j^l e_j^{lᵀ}`` (``(d+1)×(d+1)``)
and the ``n`` context tokens never need to be carried.  The factored Gram map ``T E Tᵀ`` with
``T = I + G`` is the derived bridge rule ``E + E Gᵀ + G E + G E Gᵀ``
(:func:`lintf_theory.derive_gram_update`) regrouped; ``tests/test_training.py`` checks the
regrouping symbolically against the derived rule and the pass numerically against the literal
token pass :func:`numerics.models.forward_tokens`.  It costs two batched ``(d+1)³`` products per
layer instead of three.

Structured ``G``.  For DIAG and GD++ heads ``P_k = diag(p_k)``, ``Q_k = diag(q_k)`` with
``p_k = (p_{x,k} 1_d, p_{y,k})`` and ``q_k = (q_{x,k} 1_d, q_{y,k})``, so

.. math::  G^l = \Omega^l \odot E^l, \qquad \Omega^l = \sum_k p_k q_k^\top
           = \begin{pmatrix} \omega_{xx} 1 1^\top & \omega_{xy} 1 \\ \omega_{yx} 1^\top & \omega_{yy}\end{pmatrix},

an element-wise product (``ω`` as in PAPER.md §3, :func:`numerics.models.omegas`) instead of two
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

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .models import Diag, Full, Gdpp, Params, _tokens


def _layer_vectors(params: Diag | Gdpp, d: int) -> tuple[jax.Array, jax.Array]:
    """Per-layer, per-head diagonals ``p, q`` of shape ``(L, H, d+1)`` (GD++: ``P = diag(ω_xx, ω_yx)``, ``Q = diag(1, 0)``)."""
    if isinstance(params, Gdpp):
        px, py = params.omega_xx[:, None], params.omega_yx[:, None]
        qx, qy = jnp.ones_like(px), jnp.zeros_like(py)
    else:
        px, py, qx, qy = params
    vec = lambda x, y: jnp.concatenate([jnp.repeat(x[..., None], d, -1), y[..., None]], -1)  # noqa: E731
    return vec(px, py), vec(qx, qy)


def context_gram(X: jax.Array, y: jax.Array) -> jax.Array:
    """``E^0 = Σ_{j≤n} e_j e_jᵀ`` of shape ``(B, d+1, d+1)``: a transposed copy of the context, then one
    plain batched matmul (the barrier stops XLA from folding the copy into a slower transposed dot)."""
    ctx = jnp.concatenate([X, y[..., None]], axis=-1)
    return jax.lax.optimization_barrier(jnp.swapaxes(ctx, -1, -2)) @ ctx


def upper(E: jax.Array) -> jax.Array:
    """The upper triangle (diagonal included) of each ``(D, D)`` matrix, row by row: ``(..., D(D+1)/2)``."""
    i, j = np.triu_indices(E.shape[-1])
    return E[..., i, j]


def full_g(P: jax.Array, Q: jax.Array) -> Callable[[jax.Array], jax.Array]:
    r"""``E ↦ G = Σ_k P_k E Q_k`` for symmetric ``E (B, D, D)``, given one layer's ``P, Q (H, D, D)``.

    ``G_{af} = Σ_{c,e} E_{ce} M_{ce,af}`` with ``M_{ce,af} = Σ_k (P_k)_{ac} (Q_k)_{ef}``; pairing ``(c,e)``
    with ``(e,c)`` (``E`` symmetric) leaves the ``D(D+1)/2`` entries ``c ≤ e`` with weights
    ``K_{ce} = M_{ce} + [c<e] M_{ec}``, so ``G`` is one GEMM ``upper(E) @ K``.  ``E`` must be symmetric
    (a Gram matrix; the Gram map keeps it so); ``tests/test_training.py`` checks ``G`` against ``P E Q``."""
    D = P.shape[-1]
    i, j = np.triu_indices(D)
    M = jnp.einsum("hac,hef->ceaf", P, Q)
    K = (M[i, j] + jnp.where((i != j)[:, None, None], M[j, i], 0)).reshape(i.size, D * D)
    return lambda E: (upper(E) @ K).reshape(E.shape)


@jax.custom_vjp
def sandwich(T: jax.Array, E: jax.Array) -> jax.Array:
    r"""The Gram map ``E' = T E Tᵀ`` (batched), with a hand-written reverse rule.

    For symmetric ``E`` and cotangent ``C`` of ``E'``:
    ``∂/∂T = (C + Cᵀ)(T E)`` (reusing ``T E`` from the forward pass) and ``∂/∂E = Tᵀ C T``:
    three batched matmuls instead of autodiff's four plus transposes (the training step with autodiff's
    rule is the ``autodiff-sandwich`` row of ``python benchmarks/fast_pass_variants.py``).  ``E`` is symmetric in exact arithmetic (a Gram matrix); its round-off
    asymmetry changes the gradient at round-off level only (``tests/test_training.py`` compares with
    autodiff of the literal token pass in float64)."""
    return (T @ E) @ jnp.swapaxes(T, -1, -2)


def _sandwich_fwd(T: jax.Array, E: jax.Array) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    TE = T @ E
    return TE @ jnp.swapaxes(T, -1, -2), (T, TE)


def _sandwich_bwd(res: tuple[jax.Array, jax.Array], C: jax.Array) -> tuple[jax.Array, jax.Array]:
    T, TE = res
    return (C + jnp.swapaxes(C, -1, -2)) @ TE, jnp.swapaxes(T, -1, -2) @ (C @ T)


sandwich.defvjp(_sandwich_fwd, _sandwich_bwd)


def predict_fast(params: Params, X: jax.Array, y: jax.Array, x_query: jax.Array,
                 guard: bool = False) -> jax.Array | tuple[jax.Array, jax.Array]:
    r"""``ŷ = −y_{n+1}^L`` by the factored Gram pass on native parameters; ``(B,)``.

    ``guard=True`` (training) also returns ``alive (B,)`` and keeps a sequence's arrays finite, so that
    its gradient is exactly 0 instead of NaN: a sequence whose ``tr E^l`` or ``‖q^l‖`` exceeds
    ``t = max_float^{1/4}`` (1.4e9 in float32) is *dead* from layer ``l`` on: its ``G^l`` is set to 0,
    so its arrays stop changing.  Below ``t`` one layer cannot overflow (``T E Tᵀ`` is cubic in ``E``,
    with parameters ``|P|, |Q| ≲ 10²``), so every residual the reverse pass multiplies by the dead
    sequence's zero cotangent (the loss masks it) is finite.  Alive sequences are untouched."""
    d = X.shape[-1]
    E = context_gram(X, y)
    q = jnp.concatenate([x_query, jnp.zeros_like(x_query[..., :1])], axis=-1)[..., None]  # (B, D, 1)
    eye = jnp.eye(d + 1, dtype=E.dtype)
    if isinstance(params, Full):
        L = params.P.shape[0]
        gs = [full_g(params.P[l], params.Q[l]) for l in range(L)]

        def g_of(l: int, E: jax.Array) -> jax.Array:
            return gs[l](E)
    else:
        p, qv = _layer_vectors(params, d)
        omega = jnp.einsum("lha,lhc->lac", p, qv)  # Ω^l = Σ_k p_k q_kᵀ
        L = omega.shape[0]

        def g_of(l: int, E: jax.Array) -> jax.Array:
            return omega[l] * E
    alive = jnp.ones(E.shape[:-2], bool)
    t = float(jnp.finfo(E.dtype).max) ** 0.25
    for l in range(L):
        G = g_of(l, E)
        if guard:
            # E is a Gram matrix (PSD): every entry is at most its trace.  A dead sequence gets G = 0, so T = I
            # and its arrays stay as they were (finite, below t); its zero cotangent then meets finite residuals.
            alive &= (jnp.trace(E, axis1=-2, axis2=-1) <= t) & (jnp.sum(q * q, axis=(-2, -1)) <= t * t)
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
    (what the issue's "plain jitted implementation" does).  Used only as the benchmark reference."""
    from .models import universal

    P, Q = universal(params, X.shape[-1])
    n = X.shape[-2]
    Z = _tokens(X, y, x_query)
    for l in range(P.shape[0]):
        C = Z[..., :n, :]
        E = jnp.einsum("bja,bjc->bac", C, C)
        G = jnp.einsum("hac,bce,hef->baf", P[l], E, Q[l])
        Z = Z + jnp.einsum("baf,bif->bia", G, Z)
    return -Z[..., -1, -1]
