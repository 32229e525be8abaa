"""Regression readings: the delta rule is Widrow-Hoff, decays weight least squares, gates have mean
1/2."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from lintf_theory import (
    derive_context_weights,
    derive_delta_rule,
    derive_gate_symmetry,
    family_layer,
    regression_head,
)


@pytest.mark.parametrize("member", ["deltanet", "gated_deltanet"])
def test_the_delta_rule_is_one_sgd_step(member: str) -> None:
    assert derive_delta_rule(member).is_sgd


def test_deltanet_layer_is_a_widrow_hoff_pass_in_float64() -> None:
    rng = np.random.default_rng(0)
    n, d = 30, 3
    Z = np.concatenate([rng.standard_normal((n + 1, d + 1))], 0)
    Z[n, -1] = 0.0
    betas = rng.uniform(0.05, 0.5, n + 1)
    y_hat = -family_layer("deltanet", [regression_head(d)], Z, n, gates=[[(1, b) for b in betas]])[
        n, -1
    ]
    s = np.zeros(d)
    for i in range(n):  # LMS written out: s <- s + beta_i (y_i - s.x_i) x_i
        s = s + betas[i] * (Z[i, -1] - s @ Z[i, :d]) * Z[i, :d]
    # one pass of 30 rank-one updates in float64: agreement to 1e-12 relative leaves room for
    # rounding only
    assert float(y_hat) == pytest.approx(s @ Z[n, :d], rel=1e-12)


def test_retnet_weights_are_powers_of_gamma() -> None:
    cw = derive_context_weights("retnet")
    g = sp.Symbol("gamma")
    assert cw.bilinear and cw.weights == sp.Matrix([[g**2, g**2], [g, g], [1, 1]])


def test_gla_weights_differ_per_coordinate_and_gates_have_mean_one_half() -> None:
    w = derive_context_weights("gla").weights
    assert w[0, 0] != w[0, 1] and w[2, 0] == w[2, 1] == 1
    assert derive_gate_symmetry() == 1
