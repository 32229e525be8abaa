"""Bayes-optimal estimator (numerics.baselines.bayes): likelihood vs dense routes, quadrature, optimality."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics import baselines, data
from numerics.baselines import bayes
from numerics.baselines.spectral import ridge_predict, spectral

# Tolerances. The spectral likelihood is accurate to ~1e-13 (checked against 40-digit mpmath below);
# the dense float64 route loses digits as cond(XXᵀ + sI) ~ μ_max/s grows, so we compare it only at
# s >= 0.05, where cond <= ~1e4 and 1e-8 leaves a wide margin.
DENSE_RTOL = 1e-8
MP_ATOL = 1e-10
# Doubling the quadrature nodes must move the loss by less than this (the convergence criterion of the quadrature).
CONVERGED = 1e-4
# Shared with tests/baselines/test_ridge.py so the kernels compile once per shape.
TCHUNK = 10_000
SHAPES = [(1, 3), (4, 6), (6, 6), (12, 5), (20, 10)]


def _rand(seed: int, B: int, n: int, d: int):
    rng = np.random.default_rng(seed)
    X, xq, w = (
        rng.standard_normal((B, n, d)),
        rng.standard_normal((B, d)),
        rng.standard_normal((B, d)),
    )
    y = np.einsum("bnd,bd->bn", X, w) + rng.uniform(0.1, 3.0, (B, 1)) * rng.standard_normal((B, n))
    return X, y, xq


def _dense_ll(X: np.ndarray, y: np.ndarray, s: float) -> float:
    """log N(y; 0, XXᵀ + sI) by a dense n×n Cholesky (independent of the eigenvalue route)."""
    n = y.shape[0]
    C = X @ X.T + s * np.eye(n)
    Lc = np.linalg.cholesky(C)
    z = np.linalg.solve(Lc, y)
    return float(-0.5 * (2 * np.sum(np.log(np.diag(Lc))) + z @ z + n * np.log(2 * np.pi)))


@settings(max_examples=15)
@given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**16), s=st.floats(0.05, 30.0))
def test_log_likelihood_matches_dense(shape: tuple[int, int], seed: int, s: float) -> None:
    n, d = shape
    X, y, xq = _rand(seed, 3, n, d)
    ll = np.asarray(
        bayes.log_marginal_likelihood(
            spectral(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq)), jnp.asarray([s])
        )
    )[:, 0]
    ref = np.array([_dense_ll(X[b], y[b], s) for b in range(3)])
    np.testing.assert_allclose(ll, ref, rtol=DENSE_RTOL, atol=DENSE_RTOL)


@pytest.mark.parametrize("n,d", [(12, 5), (4, 6)])  # n > d and n < d, of SHAPES
def test_log_likelihood_small_s_high_precision(n: int, d: int) -> None:
    """At s = 1e-4 the dense float64 route is ill-conditioned; compare with 40-digit arithmetic.
    Three sequences of a shape of SHAPES, as the test above draws: its programs are compiled once."""
    X, y, xq = _rand(7, 3, n, d)
    s = 1e-4
    ll = np.asarray(
        bayes.log_marginal_likelihood(
            spectral(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq)), jnp.asarray([s])
        )
    )[:, 0]
    for b in range(3):
        with mpmath.workdps(40):
            Xm = mpmath.matrix(X[b].tolist())
            C = Xm * Xm.T + mpmath.mpf(s) * mpmath.eye(n)
            ym = mpmath.matrix(y[b].tolist())
            ref = (
                -(
                    mpmath.log(mpmath.det(C))
                    + (ym.T * mpmath.lu_solve(C, ym))[0]
                    + n * mpmath.log(2 * mpmath.pi)
                )
                / 2
            )
        assert abs(ll[b] - float(ref)) < MP_ATOL, b


def test_quadrature_masses() -> None:
    q = bayes.quadrature("uniform:5")
    assert np.isclose(np.exp(q.log_w).sum(), 1.0, atol=1e-13)
    assert np.all(q.s > 0) and np.all(q.s < 25.0)
    qc = bayes.quadrature("categorical:1,3,5")
    np.testing.assert_allclose(qc.s, [1, 9, 25])
    np.testing.assert_allclose(np.exp(qc.log_w), [1 / 3] * 3)
    assert bayes.quadrature("uniform:0").s.tolist() == [0.0]


def test_categorical_matches_dense_mixture() -> None:
    """Exact mixture: posterior weights from dense likelihoods, ridge by numpy.linalg.solve."""
    noise, sig = "categorical:0.5,2,4", np.array([0.5, 2.0, 4.0])
    # n > d and n < d, three sequences of SHAPES: the programs of the tests around this one
    for n, d in [(20, 10), (4, 6)]:
        X, y, xq = _rand(3, 3, n, d)
        got = np.asarray(bayes.predict(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq), noise))
        for b in range(3):
            ll = np.array([_dense_ll(X[b], y[b], s**2) for s in sig])
            pi = np.exp(ll - ll.max()) / np.exp(ll - ll.max()).sum()
            Sigma, alpha = X[b].T @ X[b], X[b].T @ y[b]
            preds = [xq[b] @ np.linalg.solve(Sigma + s**2 * np.eye(d), alpha) for s in sig]
            assert np.isclose(got[b], pi @ preds, rtol=1e-9, atol=1e-9)


def test_uniform_matches_brute_force_sigma_grid() -> None:
    """Gauss–Legendre in log σ vs a 200 001-point trapezoid rule in σ on [0, σ_max]."""
    X, y, xq = _rand(11, 3, 20, 10)  # three sequences, as elsewhere here: one spectral program
    y[0] = np.einsum("nd,d->n", X[0], np.ones(10)) + 1e-3 * np.random.default_rng(
        0
    ).standard_normal(20)
    sp = spectral(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq))
    sig = np.linspace(0, 5.0, 200_001)[1:]
    ll = np.asarray(bayes.log_marginal_likelihood(sp, jnp.asarray(sig**2)))
    yh = np.asarray(jax.vmap(lambda s: ridge_predict(sp, s))(jnp.asarray(sig**2))).T
    wts = np.exp(ll - ll.max(-1, keepdims=True))
    ref = np.trapezoid(wts * yh, sig, axis=-1) / np.trapezoid(wts, sig, axis=-1)
    got = np.asarray(bayes.predict(jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq), "uniform:5"))
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("noise", ["uniform:1", "uniform:7"])
def test_quadrature_converged(noise: str) -> None:
    """Doubling the nodes from the default changes the loss by < 1e-4 (measured: below 1e-9)."""
    # one chunk of TCHUNK sequences, the chunk the table below draws (one sampler and spectral
    # program); the loss is taken on its first 2000 sequences, enough to show a change of 1e-4
    b = data.sample(jax.random.PRNGKey(5), noise, TCHUNK, 20, 10, jnp.float64)
    sp = jax.tree_util.tree_map(lambda a: a[:2000], spectral(b.X, b.y, b.x_query))
    y_query = np.asarray(b.y_query)[:2000]
    losses = []
    for k in (bayes.DEFAULT_NODES, 2 * bayes.DEFAULT_NODES):
        q = bayes.quadrature(noise, k)
        p = np.asarray(bayes.predict_spectral(sp, jnp.asarray(q.s), jnp.asarray(q.log_w)))
        losses.append(float(np.mean(0.5 * (y_query - p) ** 2)))
    assert abs(losses[0] - losses[1]) < CONVERGED


def test_atom_at_zero() -> None:
    """σ = 0 atoms: fixed:0 / uniform:0 give OLS; a categorical 0 wins iff the data interpolate."""
    X, y, xq = _rand(4, 3, 20, 10)
    y_clean = np.einsum("bnd,bd->bn", X, np.random.default_rng(1).standard_normal((3, 10)))
    args = [jnp.asarray(a) for a in (X, y_clean, xq)]
    ols = np.array([xq[b] @ np.linalg.solve(X[b].T @ X[b], X[b].T @ y_clean[b]) for b in range(3)])
    for noise in ("fixed:0", "uniform:0", "categorical:0,1,3"):
        np.testing.assert_allclose(np.asarray(bayes.predict(*args, noise)), ols, rtol=1e-9)
    sp = spectral(
        jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq)
    )  # noisy data: the 0 atom gets no weight
    pi = np.asarray(
        bayes.posterior_weights(sp, jnp.asarray([0.0, 1.0, 9.0]), jnp.log(jnp.ones(3) / 3))
    )
    assert np.all(pi[:, 0] == 0) and np.allclose(pi.sum(-1), 1)


def test_bayes_beats_every_baseline() -> None:
    """The posterior mean minimises the expected loss; on 20k sequences of a continuous prior it
    beats each tuned baseline.  A discrete prior's table (``categorical:1,3``, seed 3) is the one
    ``tests/baselines/test_ridge.py::test_cli_json`` prints and checks the same way."""
    r = baselines.table("uniform:5", sequences=20_000, tune_sequences=20_000, seed=3, chunk=TCHUNK)
    others = [m for m in baselines.NAMES if m not in ("Bayes", "Oracle")]
    assert all(r["Bayes"]["loss"] < r[m]["loss"] for m in others), {m: r[m]["loss"] for m in r}
    assert r["Bayes"]["loss"] > 0  # the oracle knows σ_τ, Bayes does not


def test_bad_nodes() -> None:
    with pytest.raises(ValueError, match="nodes"):
        bayes.quadrature("uniform:5", 10)
