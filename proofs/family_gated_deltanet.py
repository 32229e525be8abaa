r"""Gated DeltaNet: ``S_i = α_i S_{i-1}(I − β_i k_i k_iᵀ) + β_i v_i k_iᵀ``; the query reads ``S_n``.

Routes:

1. *ring tokens*: every context token's ``α_i, β_i`` its own generators; ``ŷ`` decided linear in
``x_t`` against
   Lemma 4.3's ``w``-recursion (bridge); a query that reads itself adds a derived cubic term, and
   with its own gate it is not linear (exact, with ``exp``);
2. *exact forward pass*: per-position tuples and the swap (``α = β = 1/2``); the layer with the
regression head
   against a shrink-then-step loop written here;
3. *SymPy derivation*: the update on ``S = −e_y sᵀ`` is ``s̃ − β ∇ ½(y − s̃ᵀx)²`` at ``s̃ = α s``:
weight decay by
   the gate, then one SGD step.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from lintf_theory import derive_delta_rule, family_layer, regression_head
from lintf_theory.exact import rational_array
from proofs._check import Report, claim
from proofs._family import check_closure, check_query, check_query_gate, check_self_reading


def shrink_then_step(X, y, alphas, betas):  # noqa: ANN001, ANN201
    """s <- alpha_i s; s <- s + beta_i (y_i - s.x_i) x_i, from s = 0 (one sequence, exact or
    float)."""
    s = X[0] * 0
    for x, yi, a, b in zip(X, y, alphas, betas, strict=True):
        s = a * s
        s = s + b * (yi - s @ x) * x
    return s


@claim(
    "Gated DeltaNet: y_hat = <w_t^L, x_t> whatever the context's gates; per position, not closed; "
    "one layer is "
    "one pass of SGD on the context with the gate as weight decay before each step",
    ref="Theorem 4.1, Lemma 4.3 (family)",
    routes=(
        "ring tokens vs Lemma 4.3 (bridge)",
        "exact forward pass vs a shrink-then-step loop",
        "SymPy gradient",
    ),
)
def check(report: Report) -> None:

    check_query(report, "gated_deltanet")
    check_self_reading(report, "gated_deltanet")
    check_query_gate(report, "gated_deltanet")
    check_closure(report, "gated_deltanet")
    rule = derive_delta_rule("gated_deltanet")
    report.require(
        rule.is_sgd,
        f"the gated delta rule on S = -e_y s^T gives s' = {list(rule.update)} = "
        "s~ - beta grad 1/2 (y - s~^T x)^2 at s~ = alpha s (SymPy gradient)",
    )
    rng = np.random.default_rng(32)
    n, d = 5, 2
    Z = rational_array(rng, (n + 1, d + 1), num=3, den=2)
    Z[n, -1] = Fraction(0)
    gates = [
        (Fraction(int(rng.integers(1, 5)), 5), Fraction(int(rng.integers(1, 5)), 5))
        for _ in range(n + 1)
    ]
    y_hat = -family_layer("gated_deltanet", [regression_head(d)], Z, n, gates=[gates])[n, -1]
    s = shrink_then_step(Z[:n, :d], Z[:n, d], [g[0] for g in gates[:n]], [g[1] for g in gates[:n]])
    report.require(
        y_hat == s @ Z[n, :d],
        "exact rationals (n=5, d=2, gates in (0,1)): the layer's y_hat equals "
        "<s_n, x_t> of a shrink-then-step loop written here",
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
