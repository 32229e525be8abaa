"""Query linearity across the family: ring decisions, the self-reading term, normalised queries."""

from __future__ import annotations

import pytest
import sympy as sp

from lintf_theory import (
    FAMILY_MEMBERS,
    decide_query_linearity,
    derive_query_scale,
    derive_self_reading,
    gate_from_query_counterexample,
    self_reading_symbols,
)


@pytest.mark.parametrize("member", FAMILY_MEMBERS)
def test_y_hat_is_linear_in_x_t_and_follows_the_query_recursion(member: str) -> None:
    r = decide_query_linearity(member, n=2, d=1, layers=2, seed=5)
    assert (
        r.linear and r.matches_query_recursion and r.context_free_of_query and r.shares_last_token
    )
    assert not decide_query_linearity(
        member, n=2, d=1, layers=1, seed=5, query_reads_itself=True
    ).linear


def test_the_self_reading_term_of_causal_attention_is_value_times_key_query_product() -> None:
    """c(x_t) = -(W_V e_t)_y (k_t^T q_t), written out here from the symbols."""
    s = self_reading_symbols()
    e = sp.Matrix([*s["xt"], 0])
    expected = -(s["WV"] * e)[2] * ((s["WK"] * e).T * (s["WQ"] * e))[0]
    assert sp.expand(derive_self_reading("causal").cubic_part - expected) == 0


def test_a_normalised_query_is_scale_invariant() -> None:
    a, b = derive_query_scale("causal")
    assert sp.simplify(a - b) == 0 and a != 0


@pytest.mark.parametrize("member", ["ssd", "gla", "gated_deltanet"])
def test_a_query_that_takes_its_own_gate_is_not_linear(member: str) -> None:
    assert abs(sp.N(gate_from_query_counterexample(member), 20)) > 1e-6
