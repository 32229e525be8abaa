r"""Section 5.2: a layer with only ``ω_yy`` maps ``y' = (1 + ω_yy λ) y`` and leaves ``x``; it scales
the implicit ``a, w`` by the same factor, and with ``ω_yy < 0`` shrinks more when ``λ`` is larger.

Routes: (symbolic) derived factor vs the printed one (claim under test), derivative in ``λ``;
(exact) the literal forward pass of a 2-layer DIAG model (a GD layer, then an ``ω_yy`` layer)
vs the exported rescaling and the bridge recursion's ``w^2 = (1 + ω_yy λ^1) w^1``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from lintf_theory import derive_rescaling, rescaling_rule, run_recursion
from lintf_theory.exact import diag_universal
from lintf_theory.matexpr import is_zero
from lintf_theory.symbols import M, a_s, lam_l, omega_yy, u, w, x
from proofs._check import Report, claim
from proofs._diag_data import context, forward_all, stats


@claim(
    "A layer with only w_yy maps y' = (1 + w_yy lam) y (x unchanged); w_yy < 0 shrinks noisier data more",
    ref="Section 5.2",
    routes=("symbolic", "exact forward pass", "exact bridge recursion"),
)
def check(report: Report) -> None:
    r = derive_rescaling()
    printed = 1 + omega_yy * lam_l
    report.require(
        sp.expand(r.factor - printed) == 0,
        f"derived factor {r.factor} equals the printed 1 + w_yy lam",
    )
    report.require(is_zero(r.x_next - x), "x' = x")
    report.require(is_zero(r.M_next - M) and is_zero(r.u_next - u), "implicit M, u unchanged")
    report.require(
        sp.expand(r.a_next - r.factor * a_s) == 0 and is_zero(r.w_next - r.factor * w),
        f"implicit a' = {r.a_next}, w' = {r.w_next}: both scaled by the factor",
    )
    slope = sp.diff(r.factor, lam_l)
    report.require(
        slope == omega_yy,
        f"d factor / d lam = {slope}: negative iff w_yy < 0 (larger lam shrinks more)",
    )
    rng = np.random.default_rng(3)
    dd, n = 2, 5
    ctx = context(rng, n, dd)
    wyx, wyy = Fraction(-1, 5), Fraction(-1, 400)
    # Layer 1: one GD step (only w_yx); layer 2: only w_yy.  One head each.
    P, Q = diag_universal([[0], [0]], [[wyx], [wyy]], [[1], [0]], [[0], [1]], dd)
    Zs = forward_all(P, Q, ctx)
    _, _, lm1 = stats(Zs[1], n)
    f = rescaling_rule().numpy
    ok_y = all(f(lm1[0, 0], wyy, Zs[1][i, dd]) == Zs[2][i, dd] for i in range(n + 1))
    report.require(
        ok_y and np.array_equal(Zs[2][:, :dd], Zs[1][:, :dd]),
        f"exact forward pass (d={dd}, n={n}, w_yy={wyy}, lam^1={lm1[0, 0]}): every y scaled by the exported "
        f"rule, factor {1 + wyy * lm1[0, 0]}; x unchanged",
    )
    st = run_recursion(P, Q, ctx.X, ctx.y, backend="numpy")
    fac = 1 + wyy * lm1[0, 0]
    report.require(
        np.array_equal(st[2].w, fac * st[1].w)
        and st[2].a == fac * st[1].a
        and np.array_equal(st[2].M, st[1].M)
        and np.array_equal(st[2].u, st[1].u),
        f"bridge recursion: w^2 = {fac} w^1, a^2 = {fac} a^1, M, u unchanged",
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
