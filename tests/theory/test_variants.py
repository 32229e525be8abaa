"""Reviewers' variants: row-weighted attention, per-token tuples, query recursion, quadratic FFN."""

from __future__ import annotations

import random
from fractions import Fraction

import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from lintf_theory import (
    attention_weights,
    derive_ffn_break,
    derive_query_recursion,
    initial_state,
    layer_forward,
    quadratic_ffn,
    query_step,
    recursion_step,
    shared_tuple,
    square_feature,
    token_G,
    weighted_layer_forward,
)
from numerics.models import forward_tokens
from proofs import rational_array, state_matrix
from tests.strategies import Config, exact_problems, rationals_in

one_layer = st.builds(
    Config, d=st.integers(1, 3), n=st.integers(2, 5), H=st.integers(1, 2), L=st.just(1)
)


def _Z(prob):
    ctx = np.concatenate([prob.X, prob.y[:, None]], 1)
    return np.concatenate([ctx, np.concatenate([prob.x_query, np.zeros(1, dtype=object)])[None]], 0)


@settings(max_examples=15)
@given(exact_problems(one_layer), rationals_in(Fraction(1, 4), 2))
def test_each_token_is_its_own_tuple_and_key_decay_shares_it(prob, gamma):
    """Every variant: token i = T_i e_i with T_i from the derived recursion on G_i; key decay: T_i all equal."""
    n, d = prob.cfg.n, prob.cfg.d
    Z0 = _Z(prob)
    P, Q = list(prob.P[0]), list(prob.Q[0])
    for kind in ("standard", "key_decay", "causal", "retnet"):
        W = attention_weights(kind, n, gamma)
        Z1 = weighted_layer_forward(P, Q, Z0, n, W)
        Ts = [
            state_matrix(*recursion_step(initial_state(d, like=prob.X), G, "numpy"))
            for G in token_G(P, Q, Z0, n, W)
        ]
        assert all((Z1[i] == Ts[i] @ Z0[i]).all() for i in range(n + 1))
        if kind in ("standard", "key_decay"):
            assert all((T == Ts[-1]).all() for T in Ts)
        if kind == "standard":
            assert (Z1 == layer_forward(P, Q, Z0, n)).all()


def test_causal_and_retnet_have_no_shared_tuple_but_a_linear_query():
    rng = random.Random(2)
    n, d = 4, 2
    P, Q = (
        [rational_array(rng, (3, 3), scale=1, den=2)],
        [rational_array(rng, (3, 3), scale=1, den=2)],
    )
    ctx = rational_array(rng, (n, 3), den=3)
    xq = rational_array(rng, (2, d), den=3)
    Z0 = np.concatenate([ctx, np.concatenate([xq, np.full((2, 1), Fraction(0), dtype=object)], 1)])
    for kind, shared in (
        ("standard", True),
        ("key_decay", True),
        ("causal", False),
        ("retnet", False),
    ):
        W = attention_weights(kind, n, Fraction(1, 2), queries=2)
        Z1 = weighted_layer_forward(P, Q, Z0, n, W)
        assert (shared_tuple(Z0, Z1) is not None) == shared
        # query: its own recursion through the bridge reproduces y_hat = <w_t, x_t> for both queries
        st0 = initial_state(d, like=ctx)
        Mt, wt = query_step(st0.M, st0.w, token_G(P, Q, Z0, n, W)[n], "numpy")
        assert (-Z1[n:, -1] == xq @ wt).all() and (Z1[n:, :d] == xq @ Mt.T).all()


def test_weighted_layer_matches_the_jax_forward_pass_in_float():
    rng = np.random.default_rng(0)
    n, d = 6, 3
    P, Q = (
        rng.standard_normal((1, 1, d + 1, d + 1)) * 0.3,
        rng.standard_normal((1, 1, d + 1, d + 1)) * 0.3,
    )
    X, y, xq = rng.standard_normal((n, d)), rng.standard_normal(n), rng.standard_normal(d)
    Z0 = np.concatenate([np.c_[X, y], np.r_[xq, 0.0][None]])
    W = attention_weights("standard", n).astype(float)
    ours = weighted_layer_forward(list(P[0]), list(Q[0]), Z0, n, W)
    ref = np.asarray(
        forward_tokens(jnp.asarray(P), jnp.asarray(Q), X[None], y[None], xq[None])[-1, 0]
    )
    assert ours == pytest.approx(ref, rel=1e-10, abs=1e-10)


