r"""One eigendecomposition of ``Σ`` per sequence, shared by every ridge-type predictor (docs/model.md).

With ``Σ = Xᵀ X = V diag(μ) Vᵀ``, ``α = Xᵀ y``, ``β = Vᵀ α`` and ``γ = Vᵀ x_t``, ridge with any
``s = λ_ridge ≥ 0`` predicts

.. math::

    \hat y(s) = x_t^\top (\Sigma + s I)^{+} \alpha = \sum_{k:\,\mu_k > 0} \frac{\gamma_k \beta_k}{\mu_k + s},

so one ``eigh`` per sequence serves OLS (``s = 0``), the oracle (``s = σ_τ²``), ConstRR, AdaRR,
TunedRR and every node of the Bayes mixture (:mod:`numerics.baselines.bayes`).

==============  ========================================================================
symbol          field
==============  ========================================================================
``μ_k``         ``mu (B, d)``: eigenvalues of ``Σ``, ascending; ``0`` outside the numerical range
``β = Vᵀα``     ``beta (B, d)``: ``0`` on directions with ``μ_k = 0`` (``α ∈ range Σ``)
``γ = Vᵀx_t``   ``gamma (B, d)``
``ρ``           ``rho (B,)``: ``‖y − X w*‖²`` with ``w* = Σ⁺α`` (OLS, minimum-norm when ``n ≤ d``)
``λ``           ``lam (B,)``: ``‖y‖²``
``n − r``       ``dof (B,)``: ``n`` minus the numerical rank ``r`` of ``X``
==============  ========================================================================

``ρ`` is computed from the residual vector, not as ``λ − αᵀΣ⁻¹α``, which cancels when ``σ_τ`` is small.
``(Σ + sI)⁺`` is the inverse for ``s > 0`` and the pseudo-inverse at ``s = 0`` (minimum-norm
interpolation when ``n ≤ d``, the ``s → 0`` limit of ridge).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from numerics.types import Inputs, Queries, Scalars, Targets


class Spectral(NamedTuple):
    """Per-sequence spectral statistics of the context (see the module docstring)."""

    mu: jax.Array
    beta: jax.Array
    gamma: jax.Array
    rho: jax.Array
    lam: jax.Array
    dof: jax.Array
    active: jax.Array  # (B, d) float: 1 where μ_k is inside the numerical range of Σ


def check_data(X: Inputs, y: Targets, x_query: Queries) -> tuple[int, int]:
    """One-line errors for shape mismatches; returns ``(n, d)``."""
    if X.ndim != 3:
        raise ValueError(f"X must have shape (B, n, d), got {tuple(X.shape)}")
    B, n, d = X.shape
    if tuple(y.shape) != (B, n):
        raise ValueError(f"y must have shape (B, n) = {(B, n)} to match X, got {tuple(y.shape)}")
    if tuple(x_query.shape) != (B, d):
        raise ValueError(
            f"x_query must have shape (B, d) = {(B, d)} to match X, got {tuple(x_query.shape)}"
        )
    return n, d


def check_ols(n: int, d: int, name: str = "OLS") -> None:
    """OLS-based baselines need ``Σ`` invertible, i.e. ``n > d``."""
    if n <= d:
        raise ValueError(f"{name} needs context length n > d (Σ invertible), got n={n}, d={d}")


def check_s(s, name: str = "sigma") -> None:
    """Ridge parameters / noise levels must be finite and ``>= 0`` (checked on concrete values)."""
    arr = np.asarray(s, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(
            f"{name} must be finite and >= 0, got min {np.nanmin(arr) if arr.size else arr}"
        )


@jax.jit
def spectral(X: Inputs, y: Targets, x_query: Queries) -> Spectral:
    """Eigendecompose ``Σ = XᵀX`` once per sequence and project ``α`` and ``x_t`` onto its eigenvectors."""
    n, d = X.shape[-2], X.shape[-1]
    Sigma = jnp.einsum("bni,bnj->bij", X, X)
    alpha = jnp.einsum("bni,bn->bi", X, y)
    mu, V = jnp.linalg.eigh(Sigma)
    tol = mu[..., -1:] * (max(n, d) * 10 * jnp.finfo(X.dtype).eps)
    active = (mu > tol).astype(X.dtype)
    mu = jnp.where(active > 0, mu, 0.0)
    beta = jnp.einsum("bij,bi->bj", V, alpha) * active
    gamma = jnp.einsum("bij,bi->bj", V, x_query)
    w_ols = jnp.einsum("bij,bj->bi", V, beta / jnp.where(active > 0, mu, 1.0))
    r = y - jnp.einsum("bnd,bd->bn", X, w_ols)
    rank = active.sum(-1)
    return Spectral(mu, beta, gamma, jnp.sum(r * r, -1), jnp.sum(y * y, -1), n - rank, active)


def _inv(sp: Spectral, s: jax.Array) -> jax.Array:
    """``1/(μ_k + s)`` on the active directions, ``0`` elsewhere; ``s`` broadcasts against ``(B, d)``."""
    den = sp.mu + s
    return jnp.where(sp.active > 0, 1.0 / jnp.where(sp.active > 0, den, 1.0), 0.0)


@jax.jit
def ridge_predict(sp: Spectral, s: jax.Array) -> Scalars:
    r"""``ŷ(s) = Σ_k γ_k β_k / (μ_k + s)`` for a per-sequence ``s (B,)`` or a scalar ``s >= 0``."""
    s = jnp.broadcast_to(jnp.asarray(s, sp.mu.dtype), sp.rho.shape)[:, None]
    return jnp.sum(sp.gamma * sp.beta * _inv(sp, s), -1)


@jax.jit
def ridge_predict_grid(sp: Spectral, s_grid: jax.Array) -> jax.Array:
    """``ŷ(s)`` for every ``s`` of a grid ``(G,)``: returns ``(G, B)``; memory stays ``O(B d)`` per point."""
    return jax.lax.map(lambda s: ridge_predict(sp, s), s_grid)


@jax.jit
def ridge_weights(X: Inputs, y: Targets, s: jax.Array) -> jax.Array:
    r"""Ridge weights ``w = V diag(1/(μ+s)) Vᵀ α`` ``(B, d)`` (pseudo-inverse at ``s = 0``)."""
    Sigma = jnp.einsum("bni,bnj->bij", X, X)
    alpha = jnp.einsum("bni,bn->bi", X, y)
    mu, V = jnp.linalg.eigh(Sigma)
    n, d = X.shape[-2], X.shape[-1]
    active = mu > mu[..., -1:] * (max(n, d) * 10 * jnp.finfo(X.dtype).eps)
    s = jnp.broadcast_to(jnp.asarray(s, X.dtype), X.shape[:1])[:, None]
    inv = jnp.where(active, 1.0 / jnp.where(active, mu + s, 1.0), 0.0)
    return jnp.einsum("bij,bj->bi", V, inv * jnp.einsum("bij,bi->bj", V, alpha))


def ridge(X: Inputs, y: Targets, x_query: Queries, s) -> Scalars:
    """Validated public entry: ridge prediction with ``s = λ_ridge >= 0`` (scalar or ``(B,)``)."""
    check_data(X, y, x_query)
    check_s(s, "ridge parameter s")
    return ridge_predict(spectral(X, y, x_query), s)
