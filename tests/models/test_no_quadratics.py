"""Theorem 4.2: noiseless targets stay in col(X) (exact), projection bound, leading order and limit law."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lintf_theory import derive_theorem_4_2, layer_forward, noiseless_weight, run_recursion
from numerics.models.no_quadratics import (
    abs_cosine,
    layer_targets,
    limit_tail,
    projection_bound,
    quadratic_feature,
    random_full_cosines,
)
from tests.strategies import Config, exact_problems, rational_arrays

# Smaller than the shared ``configs`` (L <= 2, n <= 5): exact Fractions through three layers are slow.
small = st.builds(
    Config, d=st.integers(1, 3), n=st.integers(1, 5), H=st.integers(1, 2), L=st.integers(1, 2)
)


@settings(max_examples=15)
@given(exact_problems(small), st.data())
def test_noiseless_targets_are_X_times_derived_weight_exactly(prob, data):
    """Literal exact forward pass: y^l = X v^l with v^l = a^l w_tau - w^l (bridge) at every layer."""
    cfg = prob.cfg
    w_task = data.draw(rational_arrays((cfg.d,)))
    y = prob.X @ w_task
    Z = np.concatenate(
        [
            np.concatenate([prob.X, y[:, None]], 1),
            np.concatenate([prob.x_query, np.zeros(1, dtype=object)])[None],
        ],
        0,
    )
    states = run_recursion(prob.P, prob.Q, prob.X, y, backend="numpy")
    for l in range(cfg.L):
        Z = layer_forward(list(prob.P[l]), list(prob.Q[l]), Z, cfg.n)
        s = states[l + 1]
        assert (Z[: cfg.n, -1] == prob.X @ noiseless_weight(s.a, s.w, w_task)).all()


def test_projection_bound_is_the_sup_over_linear_forms():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 40, 4))
    q = quadratic_feature(X)
    b = projection_bound(X, q)
    V = rng.standard_normal((3, 200, 4))
    cos = abs_cosine(np.einsum("bnd,bkd->bkn", X, V), q[:, None, :])
    assert np.all(cos <= b[:, None] + 1e-12)
    best = np.stack([np.linalg.lstsq(X[i], q[i], rcond=None)[0] for i in range(3)])
    assert abs_cosine(np.einsum("bnd,bd->bn", X, best), q) == pytest.approx(b, rel=1e-12)


def test_leading_order_and_limit_law_match_monte_carlo():
    t = derive_theorem_4_2()
    rng = np.random.default_rng(1)
    n, d = 2000, 5
    X = rng.standard_normal((600, n, d))
    b2 = projection_bound(X, quadratic_feature(X)) ** 2
    lead = float(
        t.bound_sq_leading.subs(
            {s: (d if s.name == "d" else n) for s in t.bound_sq_leading.free_symbols}
        )
    )
    assert b2.mean() == pytest.approx(
        lead, rel=0.1
    )  # mean of 5chi2_1 + chi2_4 over n, sd/mean/sqrt(600) ~ 3%
    chi = 5 * rng.chisquare(1, 200000) + rng.chisquare(d - 1, 200000)
    for thr in (0.05, 0.1):
        assert limit_tail(thr, n, d, t.limit_weights) == pytest.approx(
            (chi > n * thr**2).mean(), abs=3e-3
        )


def test_random_models_respect_the_bound_and_bad_input():
    s = random_full_cosines(0, 30, 3, 2, 2, 4)
    assert s.cos.shape == (2, 3, 4) and np.all(s.cos <= s.bound[:, None, :] + 1e-12)
    with pytest.raises(ValueError, match="n must be >= 1"):
        random_full_cosines(0, 0, 3, 2, 2, 4)
    with pytest.raises(ValueError, match="coord"):
        quadratic_feature(np.zeros((1, 3, 2)), coord=2)


def test_layer_targets_are_the_context_targets_of_the_literal_layer_rule():
    """``layer_targets`` (the JAX token pass) against :func:`lintf_theory.layer_forward` applied layer by
    layer in float64 to each sequence: ``y^l`` of the context tokens, ``l = 0..L``."""
    rng = np.random.default_rng(4)
    L, H, d, n, B = 2, 2, 3, 6, 3
    P, Q = (0.2 * rng.standard_normal((L, H, d + 1, d + 1)) for _ in range(2))
    X, y, xq = (
        rng.standard_normal((B, n, d)),
        rng.standard_normal((B, n)),
        rng.standard_normal((B, d)),
    )
    got = layer_targets(P, Q, X, y, xq)
    assert got.shape == (L + 1, B, n)
    for b in range(B):
        Z = np.concatenate([np.c_[X[b], y[b]], np.r_[xq[b], 0.0][None]])
        want = [Z[:n, -1]]
        for l in range(L):
            Z = layer_forward(list(P[l]), list(Q[l]), Z, n)
            want.append(Z[:n, -1])
        np.testing.assert_allclose(got[:, b], np.stack(want), rtol=1e-10, atol=1e-12)
    assert not np.allclose(got[1], got[0])  # the layers move the targets
