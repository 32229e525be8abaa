r"""Diagonal reparametrisation: with DIAG heads a layer depends only on four ω's (sums over heads).

Routes: (symbolic) the ω's of ``H = 1, 2, 3`` concrete heads equal the general ``Σ_{k=1}^H`` form;
(numeric) the exported diagonal rule equals the literal forward pass on exact rational DIAG
models, for every context token and the query.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from lintf_theory import derive_diagonal, diagonal_rule, layer_omegas, omegas_as_sums
from lintf_theory.exact import diag_universal, rational_array
from proofs._check import Report, claim
from proofs._diag_data import col, context, forward_all, one, stats


@claim(
    "DIAG heads: G = [[w_xx S, w_xy a],[w_yx a^T, w_yy l]] with w's = sums over heads of p*q; "
    "x' = x + w_xx S x + w_xy y a, y' = y + w_yx <a,x> + w_yy l y",
    ref="Section 5, diagonal reparametrisation",
    routes=("symbolic", "exact forward pass"),
)
def check(report: Report) -> None:
    Hs = sp.Symbol("H", integer=True, positive=True)
    for H in (1, 2, 3):
        r = derive_diagonal(H)
        for om, general in zip(r.omegas, omegas_as_sums(), strict=True):
            conc = general.subs(Hs, H).doit()
            conc = conc.xreplace(
                {t: sp.Symbol(f"{t.base.label}_{t.indices[0]}") for t in conc.atoms(sp.Indexed)}
            )
            report.require(sp.expand(om - conc) == 0, f"H={H}: {om} equals the Sum-over-heads form")
    f = diagonal_rule().numpy
    rng = np.random.default_rng(0)
    checked = 0
    for d, n, H in ((1, 3, 1), (2, 4, 2), (3, 5, 3), (2, 2, 3)):
        ctx = context(rng, n, d)
        heads = rational_array(rng, (1, H, 4))
        P, Q = diag_universal(heads[..., 0], heads[..., 1], heads[..., 2], heads[..., 3], d)
        Z0, Z1 = forward_all(P, Q, ctx)
        S, al, lm = stats(Z0, n)
        om = layer_omegas(*(heads[0, :, i] for i in range(4)))
        same = []
        for i in range(n + 1):  # context tokens, then the query (row n)
            xn, yn = f(S, al, lm, *om, col(Z0[i, :d]), one(Z0[i, d]))
            same.append(np.array_equal(xn.reshape(-1), Z1[i, :d]) and yn.reshape(()) == Z1[i, d])
        report.require(
            all(same),
            f"d={d}, n={n}, H={H}, omegas={tuple(str(o) for o in om)}: exported rule = "
            f"forward pass on all {n} context tokens and the query",
        )
        checked += n + 1
    report.ok(
        f"{checked} tokens (queries included) equal exactly between the exported diagonal rule and the forward pass"
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
