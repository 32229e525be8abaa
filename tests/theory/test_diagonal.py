"""Diagonal reparametrisation (Section 5): derived rule vs the literal layer, one-head identity."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given

from lintf_theory import (
    derive_diagonal,
    diagonal_rule,
    head_symbols,
    layer_forward,
    layer_omegas,
    one_head_residual,
    two_head_counterexample,
)
from lintf_theory.exact import diag_universal, rational_array, tokens
from lintf_theory.layer import context_gram, head_sum
from tests.strategies import diag_problems, nonzero_rationals, rational_arrays


def _model(p: dict) -> tuple[object, object]:
    h = p["heads"]
    return diag_universal(h[..., 0], h[..., 1], h[..., 2], h[..., 3], p["d"])


@given(diag_problems())
def test_diagonal_rule_equals_forward_pass(p: dict) -> None:
    d, n = p["d"], p["n"]
    P, Q = _model(p)
    Z = tokens(p["X"], p["y"], p["x_query"])
    Z1 = layer_forward(list(P[0]), list(Q[0]), Z, n)
    E = context_gram(Z, n)
    om = layer_omegas(*(p["heads"][0, :, i] for i in range(4)))
    f = diagonal_rule().numpy
    for i in range(n + 1):
        xn, yn = f(
            E[:d, :d], E[:d, d:], E[d:, d:], *om, Z[i, :d].reshape(-1, 1), Z[i, d:].reshape(1, 1)
        )
        assert np.array_equal(xn.reshape(-1), Z1[i, :d]) and yn[0, 0] == Z1[i, d]


@given(diag_problems())
def test_omegas_are_the_blocks_of_literal_G(p: dict) -> None:
    d, n = p["d"], p["n"]
    P, Q = _model(p)
    E = context_gram(tokens(p["X"], p["y"], p["x_query"]), n)
    G = head_sum(list(P[0]), list(Q[0]), E)
    oxx, oxy, oyx, oyy = layer_omegas(*(p["heads"][0, :, i] for i in range(4)))
    assert np.array_equal(G[:d, :d], oxx * E[:d, :d]) and np.array_equal(G[:d, d], oxy * E[:d, d])
    assert np.array_equal(G[d, :d], oyx * E[d, :d]) and G[d, d] == oyy * E[d, d]


@given(rational_arrays((4,), nonzero_rationals))
def test_one_head_identity_numeric(h: object) -> None:
    oxx, oxy, oyx, oyy = layer_omegas(*([v] for v in h))
    assert oxx * oyy == oxy * oyx


def test_one_head_identity_symbolic_and_two_head_counterexample() -> None:
    assert one_head_residual(1) == 0
    assert one_head_residual(2) != 0
    vals, gap = two_head_counterexample()
    syms = [s for g in derive_diagonal(2).heads for s in g]
    flat = [vals[s] for s in syms]
    px, py, qx, qy = (np.array([flat[2 * i : 2 * i + 2]], dtype=object) for i in range(4))
    P, Q = diag_universal(px, py, qx, qy, 1)
    rng = np.random.default_rng(0)
    Z = tokens(
        rational_array(rng, (3, 1), nonzero=True),
        rational_array(rng, (3,), nonzero=True),
        rational_array(rng, (1,)),
    )
    E = context_gram(Z, 3)
    G = head_sum(list(P[0]), list(Q[0]), E)
    oxx, oxy, oyx, oyy = (G[i, j] / E[i, j] for i, j in ((0, 0), (0, 1), (1, 0), (1, 1)))
    assert oxx * oyy - oxy * oyx == gap != 0


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="H must be >= 1"):
        head_symbols(0)
    with pytest.raises(ValueError, match="same length H"):
        layer_omegas([Fraction(1)], [Fraction(1), Fraction(2)], [Fraction(1)], [Fraction(1)])
    with pytest.raises(ValueError, match="shape \\(L, H\\)"):
        diag_universal([1, 2], [1, 2], [1, 2], [1, 2], 2)
    with pytest.raises(ValueError, match="num and den"):
        rational_array(np.random.default_rng(0), (2,), num=0)
