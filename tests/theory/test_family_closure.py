"""Closure across the family: per-position tuples and the exact swap counterexample."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from lintf_theory import FAMILY_MEMBERS, FamilyHead, distinct_positions, swap_contexts
from lintf_theory.exact import rational_array


@pytest.mark.parametrize("member", FAMILY_MEMBERS)
def test_causal_members_move_each_context_token_by_its_own_matrix(member: str) -> None:
    rng = np.random.default_rng(3)
    n = 4
    head = FamilyHead(
        *(rational_array(rng, (3, 3), num=2, den=2) for _ in range(3)),
        gamma=Fraction(1, 2),
        w_alpha=np.zeros((3, 3) if member == "gla" else 3, dtype=object),
        w_beta=np.zeros(3, dtype=object),
    )
    Z = rational_array(rng, (n + 1, 3), num=3, den=2)
    assert distinct_positions(member, [head], Z, n) == (1 if member == "linear" else n)


@pytest.mark.parametrize("member", FAMILY_MEMBERS)
def test_the_swap_keeps_the_state_and_changes_the_next_layers(member: str) -> None:
    sw = swap_contexts(member)
    assert sw.same_state
    assert sw.next_states_differ == sw.predictions_differ == (member != "linear")
    assert sw.same_gram == (member in ("linear", "causal", "deltanet"))
