r"""One DIAG head: ``ω_xx ω_yy = ω_xy ω_yx`` identically; two heads: not (explicit counterexample).

Routes: (symbolic) ``ω_xx ω_yy − ω_xy ω_yx`` expands to 0 for ``H = 1`` and not for ``H = 2``;
(numeric) the ω's read off the literal ``G = Σ_k P_k E Q_k`` of exact rational models (entry
``G_ij / E_ij`` of each block) satisfy the identity for random one-head layers and violate it
for the two-head counterexample, whose layer the forward pass confirms.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from lintf_theory import (
    derive_diagonal,
    diagonal_rule,
    omega_rule,
    one_head_residual,
    two_head_counterexample,
)
from lintf_theory.exact import diag_universal, rational_array, tokens
from lintf_theory.layer import context_gram, head_sum
from proofs._check import Report, claim
from proofs._diag_data import col, context, forward_all, one, stats


def omegas_from_G(P: object, Q: object, Z: object, n: int) -> tuple[Fraction, ...]:
    """ω's read off the literal ``G`` of one layer: ``G_ij / E_ij`` at one entry of each block."""
    E = context_gram(Z, n)
    G = head_sum(list(P), list(Q), E)  # type: ignore[call-overload]
    d = E.shape[0] - 1
    return tuple(G[i, j] / E[i, j] for i, j in ((0, 0), (0, d), (d, 0), (d, d)))


@claim(
    "One DIAG head: w_xx w_yy = w_xy w_yx identically; two heads can violate it",
    ref="Section 5 (diagonal form)",
    routes=("symbolic", "exact forward pass"),
)
def check(report: Report) -> None:
    report.require(one_head_residual(1) == 0, "H=1: w_xx w_yy - w_xy w_yx expands to 0")
    res2 = one_head_residual(2)
    report.require(res2 != 0, f"H=2: w_xx w_yy - w_xy w_yx = {res2} (not identically 0)")
    rng = np.random.default_rng(1)
    d, n = 2, 4
    ctx = context(rng, n, d)
    Z = tokens(ctx.X, ctx.y, ctx.x_query)
    report.require(
        all(v != 0 for v in context_gram(Z, n).reshape(-1)),
        "the test context has no zero entry in E",
    )
    products = []
    for _ in range(10):
        h = rational_array(rng, (1, 1, 4), nonzero=True)
        P, Q = diag_universal(h[..., 0], h[..., 1], h[..., 2], h[..., 3], d)
        oxx, oxy, oyx, oyy = omegas_from_G(P[0], Q[0], Z, n)
        products.append((oxx * oyy, oxy * oyx))
    report.require(
        all(p == q for p, q in products),
        f"10 random one-head layers, w's read off the literal G: (w_xx w_yy, w_xy w_yx) = "
        f"{[(str(p), str(q)) for p, q in products[:3]]} ...",
    )
    vals, gap = two_head_counterexample()
    syms = [s for g in derive_diagonal(2).heads for s in g]
    flat = [vals[s] for s in syms]  # p_x1, p_x2, p_y1, p_y2, q_x1, ...
    px, py, qx, qy = (np.array([flat[2 * i : 2 * i + 2]], dtype=object) for i in range(4))
    P, Q = diag_universal(px, py, qx, qy, d)
    om_bridge = tuple(omega_rule(2).numpy(*flat))
    om_G = omegas_from_G(P[0], Q[0], Z, n)
    report.require(
        om_bridge == om_G,
        f"two heads {dict((str(k), str(v)) for k, v in vals.items())}: "
        f"w's (bridge) = w's (literal G) = {tuple(str(o) for o in om_G)}",
    )
    oxx, oxy, oyx, oyy = om_G
    report.require(
        oxx * oyy - oxy * oyx == gap != 0,
        f"counterexample: w_xx w_yy - w_xy w_yx = {oxx * oyy - oxy * oyx} (symbolic value {gap})",
    )
    Z0, Z1 = forward_all(P, Q, ctx)
    S, al, lm = stats(Z0, n)
    f = diagonal_rule().numpy
    ok = all(
        np.array_equal(f(S, al, lm, *om_G, col(Z0[i, :d]), one(Z0[i, d]))[0].reshape(-1), Z1[i, :d])
        for i in range(n + 1)
    )
    report.require(
        ok,
        "the two-head forward pass is the diagonal layer with these w's, which no single head has",
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
