"""One-layer closed form: derived Wishart moments and loss against numpy Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from lintf_theory import ONE_STEP_SYMBOLS, one_step_rule, wishart_moments

d, n = ONE_STEP_SYMBOLS.d, ONE_STEP_SYMBOLS.n


def test_wishart_moments_monte_carlo():
    m = wishart_moments()
    rng = np.random.default_rng(0)
    n_, d_ = 7, 3
    X = rng.standard_normal((20000, n_, d_))
    S = np.einsum("bni,bnj->bij", X, X)
    m1 = float(m.m1.subs({n: n_, d: d_}))
    m2 = float(m.m2.subs({n: n_, d: d_}))
    np.testing.assert_allclose(S.mean(0), m1 * np.eye(d_), atol=0.15)
    np.testing.assert_allclose((S @ S).mean(0), m2 * np.eye(d_), rtol=0.03, atol=1.5)


def test_optimum_is_the_minimum_of_the_loss():
    loss, opt = (r.numpy for r in one_step_rule())
    for n_, d_, s2 in ((20, 10, 0.0), (5, 3, 2.0)):
        eta_star, l_star = opt(n_, d_, s2)
        assert loss(n_, d_, eta_star, s2) == pytest.approx(l_star, rel=1e-12)
        grid = np.linspace(0, 3 * eta_star, 301)
        assert np.all(loss(n_, d_, grid, s2) >= l_star - 1e-12)


@pytest.mark.slow
def test_one_step_loss_against_numerics_data_sample():
    """Monte Carlo with the project's sampler (numerics.data.sample, float64) and the literal one-layer model."""
    import jax

    from lintf_theory import derive_one_step_gd  # noqa: F401  (derivation under test)
    from numerics.data import Noise, sample
    from numerics.models import forward_tokens, universal
    from numerics.models.constructions import gd

    loss, opt = (r.numpy for r in one_step_rule())
    for i, noise in enumerate(("fixed:0", "uniform:3")):
        s2 = Noise.parse(noise).mean_sigma2
        eta_star, _ = opt(20, 10, s2)
        b = sample(jax.random.PRNGKey(i), noise, 20000, 20, 10, dtype=jax.numpy.float64)
        P, Q = universal(gd(float(eta_star), 1), 10)
        sq = 0.5 * np.asarray(
            (b.y_query + forward_tokens(P, Q, b.X, b.y, b.x_query)[-1, :, -1, -1]) ** 2
        )
        assert abs(sq.mean() - loss(20, 10, eta_star, s2)) < 4 * sq.std() / np.sqrt(sq.size)
