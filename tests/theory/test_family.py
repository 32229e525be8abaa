"""The family's literal recurrences: reductions to the paper's layer, the gates' order and side,
bad input."""

from __future__ import annotations

from fractions import Fraction
from functools import reduce
from operator import mul

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lintf_theory import (
    FAMILY_MEMBERS,
    FamilyHead,
    attention_weights,
    family_layer,
    family_paper_form,
    family_states,
    family_step,
    layer_forward,
    weighted_layer_forward,
)
from lintf_theory.exact import rational_array

seeds = st.integers(0, 2**32 - 1)


def _problem(seed: int, n: int = 4, d: int = 2, heads: int = 2):
    rng = np.random.default_rng(seed)
    D = d + 1
    hs = [
        FamilyHead(
            *(rational_array(rng, (D, D), num=2, den=2) for _ in range(3)),
            w_alpha=rational_array(rng, (D,)),
            w_beta=rational_array(rng, (D,)),
        )
        for _ in range(heads)
    ]
    Z = rational_array(rng, (n + 1, D), num=3, den=2)
    Z[n, -1] = Fraction(0)
    return hs, Z, n


def rational_squash(z: Fraction) -> Fraction:
    """A rational gate in (0, 1) (exact, unlike sigmoid): the recurrences hold for any gate
    function."""
    return 1 / (2 + z * z)


@settings(max_examples=10)
@given(seeds)
def test_linear_and_causal_reduce_to_the_papers_layer_and_the_causal_variant(seed: int) -> None:
    hs, Z, n = _problem(seed)
    P, Q = family_paper_form(hs)
    assert (family_layer("linear", hs, Z, n) == layer_forward(P, Q, Z, n)).all()
    causal = weighted_layer_forward(P, Q, Z, n, attention_weights("causal", n))
    assert (family_layer("causal", hs, Z, n) == causal).all()


@settings(max_examples=10)
@given(seeds)
def test_ssd_state_is_the_sum_decayed_by_the_later_tokens_own_gates(seed: int) -> None:
    """S_n = sum_j (prod_{m>j} alpha_m) v_j k_j^T, alpha_m from token m itself (written out
    here)."""
    hs, Z, n = _problem(seed, heads=1)
    h = hs[0]
    alphas = [rational_squash(np.dot(h.w_alpha, Z[m])) for m in range(n)]
    expected = sum(
        reduce(mul, alphas[j + 1 :], Fraction(1)) * np.outer(h.WV @ Z[j], h.WK @ Z[j])
        for j in range(n)
    )
    got = family_states("ssd", h, Z, n, squash=rational_squash)[n]
    assert (got == expected).all()


def test_gla_gate_multiplies_the_key_columns() -> None:
    rng = np.random.default_rng(4)
    S, k, v = rational_array(rng, (3, 3)), rational_array(rng, (3,)), rational_array(rng, (3,))
    alpha = np.array([Fraction(1, 2), Fraction(1, 3), Fraction(3, 4)], dtype=object)
    assert (family_step("gla", S, k, v, alpha) == S @ np.diag(alpha) + np.outer(v, k)).all()


@pytest.mark.parametrize("member", FAMILY_MEMBERS)
def test_the_query_reads_the_context_state_by_default(member: str) -> None:
    """Default convention: y_hat(2 x_t) = 2 y_hat(x_t) on rationals (a query that reads itself is
    cubic)."""
    hs, Z, n = _problem(7)
    hs = [
        FamilyHead(
            h.WQ,
            h.WK,
            h.WV,
            gamma=Fraction(1, 2),
            w_alpha=np.zeros((3, 3)) if member == "gla" else h.w_alpha,
            w_beta=h.w_beta,
        )
        for h in hs
    ]
    y = {
        c: -family_layer(member, hs, np.concatenate([Z[:n], c * Z[n:]]), n, squash=rational_squash)[
            n, -1
        ]
        for c in (1, 2)
    }
    assert y[2] == 2 * y[1] and y[1] != 0
    own = {
        c: -family_layer(
            member,
            hs,
            np.concatenate([Z[:n], c * Z[n:]]),
            n,
            squash=rational_squash,
            query_reads_itself=True,
        )[n, -1]
        for c in (1, 2)
    }
    assert own[2] != 2 * own[1]


def test_bad_input_is_a_one_line_value_error() -> None:
    with pytest.raises(ValueError, match="member must be one of"):
        family_layer("softmax", [], np.zeros((3, 2)), 2)
    with pytest.raises(ValueError, match="WK must have shape"):
        FamilyHead(np.eye(3), np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="n <= rows"):
        family_layer("causal", [FamilyHead(np.eye(2), np.eye(2), np.eye(2))], np.zeros((3, 2)), 5)
