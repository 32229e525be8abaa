"""Where the query's linearity breaks: a query that reads itself, its own gate, a normalised query."""

from __future__ import annotations

import pytest
import sympy as sp

from lintf_theory import (
    derive_query_scale,
    derive_self_reading,
    gate_from_query_counterexample,
    self_reading_symbols,
)


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
