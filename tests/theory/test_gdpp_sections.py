"""GD++ covariance map, Section 5.2 rescaling and Section 5.3 step size vs the literal layer."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp
from hypothesis import assume, given
from hypothesis import strategies as st

from lintf_theory import (
    derive_gdpp,
    exact_prediction_rule,
    gdpp_covariance_rule,
    gdpp_eigen_rule,
    layer_forward,
    rescaling_rule,
    step_size_rule,
)
from lintf_theory.exact import diag_universal, solve, tokens
from tests.strategies import rational_arrays, rationals

sizes = st.tuples(st.integers(1, 3), st.integers(1, 5))  # (d, n): d in [1,3], n in [1,5]


@st.composite
def contexts(draw: st.DrawFn, min_n_over_d: int = 0):
    d, n = draw(sizes)
    n = max(n, d + min_n_over_d)
    return (
        d,
        n,
        tokens(
            draw(rational_arrays((n, d))), draw(rational_arrays((n,))), draw(rational_arrays((d,)))
        ),
    )


def _one_layer(Z, n, d, px, py, qx, qy):
    P, Q = diag_universal([[px]], [[py]], [[qx]], [[qy]], d)
    return layer_forward(list(P[0]), list(Q[0]), Z, n)


@given(contexts(), rationals, rationals)
def test_gdpp_covariance_map(ctx, wxx, wyx) -> None:
    d, n, Z = ctx
    Z1 = _one_layer(Z, n, d, wxx, wyx, Fraction(1), Fraction(0))
    S0, S1 = Z[:n, :d].T @ Z[:n, :d], Z1[:n, :d].T @ Z1[:n, :d]
    assert np.array_equal(gdpp_covariance_rule().numpy(S0, wxx), S1)


def test_gdpp_eigenvalue_map_float64() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 3))
    S = X.T @ X
    wxx = -0.05
    T = np.eye(3) + wxx * S
    mapped = np.sort(gdpp_eigen_rule().numpy(np.linalg.eigvalsh(S), wxx))
    # 1e-10 relative: eigvalsh is backward stable, errors are a few ulps of the largest eigenvalue.
    np.testing.assert_allclose(mapped, np.linalg.eigvalsh(T @ S @ T), rtol=1e-10)
    assert sp.factor(derive_gdpp().eigen_map) == derive_gdpp().eigen_map


@given(contexts(), rationals, rationals)
def test_rescaling_layer(ctx, py, qy) -> None:
    d, n, Z = ctx
    Z1 = _one_layer(Z, n, d, Fraction(0), py, Fraction(0), qy)
    lam = Z[:n, d] @ Z[:n, d]
    f = rescaling_rule().numpy
    assert np.array_equal(Z1[:, :d], Z[:, :d])
    assert all(f(lam, py * qy, Z[i, d]) == Z1[i, d] for i in range(n + 1))


@given(contexts(min_n_over_d=0), rationals, rationals)
def test_step_size_two_layers(ctx, wxy, wyx) -> None:
    d, n, Z = ctx
    X, y, xt = Z[:n, :d], Z[:n, d], Z[n, :d].reshape(-1, 1)
    S = X.T @ X
    assume(sp.Matrix(S.tolist()).det() != 0)
    Z1 = _one_layer(Z, n, d, Fraction(1), Fraction(0), Fraction(0), wxy)
    Z2 = _one_layer(Z1, n, d, Fraction(0), Fraction(1), wyx, Fraction(0))
    al = (X.T @ y).reshape(-1, 1)
    ws = solve(S, al)
    r = y - (X @ ws).reshape(-1)
    ex, ap, ng, step = step_size_rule().numpy(al, S, ws, r @ r, xt, wxy, wyx)
    assert (
        -Z2[n, d]
        == ex[0, 0]
        == exact_prediction_rule().numpy(al, np.array([[y @ y]], dtype=object), xt, wxy, wyx)[0, 0]
    )
    # Approximate model by a forward pass: keep only the additive layer-1 update w_xy r_i alpha.
    Z1a = Z.copy()
    for i in range(n):
        Z1a[i, :d] = Z[i, :d] + wxy * r[i] * al.reshape(-1)
    assert -_one_layer(Z1a, n, d, Fraction(0), Fraction(1), wyx, Fraction(0))[n, d] == ap[0, 0]
    assert ex[0, 0] == ap[0, 0] + ng[0, 0] and ap[0, 0] == step * (al.T @ xt)[0, 0]
