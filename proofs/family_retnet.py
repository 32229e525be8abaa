r"""RetNet: ``S_i = γ S_{i-1} + v_i k_iᵀ`` with a fixed scalar ``γ`` per head; the query reads
``S_n``.

Routes:

1. *ring tokens*: ``ŷ`` decided linear in ``x_t`` on literal layers, against Lemma 4.3's
``w``-recursion (bridge);
   the self-reading cubic term derived and checked on exact rationals;
2. *exact forward pass*: context rows against the reviewers' RetNet variant; per-position tuples;
the swap
   ``(e_2/√γ, √γ e_1)`` keeps ``S_n`` and changes the next layer's;
3. *SymPy gradient*: one layer is one GD step on least squares weighted by ``γ^{n−i}``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from lintf_theory import (
    FamilyHead,
    attention_weights,
    family_layer,
    family_paper_form,
    weighted_layer_forward,
)
from lintf_theory.exact import rational_array
from proofs._check import Report, claim
from proofs._family import check_closure, check_query, check_self_reading, check_weighted_gd


@claim(
    "RetNet: y_hat = <w_t^L, x_t> (the authors' guess holds for the query); no shared tuple and "
    "no closure, as "
    "for causal masking; one layer is one GD step on least squares weighted by gamma^(n-i)",
    ref="Theorem 4.1, Lemma 4.3 (family); the authors' reply on RetNet",
    routes=("ring tokens vs Lemma 4.3 (bridge)", "exact forward pass and swap", "SymPy gradient"),
)
def check(report: Report) -> None:

    check_query(report, "retnet")
    check_self_reading(report, "retnet")
    check_closure(report, "retnet")
    rng = np.random.default_rng(23)
    D, n, g = 3, 4, Fraction(2, 3)
    heads = [FamilyHead(*(rational_array(rng, (D, D), num=2, den=2) for _ in range(3)), gamma=g)]
    Z = rational_array(rng, (n + 1, D), num=3, den=2)
    Z[n, -1] = Fraction(0)
    P, Q = family_paper_form(heads)
    ours = family_layer("retnet", heads, Z, n)
    theirs = weighted_layer_forward(P, Q, Z, n, attention_weights("retnet", n, g))
    report.require(
        bool((ours[:n] == theirs[:n]).all())
        and bool((theirs[n] - Z[n] == g * (ours[n] - Z[n])).all()),
        "exact rationals: context rows equal the reviewers' RetNet variant; that variant's query "
        "sits "
        "one position later, so its update is gamma times this member's (o_t = S_n q_t)",
    )
    check_weighted_gd(report, "retnet", lambda i, k, n, gates: gates[0] ** (n - 1 - i))


if __name__ == "__main__":
    raise SystemExit(check.main())
