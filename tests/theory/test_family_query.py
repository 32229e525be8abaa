"""Query linearity across the family, decided on ring tokens against the query recursion."""

from __future__ import annotations

import pytest

from lintf_theory import FAMILY_MEMBERS, decide_query_linearity


@pytest.mark.parametrize("member", FAMILY_MEMBERS)
def test_y_hat_is_linear_in_x_t_and_follows_the_query_recursion(member: str) -> None:
    r = decide_query_linearity(member, n=2, d=1, layers=2, seed=5)
    assert (
        r.linear and r.matches_query_recursion and r.context_free_of_query and r.shares_last_token
    )
    assert not decide_query_linearity(
        member, n=2, d=1, layers=1, seed=5, query_reads_itself=True
    ).linear
