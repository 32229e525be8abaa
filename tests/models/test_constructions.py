"""Hand-built transformers (numerics.models.constructions) against independent references."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from lintf_theory import layer_count
from numerics.models import forward_tokens, universal
from numerics.models.constructions import (
    gd,
    gd_explicit,
    gdpp_second_order,
    implicit_weight,
    spectrum_data,
    theorem_5_2,
)


def test_gd_construction_equals_explicit_gd():
    # the sizes of the next test's sequence and model (n = 12, d = 4, six one-head layers): the
    # token pass is compiled once for both
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((12, 4)), rng.standard_normal(12)
    eta = 0.05
    ws = implicit_weight(gd(eta, 6), X, y, all_layers=True)
    np.testing.assert_allclose(ws, gd_explicit(X, y, eta, 6), rtol=1e-12, atol=1e-12)
    # literal token pass (no bridge): y_hat = -y_{n+1}^L on a query
    xq = rng.standard_normal(4)
    P, Q = universal(gd(eta, 6), 4)
    Z = forward_tokens(
        jnp.asarray(P),
        jnp.asarray(Q),
        jnp.asarray(X)[None],
        jnp.asarray(y)[None],
        jnp.asarray(xq)[None],
    )
    np.testing.assert_allclose(
        -np.asarray(Z[:, 0, -1, -1]), gd_explicit(X, y, eta, 6) @ xq, rtol=1e-10, atol=1e-12
    )


def test_gdpp_follows_the_eigenvalue_map():
    X, w, xq = spectrum_data(2, 12, 4, 1.0, 30.0)
    pc = gdpp_second_order(1.0, 30.0, precondition=5)
    P, Q = universal(pc.params, 4)
    Z = forward_tokens(
        jnp.asarray(P),
        jnp.asarray(Q),
        jnp.asarray(X)[None],
        jnp.asarray(X @ w)[None],
        jnp.asarray(xq)[None],
    )
    for l in range(6):
        C = np.asarray(Z[l, 0, :12, :4])
        ev = np.linalg.eigvalsh(C.T @ C)
        np.testing.assert_allclose([ev[0], ev[-1]], [pc.mu[l], pc.nu[l]], rtol=1e-10)


@pytest.mark.parametrize("kap", [1.02, 5.0, 300.0])
@pytest.mark.parametrize("eps", [1e-2, 1e-6, 1e-11])
def test_theorem_5_1_reaches_eps_within_l(kap, eps):
    X, w, xq = spectrum_data(4, 16, 5, 2.0, 2.0 * kap)
    pc = gdpp_second_order(2.0, 2.0 * kap, eps=eps)
    assert len(pc.params.omega_xx) == layer_count(kap, eps).total
    w_hat = implicit_weight(pc.params, X, X @ w)
    assert abs(w_hat @ xq - w @ xq) <= eps * np.linalg.norm(xq) * np.linalg.norm(w)


def test_bad_inputs():
    with pytest.raises(ValueError, match="mu"):
        gdpp_second_order(-1.0, 2.0, eps=0.1)
    with pytest.raises(ValueError, match="exactly one"):
        gdpp_second_order(1.0, 2.0)
    with pytest.raises(ValueError, match="layers"):
        gd(0.1, 0)
    with pytest.raises(ValueError, match="distinct"):
        theorem_5_2(1.0, 1.0, 100)
