"""Theorem 5.2: derived two-layer parameters against the literal DIAG forward pass and ridge."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from lintf_theory import theorem_5_2_parameters
from numerics.models import forward_tokens, universal
from numerics.models.constructions import implicit_weight, theorem_5_2


def test_two_layer_model_matches_ridge_for_large_n():
    rng = np.random.default_rng(0)
    n, d = 20000, 3
    for sigma in (1.0, 3.0):
        X = rng.standard_normal((n, d)) / np.sqrt(n)
        y = X @ rng.standard_normal(d) + sigma * rng.standard_normal(n)
        ridge = np.linalg.solve(X.T @ X + sigma**2 * np.eye(d), X.T @ y)
        w2 = implicit_weight(theorem_5_2(1.0, 3.0, n), X, y)
        assert np.linalg.norm(w2 - ridge) <= 0.1 * np.linalg.norm(ridge)


def test_construction_is_the_literal_diag_model():
    rng = np.random.default_rng(1)
    X, y, xq = rng.standard_normal((6, 2)), rng.standard_normal(6), rng.standard_normal(2)
    P, Q = universal(theorem_5_2(1.0, 2.0, 6), 2)
    Z = forward_tokens(
        jnp.asarray(P),
        jnp.asarray(Q),
        jnp.asarray(X)[None],
        jnp.asarray(y)[None],
        jnp.asarray(xq)[None],
    )
    oyx, oyy = theorem_5_2_parameters(1.0, 2.0, 6)
    assert oyx < 0 and oyy < 0
    assert -float(Z[-1, 0, -1, -1]) == pytest.approx(
        float(implicit_weight(theorem_5_2(1.0, 2.0, 6), X, y) @ xq), rel=1e-9
    )
