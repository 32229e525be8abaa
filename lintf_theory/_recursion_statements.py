"""Statements of Theorem 4.1 / Lemma 4.3 for rendering."""

from __future__ import annotations

from ._recursion import derive_gram_update, derive_recursion
from ._render import Statement


def recursion_statements() -> list[Statement]:
    r = derive_recursion()
    ref = "Lemma 4.3 (recursion of Theorem 4.1)"
    return [
        Statement(ref, "Implicit matrix", "M^{l+1}", r.M_next),
        Statement(ref, "Coupling vector", "u^{l+1}", r.u_next),
        Statement(ref, "Target scale", "a^{l+1}", r.a_next),
        Statement(
            ref,
            "Implicit weight vector",
            "w^{l+1}",
            r.w_next,
            "Blocks: $G^l = \\sum_k P_k^l E^l Q_k^l = [[A, b], [c^T, \\delta]]$; base case $M=I, u=0, a=1, w=0$.",
        ),
        Statement(
            "Gram map of the context",
            "Context Gram at the next layer",
            "E^{l+1}",
            derive_gram_update(),
        ),
    ]
