"""Float64 models and data for the layer-by-layer properties: sizes, batches and O(1)-scaled models.

Random linear transformers are cubic per layer in the tokens, so unscaled deep models overflow.
:func:`scaled_model` draws ``P, Q`` with unit entries and then rescales layer ``l`` (``P`` and
``Q`` by the same factor) so that ``max_b ‖G^l_b‖_F = g`` on the given batch: tokens grow by at
most ``(1+g)`` per layer, so values stay O(1) up to 7 layers with the default ``g = 0.3``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

from numerics import models
from numerics.data import Batch

# Sizes shared by the tests so that jit caches are reused: B sequences, n context points, d inputs.
B, N, D = 4, 6, 3
KINDS = ("full", "diag", "gdpp")
#: Degenerate but legal data: repeated context points, all-zero targets, rank-one inputs.
DEGENERACIES = ("none", "repeated", "zero_targets", "rank_one")


def toy_batch(seed: int = 0, dtype=jnp.float64, n: int = N, d: int = D, batch: int = B) -> Batch:
    """Sequences of the data model (docs/model.md) with ``σ ~ U(0, 1)``, drawn with NumPy (no jit
    compile: keeps tests fast)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((batch, d))
    X = rng.standard_normal((batch, n, d))
    xq = rng.standard_normal((batch, d))
    sigma = rng.uniform(0, 1, batch)
    y = np.einsum("bnd,bd->bn", X, w) + sigma[:, None] * rng.standard_normal((batch, n))
    arrs = (X, y, xq, np.einsum("bd,bd->b", xq, w), sigma, w)
    return Batch(*(jnp.asarray(a, dtype=dtype) for a in arrs))


def draw_params(
    kind: str, seed: int, layers: int, d: int, heads: int = 1, dtype=jnp.float64
) -> models.Params:
    """Standard-normal native parameters drawn with NumPy (``models.init`` with ``scale=1`` but without
    compiling ``jax.random`` for every shape, which dominates test time on a loaded machine)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    rng = np.random.default_rng(seed)
    draw = lambda *shape: jnp.asarray(rng.standard_normal(shape), dtype=dtype)  # noqa: E731
    if kind == "full":
        return models.Full(draw(layers, heads, d + 1, d + 1), draw(layers, heads, d + 1, d + 1))
    if kind == "diag":
        return models.Diag(*(draw(layers, heads) for _ in range(4)))
    return models.Gdpp(draw(layers), draw(layers))


def scaled_model(
    kind: str,
    seed: int,
    layers: int,
    heads: int,
    data: Batch,
    g: float = 0.3,
) -> tuple[jax.Array, jax.Array]:
    """Universal ``(P, Q)`` of a random ``kind`` model, rescaled layer by layer to ``‖G^l‖_F ≤ g`` on ``data``.

    The native parameters go through the code under test (``models.universal``); the rescaling is
    scaffolding only (NumPy, no per-shape compile): the layer rule here is the literal one, and the
    models under test never call it.
    """
    d = data.X.shape[-1]
    P, Q = (np.array(a) for a in models.universal(draw_params(kind, seed, layers, d, heads), d))
    C = np.concatenate([np.asarray(data.X), np.asarray(data.y)[..., None]], axis=-1)
    for l in range(layers):
        E = np.einsum("bja,bjc->bac", C, C)
        G = np.einsum("hac,bce,hef->baf", P[l], E, Q[l])
        t = np.sqrt(g / max(np.max(np.linalg.norm(G, axis=(-2, -1))), 1e-300))
        P[l] *= t
        Q[l] *= t
        C = C + np.einsum("baf,bif->bia", G * t * t, C)
    return jnp.asarray(P, dtype=data.X.dtype), jnp.asarray(Q, dtype=data.X.dtype)


@dataclass(frozen=True)
class ModelConfig:
    """A model kind and sizes, a data seed and a degeneracy of the context."""

    kind: str
    d: int  # 1..5
    n: int  # 1..10 (n < d happens: degenerate but legal)
    H: int  # 1..3 (1 for gdpp)
    L: int  # 1..7 (the paper's depths)
    seed: int
    degeneracy: str


@st.composite
def model_configs(
    draw: st.DrawFn, kinds: tuple[str, ...] = KINDS, max_L: int = 7, max_d: int = 5, max_n: int = 10
) -> ModelConfig:
    """Default bounds keep one example under a second; the slow tests raise them (d 10, n 30, L 12)."""
    kind = draw(st.sampled_from(kinds))
    return ModelConfig(
        kind=kind,
        d=draw(st.integers(1, max_d)),
        n=draw(st.integers(1, max_n)),
        H=1 if kind == "gdpp" else draw(st.integers(1, 3)),
        L=draw(st.integers(1, max_L)),
        seed=draw(st.integers(0, 2**16)),
        degeneracy=draw(st.sampled_from(DEGENERACIES)),
    )


def config_batch(cfg: ModelConfig, batch: int = 3) -> Batch:
    """A float64 batch for ``cfg`` (NumPy-drawn: no per-shape compile), with its degeneracy applied."""
    b = toy_batch(cfg.seed, n=cfg.n, d=cfg.d, batch=batch)
    X, y = np.array(b.X), np.array(b.y)
    if cfg.degeneracy == "repeated":
        X[:, 1::2] = X[:, :1]
        y[:, 1::2] = y[:, :1]
    elif cfg.degeneracy == "zero_targets":
        y[:] = 0
    elif cfg.degeneracy == "rank_one":
        X = X[:, :, :1] * np.ones((1, 1, cfg.d))
    return Batch(jnp.asarray(X), jnp.asarray(y), b.x_query, b.y_query, b.sigma, b.w)


def property_settings(default_examples: int = 4) -> settings:
    """Settings for the float64 layer-by-layer properties: few examples by default (each draws new
    shapes, so JAX compiles: four keep each property of the default run to seconds), the ``slow``
    profile's count (``HYPOTHESIS_PROFILE=slow``, 200) when it is loaded."""
    slow = os.environ.get("HYPOTHESIS_PROFILE") == "slow"
    return settings(max_examples=settings.default.max_examples if slow else default_examples)


#: Sizes of every trained model of the ``trained`` fixture (``tests/conftest.py``).
TRAINED_D, TRAINED_N = 3, 8


class TrainedModel(NamedTuple):
    """A trained model: universal ``P, Q`` ``(L, H, d+1, d+1)`` and its native parameters of ``kind``."""

    kind: str
    P: jax.Array
    Q: jax.Array
    params: models.Params
