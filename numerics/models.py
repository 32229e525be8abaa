r"""FULL, DIAG and GD++ linear transformers (PAPER.md §1) and their universal ``P``/``Q`` form.

Every parametrisation converts to universal arrays ``P, Q`` of shape ``(L, H, d+1, d+1)`` with
:func:`universal`; all forward passes run on those.

* **FULL** (:class:`Full`): unconstrained ``P, Q``.
* **DIAG** (:class:`Diag`): per head ``P_k = diag(p_x I, p_y)``, ``Q_k = diag(q_x I, q_y)``;
  arrays ``px, py, qx, qy`` of shape ``(L, H)``.
* **GD++** (:class:`Gdpp`): one head per layer with ``q_y = 0``, parametrised directly by
  ``omega_xx, omega_yx`` of shape ``(L,)``.  Universal form: ``P = diag(ω_xx I, ω_yx)``,
  ``Q = diag(I, 0)`` (a choice; any factorisation with the same products is the same model).

Conversions back (:func:`from_universal`): FULL always; DIAG when every ``P_k, Q_k`` is
``diag(s I_d, t)`` (:func:`diag_from_universal`); GD++ when, in addition, every layer has
``ω_xy = ω_yy = 0`` (:func:`gdpp_from_universal`).  Otherwise a one-line ``ValueError``.

Precision: every function keeps the dtype of its inputs (float32 for training, float64 for
verification); mixed inputs follow JAX type promotion.

Forward passes (batched over the leading axis ``B``; shapes checked by :func:`check_data`):

* :func:`forward_tokens` writes the layer rule literally on all ``n+1`` tokens and can return
  every layer's tokens.  It is the reference.
* :func:`predict` is the fast exact pass: the context enters only through its Gram matrix
  ``E^l``, updated by the derived map exported from :mod:`lintf_theory` (``gram_update``), and the
  query is updated by ``q ↦ q + G^l q``.  ``ŷ = −y_{n+1}^L``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from lintf_theory import check_parameters, gram_update

KINDS = ("full", "diag", "gdpp")


class Full(NamedTuple):
    P: jax.Array  # (L, H, d+1, d+1)
    Q: jax.Array  # (L, H, d+1, d+1)


class Diag(NamedTuple):
    px: jax.Array  # (L, H)
    py: jax.Array
    qx: jax.Array
    qy: jax.Array


class Gdpp(NamedTuple):
    omega_xx: jax.Array  # (L,)
    omega_yx: jax.Array  # (L,)


Params = Full | Diag | Gdpp


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"model kind must be one of {', '.join(KINDS)}; got {kind!r}")
    return kind


def kind_of(params: Params) -> str:
    return {Full: "full", Diag: "diag", Gdpp: "gdpp"}[type(params)]


def _diag_matrix(x_part: jax.Array, y_part: jax.Array, d: int) -> jax.Array:
    """``diag(x_part I_d, y_part)`` for arrays of leading shape ``S``: returns ``S + (d+1, d+1)``."""
    vec = jnp.concatenate([jnp.repeat(x_part[..., None], d, axis=-1), y_part[..., None]], axis=-1)
    return vec[..., :, None] * jnp.eye(d + 1, dtype=vec.dtype)


def universal(params: Params, d: int) -> tuple[jax.Array, jax.Array]:
    """Universal ``(P, Q)`` of shape ``(L, H, d+1, d+1)`` for any parametrisation."""
    if isinstance(params, Full):
        return params.P, params.Q
    if isinstance(params, Diag):
        return _diag_matrix(params.px, params.py, d), _diag_matrix(params.qx, params.qy, d)
    if isinstance(params, Gdpp):
        wxx, wyx = params.omega_xx[:, None], params.omega_yx[:, None]
        return _diag_matrix(wxx, wyx, d), _diag_matrix(jnp.ones_like(wxx), jnp.zeros_like(wyx), d)
    raise ValueError(f"unknown parameter type {type(params).__name__}; expected Full, Diag or Gdpp")


def diag_from_universal(P: Any, Q: Any, atol: float = 0.0) -> Diag:
    """Inverse of :func:`universal` for DIAG models; a clear error if ``P, Q`` are not of DIAG form."""
    P, Q = jnp.asarray(P), jnp.asarray(Q)
    L, H, d = check_parameters(P, Q)
    parts = []
    for name, Mx in (("P", P), ("Q", Q)):
        dg = jnp.diagonal(Mx, axis1=-2, axis2=-1)
        off = Mx - dg[..., None] * jnp.eye(d + 1, dtype=Mx.dtype)
        xs = dg[..., :d]
        if float(jnp.max(jnp.abs(off))) > atol or float(jnp.max(jnp.abs(xs - xs[..., :1]))) > atol:
            raise ValueError(f"{name} is not of DIAG form diag(p_x I, p_y) within atol={atol}")
        parts.append((dg[..., 0], dg[..., d]))
    (px, py), (qx, qy) = parts
    return Diag(px, py, qx, qy)


def gdpp_from_universal(P: Any, Q: Any, atol: float = 0.0) -> Gdpp:
    r"""Inverse of :func:`universal` for GD++ models: ``ω_xx = Σ_k p_{x,k} q_{x,k}``, ``ω_yx = Σ_k p_{y,k} q_{x,k}``.

    The conversion exists when ``P, Q`` are of DIAG form (see :func:`diag_from_universal`) and every
    layer has ``ω_xy = ω_yy = 0`` within ``atol`` (for example ``q_y = 0`` in every head, the paper's
    definition of GD++).  A DIAG layer depends on its parameters only through the four ``ω``
    (PAPER.md §3, diagonal reparametrisation), so the result is the same function of the data
    whatever the number of heads ``H``.  Otherwise a one-line :class:`ValueError`.
    """
    dg = diag_from_universal(P, Q, atol)
    wxx, wxy, wyx, wyy = omegas(dg)
    for name, om in (("omega_xy", wxy), ("omega_yy", wyy)):
        if float(jnp.max(jnp.abs(om))) > atol:
            raise ValueError(f"not a GD++ model: {name} = sum_k p q must be 0 in every layer (within "
                             f"atol={atol}), got max |{name}| = {float(jnp.max(jnp.abs(om))):.3g}")
    return Gdpp(wxx, wyx)


def from_universal(kind: str, P: Any, Q: Any, atol: float = 0.0) -> Params:
    """Native parameters of ``kind`` (``full``, ``diag``, ``gdpp``) from universal ``P, Q``; the inverse of :func:`universal`."""
    check_kind(kind)
    if kind == "full":
        P, Q = jnp.asarray(P), jnp.asarray(Q)
        check_parameters(P, Q)
        return Full(P, Q)
    return diag_from_universal(P, Q, atol) if kind == "diag" else gdpp_from_universal(P, Q, atol)


def omegas(params: Diag | Gdpp) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    r"""Per-layer ``(ω_xx, ω_xy, ω_yx, ω_yy)``, each ``(L,)``: sums over heads of ``p·q`` (PAPER.md §3)."""
    if isinstance(params, Gdpp):
        z = jnp.zeros_like(params.omega_xx)
        return params.omega_xx, z, params.omega_yx, z
    px, py, qx, qy = params
    return (px * qx).sum(-1), (px * qy).sum(-1), (py * qx).sum(-1), (py * qy).sum(-1)


def init(kind: str, key: jax.Array, layers: int, d: int, heads: int = 1, scale: float = 0.0,
         dtype=jnp.float32) -> Params:
    r"""Initial parameters.  ``scale = 0`` gives the identity-free start used by training:
    small random entries of standard deviation ``scale``."""
    check_kind(kind)
    if int(layers) < 1:
        raise ValueError(f"layers L must be >= 1, got {layers}")
    if int(heads) < 1:
        raise ValueError(f"heads H must be >= 1, got {heads}")
    if int(d) < 1:
        raise ValueError(f"input dimension d must be >= 1, got {d}")
    if kind == "gdpp" and heads != 1:
        raise ValueError(f"GD++ has one head per layer; heads must be 1, got {heads}")
    D = d + 1
    if kind == "full":
        kp, kq = jax.random.split(key)
        return Full(scale * jax.random.normal(kp, (layers, heads, D, D), dtype),
                    scale * jax.random.normal(kq, (layers, heads, D, D), dtype))
    if kind == "diag":
        ks = jax.random.split(key, 4)
        return Diag(*(scale * jax.random.normal(k, (layers, heads), dtype) for k in ks))
    k1, k2 = jax.random.split(key)
    return Gdpp(scale * jax.random.normal(k1, (layers,), dtype), scale * jax.random.normal(k2, (layers,), dtype))


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
        raise ValueError(f"X must have n >= 1 context points and d >= 1 inputs, got shape {tuple(xs)}")
    check_parameters(P, Q, d)
    if tuple(getattr(y, "shape", ())) != (B, n):
        raise ValueError(f"y must have shape (B, n) = ({B}, {n}) to match X, got shape {getattr(y, 'shape', None)}")
    if tuple(getattr(x_query, "shape", ())) != (B, d):
        raise ValueError(f"x_query must have shape (B, d) = ({B}, {d}) to match X, "
                         f"got shape {getattr(x_query, 'shape', None)}")
    return B, n, d


def readout(tokens: jax.Array) -> jax.Array:
    r"""Prediction ``ŷ = −y_{n+1}`` from token arrays ``(..., n+1, d+1)`` (e.g. :func:`forward_tokens`)."""
    return -tokens[..., -1, -1]


def _tokens(X: jax.Array, y: jax.Array, x_query: jax.Array) -> jax.Array:
    """Token matrix ``(B, n+1, d+1)``: context ``(x_i, y_i)`` then the query ``(x_t, 0)``."""
    ctx = jnp.concatenate([X, y[..., None]], axis=-1)
    q = jnp.concatenate([x_query, jnp.zeros_like(x_query[..., :1])], axis=-1)
    return jnp.concatenate([ctx, q[..., None, :]], axis=-2)


def forward_tokens(P: jax.Array, Q: jax.Array, X: jax.Array, y: jax.Array, x_query: jax.Array) -> jax.Array:
    r"""Every layer's tokens, written literally: returns ``(L+1, B, n+1, d+1)``.

    ``e_i^{l+1} = e_i^l + Σ_k P_k^l (Σ_{j≤n} e_j^l e_j^{lᵀ}) Q_k^l e_i^l`` for all ``n+1`` tokens.
    """
    n = check_data(P, Q, X, y, x_query)[1]
    Z = _tokens(X, y, x_query)
    out = [Z]
    for l in range(P.shape[0]):
        C = Z[..., :n, :]
        E = jnp.einsum("bja,bjc->bac", C, C)
        G = jnp.einsum("hac,bce,hef->baf", P[l], E, Q[l])
        Z = Z + jnp.einsum("baf,bif->bia", G, Z)
        out.append(Z)
    return jnp.stack(out)


def predict(P: jax.Array, Q: jax.Array, X: jax.Array, y: jax.Array, x_query: jax.Array,
            all_layers: bool = False) -> jax.Array:
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
