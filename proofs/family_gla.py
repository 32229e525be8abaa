r"""Gated linear attention: ``S_i = S_{i-1} diag(α_i) + v_i k_iᵀ``, ``α_i = sigmoid(W_α e_i)``; the
query reads ``S_n``.

Routes:

1. *ring tokens*: each context token's gate vector is its own set of generators; ``ŷ`` decided
linear in ``x_t``
   against Lemma 4.3's ``w``-recursion (bridge); a query that reads itself with its own gate is not
   linear;
2. *exact forward pass*: per-position tuples, the swap with zero gate weights, and the side of the
gate
   (``S diag(α)`` acts on key coordinates; ``diag(α) S`` is a different layer);
3. *SymPy gradient*: one layer is one GD step on least squares with gated inputs ``D_i x_i``,
   ``D_i = diag(Π_{m>i} α_m)``: a weight per coordinate, not a weighted least squares.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from lintf_theory import family_step
from lintf_theory.exact import rational_array
from proofs._check import Report, claim
from proofs._family import (
    check_closure,
    check_query,
    check_query_gate,
    check_self_reading,
    check_weighted_gd,
)


@claim(
    "GLA: y_hat = <w_t^L, x_t> whatever the gates (the authors' guess fails for the query); per "
    "position, not "
    "closed; one layer is a GD step on least squares with per-coordinate gated inputs",
    ref="Theorem 4.1, Lemma 4.3 (family); the authors' reply on GLA",
    routes=("ring tokens vs Lemma 4.3 (bridge)", "exact forward pass and swap", "SymPy gradient"),
)
def check(report: Report) -> None:

    check_query(report, "gla")
    check_self_reading(report, "gla")
    check_query_gate(report, "gla")
    check_closure(report, "gla")
    check_weighted_gd(
        report, "gla", lambda i, k, n, gates: sp.prod([g[k] for g in gates[i + 1 :]]), "gated"
    )
    rng = np.random.default_rng(24)
    S, k, v = rational_array(rng, (3, 3)), rational_array(rng, (3,)), rational_array(rng, (3,))
    alpha = np.array([Fraction(1, 2), Fraction(1, 3), Fraction(3, 4)], dtype=object)
    right = family_step("gla", S, k, v, alpha)
    left = np.diag(alpha) @ S + v[:, None] * k[None, :]
    report.require(
        bool((right == S @ np.diag(alpha) + v[:, None] * k[None, :]).all())
        and not bool((right == left).all()),
        "exact rationals: the gate multiplies the state's key columns (S diag(alpha)); the "
        "value-side "
        "product diag(alpha) S gives a different state",
    )
    report.finding(
        "the authors guessed that Theorem 4.1 does not extend to GLA because of its gate "
        "nonlinearities; the gates of context tokens never see x_t, so y_hat stays linear in x_t "
        "under "
        "the query-reads-the-context convention; a query that reads itself with its own gate "
        "breaks it"
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
