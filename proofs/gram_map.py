r"""The context Gram map ``E^{l+1} = (I + G^l) E^l (I + G^l)ᵀ`` (used by the fast forward pass).

Every token, the query included, is multiplied by the same matrix ``I + G^l`` (Lemma 4.3 in
matrix form), so the context Gram ``E^l = Σ_{j≤n} e_j^l (e_j^l)ᵀ`` maps as a congruence.

Routes:
1. *symbolic*: the map derived by summing ``e' e'ᵀ`` over tokens
   (:func:`lintf_theory.derive_gram_update`) equals ``(I+G) E (I+G)ᵀ`` exactly.
2. *exact forward pass*: the bridge's export applied to ``E^l`` equals the Gram of the context
   tokens after the literal layer, on exact rationals.
"""

from __future__ import annotations

import random

import sympy as sp

from lintf_theory import derive_gram_update, gram_update, layer_forward
from lintf_theory.layer import head_sum
from lintf_theory.matexpr import is_zero
from lintf_theory.symbols import E_sym, G_sym, d
from proofs._check import Report, claim
from proofs._exact import rational_array


@claim(
    "Context Gram maps as E^(l+1) = (I+G^l) E^l (I+G^l)^T",
    ref="Lemma 4.3 (matrix form), fast forward pass",
    routes=("symbolic", "exact rational forward pass vs bridge"),
)
def check(report: Report) -> None:
    I = sp.Identity(d + 1)
    report.require(
        is_zero(derive_gram_update() - (I + G_sym) * E_sym * (I + G_sym).T),
        "derived E + E G^T + G E + G E G^T equals (I+G) E (I+G)^T for symbolic d",
    )
    rng = random.Random(44)
    for d_, n, H in ((1, 2, 1), (2, 3, 2), (3, 5, 2)):
        P = list(rational_array(rng, (H, d_ + 1, d_ + 1), scale=1, den=3))
        Q = list(rational_array(rng, (H, d_ + 1, d_ + 1), scale=1, den=3))
        Z = rational_array(rng, (n + 1, d_ + 1), scale=2, den=3)
        Z[n, d_] = 0
        E = Z[:n].T @ Z[:n]
        Z1 = layer_forward(P, Q, Z, n)
        report.require(
            (gram_update(E, head_sum(P, Q, E), "numpy") == Z1[:n].T @ Z1[:n]).all(),
            f"d={d_}, n={n}, H={H}: bridge Gram map equals the Gram of the next layer's context, exactly",
        )
    report.ok(
        "the query is multiplied by the same I+G^l (Theorem 4.1 check), so ŷ needs only E^l and q^l"
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
