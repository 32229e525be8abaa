r"""Beyond the paper: implicit weights ``w^l`` of a trained model against the ridge path, and the depth gap.

Theorem 4.1 (docs/model.md) gives every layer an implicit weight ``w^l`` with ``ŷ^l = ⟨w^l, x_t⟩``;
:func:`numerics.evaluate.inspector.implicit_states` computes it by the derived recursion (Lemma 4.3, through
the bridge).  We compare it with the ridge path

.. math::

    \mathcal R = \{\, w_s = (\Sigma + s I)^{-1}\alpha : s \in [0, \infty] \,\},

which runs from OLS ``w*`` (``s = 0``) to ``0`` (``s = ∞``) and holds the oracle ``w_{σ²}``.  Per
sequence and layer: the relative distance ``min_s ‖w^l − w_s‖ / ‖w_{σ²}‖`` (on a geometric ``s``
grid), the distances to ``w_{σ²}`` and to ``w*``, and the ``s`` of the nearest point for the last
layer (a model that adapts to the noise has ``s ≈ σ²``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from numerics import data
from numerics.evaluate import inspector

#: ``s`` grid of the ridge path (plus ``s = 0``); its span covers σ² from 1e-5 to 1e5.
S_GRID = np.concatenate([[0.0], np.geomspace(1e-5, 1e5, 241)])


def trajectories(
    P: Any, Q: Any, noise: str, sequences: int, n: int, d: int, key: jax.Array, show: int = 4
) -> dict[str, np.ndarray]:
    """Arrays for :func:`numerics.reproduce.plots.fig_weights` (float64, ``sequences`` fresh sequences)."""
    with jax.enable_x64(True):
        b = data.sample(key, noise, int(sequences), n, d, jnp.float64)
        st = inspector.implicit_states(
            jnp.asarray(P, jnp.float64), jnp.asarray(Q, jnp.float64), b.X, b.y
        )
        w = np.asarray(st.w)  # (L+1, B, d)
        Sigma = np.asarray(jnp.einsum("bnd,bne->bde", b.X, b.X))
        alpha = np.asarray(jnp.einsum("bnd,bn->bd", b.X, b.y))
    mu, V = np.linalg.eigh(Sigma)  # (B, d), (B, d, d)
    beta = np.einsum("bdk,bd->bk", V, alpha)
    coef = beta[None] / (mu[None] + S_GRID[:, None, None])  # (S, B, d) in the eigenbasis
    path = np.einsum("bdk,sbk->sbd", V, coef)  # (S, B, d)
    sig = np.asarray(b.sigma)
    oracle = np.einsum("bdk,bk->bd", V, beta / (mu + sig[:, None] ** 2))
    ols = path[0]
    scale = np.linalg.norm(oracle, axis=-1)  # (B,)
    dists = np.linalg.norm(w[:, None] - path[None], axis=-1)  # (L+1, S, B)
    e1 = ols / np.linalg.norm(ols, axis=-1, keepdims=True)
    o = oracle - np.sum(oracle * e1, -1, keepdims=True) * e1
    e2 = o / np.maximum(np.linalg.norm(o, axis=-1, keepdims=True), 1e-300)
    nrm = np.linalg.norm(ols, axis=-1)[:, None]

    def coords(v: np.ndarray) -> np.ndarray:
        return np.stack([np.sum(v * e1, -1), np.sum(v * e2, -1)], -1) / nrm

    k = min(int(show), w.shape[1])
    return {
        "dist": dists.min(1) / scale,
        "s_best": S_GRID[np.argmin(dists[-1], axis=0)],
        "sigma": sig,
        "to_oracle": np.linalg.norm(w - oracle[None], axis=-1) / scale,
        "to_ols": np.linalg.norm(w - ols[None], axis=-1) / np.linalg.norm(ols, axis=-1),
        "proj": coords(w)[:, :k],
        "path": coords(path)[:, :k],
    }


def depth_gap(
    cells: dict[str, dict], model: str, noise: str, ref: int
) -> list[tuple[int, float, float, float]]:
    """``(L, gap to Bayes, its SE, fraction of the depth-``ref`` gap closed)`` for every stored depth."""
    rows = sorted(
        (m.layers, m.eval["minus_Bayes"], m.eval["minus_Bayes_se"])
        for m in cells.values()
        if m.model == model and m.noise == noise
    )
    g_ref = next((g for L, g, _ in rows if L == ref), None)
    return [(L, g, s, (g_ref - g) / g_ref if g_ref else float("nan")) for L, g, s in rows]
