r"""The paper's layer as the non-causal member of the linear-attention family.

Every token reads ``S = Σ_{j≤n} v_j k_jᵀ``; with ``P = W_V`` and ``Q = W_Kᵀ W_Q`` (``W_O`` absorbed
into ``W_V``) it is the paper's layer. Routes:

1. *ring tokens*: the literal layers on polynomial-ring tokens, ``ŷ`` decided linear in ``x_t`` and
compared with
   Lemma 4.3's ``w``-recursion through the bridge; a query that reads itself adds a cubic term,
   derived in SymPy;
2. *exact forward pass*: the member against :func:`lintf_theory.layer_forward` (two heads), and the
context's Gram
   matrix after the layer against the derived Gram map (bridge);
3. *SymPy gradient*: ``ŷ`` is one gradient step on ``½ Σ (y_i − wᵀx_i)²`` from ``w = 0``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from lintf_theory import FamilyHead, family_layer, family_paper_form, gram_update, layer_forward
from lintf_theory.exact import rational_array
from proofs._check import Report, claim
from proofs._family import check_closure, check_query, check_self_reading, check_weighted_gd


@claim(
    "Linear attention (non-causal, the paper's layer) as a family member: y_hat = <w^L, x_t> with "
    "one shared "
    "tuple, the context closes over its Gram matrix, and one layer is one GD step",
    ref="Theorem 4.1, Lemma 4.3 (family)",
    routes=(
        "ring tokens vs Lemma 4.3 (bridge)",
        "exact forward pass vs the paper's layer",
        "SymPy gradient",
    ),
)
def check(report: Report) -> None:

    check_query(report, "linear")
    check_self_reading(report, "linear")
    check_closure(report, "linear")
    rng = np.random.default_rng(21)
    D, n = 3, 4
    heads = [
        FamilyHead(*(rational_array(rng, (D, D), num=2, den=2) for _ in range(3))) for _ in range(2)
    ]
    Z = rational_array(rng, (n + 1, D), num=3, den=2)
    Z[n, -1] = Fraction(0)
    P, Q = family_paper_form(heads)
    Z1 = family_layer("linear", heads, Z, n)
    report.require(
        bool((Z1 == layer_forward(P, Q, Z, n)).all()),
        "two heads, exact rationals: the member equals the paper's layer with P_h = W_V^h, "
        "Q_h = W_K^hT W_Q^h",
    )
    E = Z[:n].T @ Z[:n]
    G = sum(p @ E @ q for p, q in zip(P, Q, strict=True))
    report.require(
        bool((Z1[:n].T @ Z1[:n] == gram_update(E, G)).all()),
        "the context's Gram matrix after the layer equals the derived map E -> (I+G) E (I+G)^T "
        "(bridge)",
    )
    check_weighted_gd(report, "linear", lambda i, k, n, g: 1)


if __name__ == "__main__":
    raise SystemExit(check.main())
