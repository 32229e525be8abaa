r"""Theorem 4.1: every token keeps the form ``(M x + y u, a y − ⟨w, x⟩)`` with one shared tuple.

Routes:
1. *symbolic block*: apply the layer to a token in Theorem 4.1 form for symbolic ``d`` and show
   the residuals of the form vanish identically, for context tokens and for the query
   (:func:`lintf_theory.closure_residuals`).  With the base case ``M=I, u=0, a=1, w=0`` this is
   the induction for every ``L``.
2. *entry level*: for ``d ∈ {1, 2}`` and ``H ∈ {1, 2}`` write the layer literally
   (:func:`lintf_theory.layer_forward`) on tokens whose entries are polynomial-ring generators and
   compare with ``T^l e_i`` where ``T^l = [[M, u], [−wᵀ, a]]`` comes from the derived recursion
   (the bridge's NumPy export, evaluated on ring elements).  One layer: every parameter and data
   entry is a symbol.  Two layers: data entries are symbols, parameters exact random rationals
   (a fully symbolic two-layer expansion at d=2, H=2 has ~10^8 terms).  The context tokens and
   ``T^l`` must not involve the query's generators: the query never enters the key sum.
"""

from __future__ import annotations

import random

from lintf_theory import State, closure_residuals, gram_update, layer_forward, recursion_step
from lintf_theory.layer import head_sum
from lintf_theory.matexpr import is_zero
from proofs._check import Report, claim
from proofs._exact import PolyTokens, rational_array, state_matrix


def entry_level(ring: PolyTokens, layers: list) -> tuple[bool, bool]:  # noqa: ANN001
    """Forward pass vs derived recursion; returns (token form holds exactly, query isolated)."""
    n, d, Z = ring.n, ring.d, ring.Z
    ctx = Z[:n, :]
    E = ctx.T @ ctx  # layer-0 context Gram, computed here independently of the layer code
    state = State(ring.eye(d), ring.zeros(d), ring.R.one, ring.zeros(d))
    Zl = Z
    form_ok, isolated = True, True
    for l, (P, Q) in enumerate(layers):
        Zl = layer_forward(P, Q, Zl, n)
        G = head_sum(P, Q, E)
        state = recursion_step(state, G, "numpy")
        if l + 1 < len(layers):  # the last layer's Gram is not needed (and is degree 18)
            E = gram_update(E, G, "numpy")
        T = state_matrix(state.M, state.u, state.a, state.w)
        form_ok &= bool((Zl == Z @ T.T).all())
        isolated &= not (ring.depends_on_query(Zl[:n]) or ring.depends_on_query(T))
    return form_ok, isolated


@claim(
    "Token form (M x + y u, a y - <w,x>) is preserved by every layer, query included; "
    "(M,u,a,w) does not depend on the query",
    ref="Theorem 4.1",
    routes=("symbolic block (any d, any L by induction)", "entry-level forward pass, d,H in {1,2}"),
)
def check(report: Report) -> None:
    res = closure_residuals()
    report.require(
        all(is_zero(v) for v in res.values()),
        f"block level, symbolic d: residuals {sorted(res)} vanish identically (inductive step)",
    )
    report.ok("base case: M^0=I, u^0=0, a^0=1, w^0=0 gives x^0=x, y^0=y and the query (x_t, 0)")
    rng = random.Random(41)
    for d in (1, 2):
        for H in (1, 2):
            ring = PolyTokens(n=2, d=d, H=H, layers_symbolic=1)
            form_ok, iso = entry_level(ring, ring.params)
            report.require(
                form_ok and iso,
                f"d={d}, H={H}, one layer, every entry a symbol: "
                "tokens equal T^1 e_i exactly; T^1 and context tokens free of x_t",
            )
            ring = PolyTokens(n=2, d=d)
            layers = [
                (
                    [ring.const(rational_array(rng, (d + 1, d + 1), den=4)) for _ in range(H)],
                    [ring.const(rational_array(rng, (d + 1, d + 1), den=4)) for _ in range(H)],
                )
                for _ in range(2)
            ]
            form_ok, iso = entry_level(ring, layers)
            report.require(
                form_ok and iso,
                f"d={d}, H={H}, two layers, symbolic data, rational parameters: "
                "tokens equal T^l e_i exactly at l=1,2; query isolated",
            )


if __name__ == "__main__":
    raise SystemExit(check.main())
