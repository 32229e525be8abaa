"""Shared fixtures-as-functions for the model and inspector tests: a small batch and O(1)-scaled models.

Random linear transformers are cubic per layer in the tokens, so unscaled deep models overflow.
:func:`scaled_model` draws ``P, Q`` with unit entries and then rescales layer ``l`` (``P`` and
``Q`` by the same factor) so that ``max_b ‖G^l_b‖_F = g`` on the given batch: tokens grow by at
most ``(1+g)`` per layer, so values stay O(1) up to 7 layers with the default ``g = 0.3``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from numerics import models
from numerics.data import Batch

# Sizes shared by the tests so that jit caches are reused: B sequences, n context points, d inputs.
B, N, D = 4, 6, 3


def toy_batch(seed: int = 0, dtype=jnp.float64, n: int = N, d: int = D, batch: int = B) -> Batch:
    """docs/model.md sequences with ``σ ~ U(0, 1)``, drawn with NumPy (no jit compile: keeps tests fast)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((batch, d))
    X = rng.standard_normal((batch, n, d))
    xq = rng.standard_normal((batch, d))
    sigma = rng.uniform(0, 1, batch)
    y = np.einsum("bnd,bd->bn", X, w) + sigma[:, None] * rng.standard_normal((batch, n))
    arrs = (X, y, xq, np.einsum("bd,bd->b", xq, w), sigma, w)
    return Batch(*(jnp.asarray(a, dtype=dtype) for a in arrs))


def draw_params(kind: str, seed: int, layers: int, d: int, heads: int = 1, dtype=jnp.float64) -> models.Params:
    """Standard-normal native parameters drawn with NumPy (``models.init`` with ``scale=1`` but without
    compiling ``jax.random`` for every shape, which dominates test time on a loaded machine)."""
    rng = np.random.default_rng(seed)
    draw = lambda *shape: jnp.asarray(rng.standard_normal(shape), dtype=dtype)  # noqa: E731
    if kind == "full":
        return models.Full(draw(layers, heads, d + 1, d + 1), draw(layers, heads, d + 1, d + 1))
    if kind == "diag":
        return models.Diag(*(draw(layers, heads) for _ in range(4)))
    return models.Gdpp(draw(layers), draw(layers))


def _np_universal(kind: str, rng: np.random.Generator, layers: int, heads: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Standard-normal native parameters, converted by the code under test (``models.universal``)."""
    draw = lambda *shape: jnp.asarray(rng.standard_normal(shape), dtype=jnp.float64)  # noqa: E731
    if kind == "full":
        params: models.Params = models.Full(draw(layers, heads, d + 1, d + 1), draw(layers, heads, d + 1, d + 1))
    elif kind == "diag":
        params = models.Diag(*(draw(layers, heads) for _ in range(4)))
    elif kind == "gdpp":
        params = models.Gdpp(draw(layers), draw(layers))
    else:
        raise ValueError(f"unknown kind {kind!r}")
    P, Q = models.universal(params, d)
    return np.array(P), np.array(Q)


def scaled_model(kind: str, seed: int, layers: int, heads: int, data: Batch, g: float = 0.3,
                 ) -> tuple[jax.Array, jax.Array]:
    """Universal ``(P, Q)`` of a random ``kind`` model, rescaled layer by layer to ``‖G^l‖_F ≤ g`` on ``data``.

    Scaffolding only (NumPy, no per-shape compile): the layer rule here is the literal one, and
    the models under test never call it.
    """
    d = data.X.shape[-1]
    P, Q = _np_universal(kind, np.random.default_rng(seed), layers, heads, d)
    C = np.concatenate([np.asarray(data.X), np.asarray(data.y)[..., None]], axis=-1)
    for l in range(layers):
        E = np.einsum("bja,bjc->bac", C, C)
        G = np.einsum("hac,bce,hef->baf", P[l], E, Q[l])
        t = np.sqrt(g / max(np.max(np.linalg.norm(G, axis=(-2, -1))), 1e-300))
        P[l] *= t
        Q[l] *= t
        C = C + np.einsum("baf,bif->bia", G * t * t, C)
    return jnp.asarray(P, dtype=data.X.dtype), jnp.asarray(Q, dtype=data.X.dtype)


# Tolerance of "agree to float64 precision" for two routes through <= 7 layers of O(1) products:
# rounding grows like L·(d+1)·n·eps ≈ 7·4·6·2.2e-16 ≈ 4e-14 relative to the largest entry; 1e-12
# leaves margin, while any formula error changes values by O(g) = O(0.1).
RTOL64 = 1e-12
# float32 against float64 for the same model and data: eps32 ≈ 1.2e-7 times the same growth factor.
RTOL32 = 1e-4


def max_rel_err(a: jax.Array, b: jax.Array) -> float:
    """``max |a − b| / max(max |b|, 1e-30)``: error relative to the largest entry of the reference ``b``."""
    a, b = jnp.asarray(a, jnp.float64), jnp.asarray(b, jnp.float64)
    return float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(b)), 1e-30))