def test_query_recursion_is_free_of_u_and_a():
    q = derive_query_recursion()
    assert not q.uses_u_or_a and q.matches_lemma_4_3


def test_quadratic_feature_and_its_second_difference():
    Z = np.array([[Fraction(3), Fraction(1), Fraction(2)]], dtype=object)
    out = quadratic_ffn(Z, *square_feature(2, 0, Fraction(1, 2)))
    assert out.tolist() == [[3, 1, 2 + Fraction(9, 2)]]
    import sympy as sp

    from lintf_theory import VARIANT_SYMBOLS
    from lintf_theory.symbols import M, d, w, x

    beta_sym, h_sym, k_sym = VARIANT_SYMBOLS.beta_sym, VARIANT_SYMBOLS.h_sym, VARIANT_SYMBOLS.k_sym

    rng = np.random.default_rng(3)
    vals = {
        s: rng.standard_normal(s.shape)
        for s in (M.subs(d, 2), w.subs(d, 2), x.subs(d, 2), k_sym.subs(d, 2), h_sym.subs(d, 2))
    }
    vals[beta_sym] = np.array([[0.7]])
    num = lambda e: float(np.asarray(sp.lambdify(list(vals), e.subs(d, 2))(*vals.values())).item())  # noqa: E731
    Mv, wv, xv, kv, hv = (vals[s] for s in list(vals)[:5])
    yq = lambda xx: float((-wv.T @ xx + 0.7 * (kv.T @ Mv @ xx) ** 2).item())  # noqa: E731  explicit query after the FFN
    f = derive_ffn_break()
    assert num(f.second_difference) == pytest.approx(
        yq(xv + hv) - 2 * yq(xv) + yq(xv - hv), rel=1e-10
    )
    assert abs(num(f.second_difference)) > 1e-3


def test_bad_input_is_a_one_line_value_error():
    with pytest.raises(ValueError, match="kind must be one of"):
        attention_weights("softmax", 3)
    with pytest.raises(ValueError, match="W must have shape"):
        weighted_layer_forward([np.eye(2)], [np.eye(2)], np.zeros((3, 2)), 2, np.ones((2, 2)))
    with pytest.raises(ValueError, match="coord"):
        square_feature(2, 5)


@pytest.mark.parametrize("kind", ["standard", "key_decay", "causal", "retnet"])
def test_row_weights_are_the_recurrent_key_sums(kind):
    """``Σ_j W_ij k_j`` (``k_j`` a symbol for ``e_j e_jᵀ``) against the key sum each variant keeps as a running state,
    ``S_j = γ S_{j−1} + k_j`` over the context (γ = 1 without decay): RetNet's recurrent form (Sun et al. 2023)
    gives context token ``i`` the state ``S_i`` and the query, at position ``n``, ``γ S_{n−1}``; causal attention
    gives ``S_i`` at ``γ = 1``; key decay gives every token ``S_{n−1}``; the standard layer, ``S_{n−1}`` at ``γ = 1``."""
    n, queries = 4, 2
    gamma, keys = sp.Symbol("gamma"), sp.symbols(f"k0:{n}")
    g = gamma if kind in ("key_decay", "retnet") else sp.Integer(1)
    S, states = sp.Integer(0), []
    for k in keys:
        S = g * S + k
        states.append(S)
    last = states[-1]
    want = {
        "standard": [last] * (n + queries),
        "key_decay": [last] * (n + queries),
        "causal": states + [last] * queries,
        "retnet": states + [gamma * last] * queries,
    }[kind]
    W = attention_weights(kind, n, gamma, queries=queries)
    got = [sum(W[i, j] * keys[j] for j in range(n)) for i in range(n + queries)]
    assert all(sp.expand(a - b) == 0 for a, b in zip(got, want, strict=True))
