r"""Causal linear attention: ``S_i = S_{i-1} + v_i k_iᵀ``, token ``i`` reads ``S_i``, the query
reads ``S_n``.

Routes:

1. *ring tokens*: ``ŷ`` decided linear in ``x_t`` on literal layers and compared with Lemma 4.3's
``w``-recursion
   (bridge); the query's ``G_t`` is the last context token's; a query that reads itself (``o_t = S_t
   q_t``) adds a cubic term whose factors are derived in SymPy and checked on exact rationals;
2. *exact forward pass*: the member against the reviewers' causal variant
   (:func:`lintf_theory.weighted_layer_forward`); per-position tuples; two contexts with the same
   Gram matrix and state but different next-layer states (a permutation of orthogonal-key tokens);
3. *SymPy gradient*: one layer is one GD step on ``½ Σ (y_i − wᵀx_i)²``.
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
    "Causal linear attention: y_hat = <w_t^L, x_t> when the query reads the context state (it "
    "shares the last "
    "token's tuple); reading itself adds (W_V x_t)_y (k_t^T q_t); the context is per position, "
    "not closed",
    ref="Theorem 4.1, Lemma 4.3 (family)",
    routes=("ring tokens vs Lemma 4.3 (bridge)", "exact forward pass and swap", "SymPy gradient"),
)
def check(report: Report) -> None:

    check_query(report, "causal")
    check_self_reading(report, "causal")
    check_closure(report, "causal")
    rng = np.random.default_rng(22)
    D, n = 3, 4
    heads = [
        FamilyHead(*(rational_array(rng, (D, D), num=2, den=2) for _ in range(3))) for _ in range(2)
    ]
    Z = rational_array(rng, (n + 1, D), num=3, den=2)
    Z[n, -1] = Fraction(0)
    P, Q = family_paper_form(heads)
    report.require(
        bool(
            (
                family_layer("causal", heads, Z, n)
                == weighted_layer_forward(P, Q, Z, n, attention_weights("causal", n))
            ).all()
        ),
        "two heads, exact rationals: the member equals the reviewers' causal variant with "
        "P = W_V, Q = W_K^T W_Q",
    )
    check_weighted_gd(report, "causal", lambda i, k, n, g: 1)


if __name__ == "__main__":
    raise SystemExit(check.main())
