"""The exact forward pass equals the lambdified recursion exactly, at every layer, for every token.

Route 1: :func:`lintf_theory.layer_forward` written literally on exact
rationals.  Route 2: :func:`lintf_theory.run_recursion`, the SymPy-derived Lemma 4.3 exported by
lambdify, giving ``T^l = [[M, u], [−wᵀ, a]]`` with every token equal to ``T^l e_i``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from lintf_theory import layer_forward, run_recursion
from proofs import state_matrix
from tests.strategies import ExactProblem, exact_problems


def tokens(p: ExactProblem) -> np.ndarray:
    ctx = np.concatenate([p.X, p.y[:, None]], axis=1)
    q = np.concatenate([p.x_query, np.array([0], dtype=object)])
    return np.concatenate([ctx, q[None, :]], axis=0)


@given(exact_problems())
def test_forward_pass_equals_derived_recursion_and_the_query_changes_no_context_token(
    p: ExactProblem,
) -> None:
    """Every token after every layer is ``T^l e_i``; and a pass with the query moved (``x_t + 1``)
    leaves every context token as it was, layer by layer (one drawn problem serves both checks)."""
    Z0 = tokens(p)
    moved = Z0.copy()
    moved[-1, :-1] = moved[-1, :-1] + 1
    states = run_recursion(p.P, p.Q, p.X, p.y, backend="numpy")
    assert len(states) == p.cfg.L + 1
    Z, B = Z0, moved
    for l in range(p.cfg.L):
        Z = layer_forward(list(p.P[l]), list(p.Q[l]), Z, p.cfg.n)
        B = layer_forward(list(p.P[l]), list(p.Q[l]), B, p.cfg.n)
        s = states[l + 1]
        expected = Z0 @ state_matrix(s.M, s.u, s.a, s.w).T
        assert (Z == expected).all(), f"layer {l + 1}: token form differs"
        # the prediction read out after layer l+1 is <w^{l+1}, x_t>
        assert -Z[-1, -1] == s.w @ p.x_query
        assert (Z[:-1] == B[:-1]).all(), f"layer {l + 1}: moving the query moved a context token"


def test_jax_and_numpy_exports_agree_in_float64() -> None:
    import jax

    rng = np.random.default_rng(0)
    P, Q = rng.normal(size=(2, 3, 2, 4, 4)) * 0.3
    X, y = rng.normal(size=(6, 3)), rng.normal(size=6)
    a = run_recursion(P, Q, X, y, "numpy")[-1]
    # the JAX export as lintf runs it (numerics.evaluate.inspector): traced under jit, one program
    # instead of one per operation of the lambdified rules
    b = jax.jit(lambda *args: run_recursion(*args, "jax")[-1])(P, Q, X, y)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_allclose(np.asarray(v), u, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("P_shape", "Q_shape", "X_shape", "message"),
    [
        ((1, 1, 3, 4), (1, 1, 3, 4), (5, 2), "square"),
        ((1, 1, 4, 4), (1, 1, 4, 4), (5, 2), "d=2"),
        ((0, 1, 3, 3), (0, 1, 3, 3), (5, 2), "L must be >= 1"),
        ((1, 0, 3, 3), (1, 0, 3, 3), (5, 2), "H must be >= 1"),
        ((1, 1, 3, 3), (2, 1, 3, 3), (5, 2), "same shape"),
        ((1, 3, 3), (1, 3, 3), (5, 2), "(L, H, d+1, d+1)"),
    ],
)
def test_bad_parameters_give_one_line_errors(P_shape, Q_shape, X_shape, message) -> None:  # noqa: ANN001
    with pytest.raises(
        ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")
    ) as info:
        run_recursion(np.zeros(P_shape), np.zeros(Q_shape), np.zeros(X_shape), np.zeros(X_shape[0]))
    assert "\n" not in str(info.value)


def test_mismatched_targets_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"y must have shape \(n,\)"):
        run_recursion(np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 3, 3)), np.zeros((5, 2)), np.zeros(4))
