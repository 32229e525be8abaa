"""The spectral form of ridge (numerics.baselines.spectral) against plain NumPy linear algebra,
sequence by sequence."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from numerics.baselines import oracle_weights
from numerics.baselines.spectral import ridge_predict, ridge_predict_grid, spectral

# Well-conditioned float64 systems (n = 12, d = 4): the eigen route and numpy.linalg.solve agree to
# 1e-9.
RTOL = 1e-9


def _data(seed: int, B: int = 6, n: int = 12, d: int = 4):
    rng = np.random.default_rng(seed)
    X, xq, w = (
        rng.standard_normal((B, n, d)),
        rng.standard_normal((B, d)),
        rng.standard_normal((B, d)),
    )
    return X, np.einsum("bnd,bd->bn", X, w) + 0.7 * rng.standard_normal((B, n)), xq


def _ridge_np(X: np.ndarray, y: np.ndarray, xq: np.ndarray, s: float) -> np.ndarray:
    d = X.shape[-1]
    return np.array(
        [
            xq[b] @ np.linalg.solve(X[b].T @ X[b] + s * np.eye(d), X[b].T @ y[b])
            for b in range(len(X))
        ]
    )


def test_the_spectral_statistics_are_those_of_the_eigendecomposition() -> None:
    """``μ`` the eigenvalues of ``Σ = XᵀX``, ``β = Vᵀα``, ``γ = Vᵀx_t`` up to each eigenvector's
    sign (so ``β γ`` is sign-free), ``ρ = ‖y − X w_ols‖²`` and ``dof = n − d``."""
    X, y, xq = _data(1)
    with jax.enable_x64(True):
        sp = spectral(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq))
    for b in range(len(X)):
        mu, V = np.linalg.eigh(X[b].T @ X[b])
        np.testing.assert_allclose(np.asarray(sp.mu[b]), mu, rtol=RTOL)
        np.testing.assert_allclose(
            np.asarray(sp.beta[b] * sp.gamma[b]),
            (V.T @ X[b].T @ y[b]) * (V.T @ xq[b]),
            rtol=1e-8,
            atol=1e-10,
        )
        w = np.linalg.lstsq(X[b], y[b], rcond=None)[0]
        assert np.isclose(float(sp.rho[b]), np.sum((y[b] - X[b] @ w) ** 2), rtol=RTOL)
    assert np.all(np.asarray(sp.dof) == 12 - 4)


def test_ridge_over_a_grid_is_ridge_at_each_point() -> None:
    """``ridge_predict_grid`` row ``g`` equals NumPy's ridge at ``s_g`` (``0`` included: OLS) for
    every sequence."""
    X, y, xq = _data(2)
    grid = np.array([0.0, 1e-3, 0.5, 3.0, 40.0])
    with jax.enable_x64(True):
        sp = spectral(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq))
        rows = np.asarray(ridge_predict_grid(sp, jnp.asarray(grid)))
        s_b = np.array([1e-3, 0.5, 3.0, 40.0, 0.0, 2.0])  # one s per sequence
        per_sequence_s = np.asarray(ridge_predict(sp, jnp.asarray(s_b)))
    assert rows.shape == (len(grid), len(X))
    for g, s in enumerate(grid):
        np.testing.assert_allclose(rows[g], _ridge_np(X, y, xq, s), rtol=RTOL)
    want = [_ridge_np(X[b : b + 1], y[b : b + 1], xq[b : b + 1], s_b[b])[0] for b in range(len(X))]
    np.testing.assert_allclose(per_sequence_s, want, rtol=RTOL)


def test_the_oracle_weights_solve_the_normal_equations_at_each_sequences_sigma() -> None:
    X, y, _ = _data(3)
    sigma = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 5.0])
    with jax.enable_x64(True):
        w = np.asarray(oracle_weights(jnp.asarray(X), jnp.asarray(y), jnp.asarray(sigma)))
    d = X.shape[-1]
    for b in range(len(X)):
        # ridge as least squares on [X; σ I], [y; 0]
        A = np.vstack([X[b], sigma[b] * np.eye(d)])
        np.testing.assert_allclose(
            w[b], np.linalg.lstsq(A, np.r_[y[b], np.zeros(d)], rcond=None)[0], rtol=RTOL
        )
