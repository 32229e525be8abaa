r"""Section 5.3: layer 1 with only ``ω_xy`` then layer 2 with only ``ω_yx`` acts, up to the neglected
multiplicative part of layer 1, as one GD step with step ``−ω_yx (1 + ω_xy ρ)``.

Derived (see :mod:`lintf_theory._step_size`): exact ``ŷ = −ω_yx (1 + ω_xy λ) ⟨α, x_t⟩``; approximate
``ŷ ≈ −ω_yx (1 + ω_xy ρ) ⟨α, x_t⟩``; neglected ``−ω_yx ω_xy ⟨α, w*⟩ ⟨α, x_t⟩`` with
``⟨α, w*⟩ = w*ᵀ Σ w*`` (not small in general: it is the explained part of ``λ = w*ᵀΣw* + ρ``).

Routes: (symbolic) step vs the printed ``−ω_yx(1 + ω_xy ρ)`` (claim under test), ``exact = approx +
neglected``, and the ``λ``-form equal to the OLS form after ``λ = w*ᵀΣw* + ρ`` (derived by summing
``y_i²``); (exact) the literal 2-layer forward pass gives the exported exact prediction, and a
forward pass on tokens whose layer-1 update keeps only ``ω_xy r_i α`` gives the exported approximation.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from lintf_theory import (
    OLS_SUMS,
    STEP_SIZE_SYMBOLS,
    derive_step_size,
    exact_prediction_rule,
    step_size_rule,
)
from lintf_theory.exact import diag_universal, solve
from lintf_theory.layer import layer_forward
from lintf_theory.matexpr import is_zero, replace_adjacent, simplify_matexpr
from lintf_theory.symbols import Sigma, alpha, lam, omega_xy, omega_yx, rho, symmetric, w_star, x
from proofs._check import Report, claim
from proofs._diag_data import col, context, forward_all, stats

r_tok = STEP_SIZE_SYMBOLS.r_tok


@claim(
    "w_xy-only layer then w_yx-only layer: y_hat = -w_yx (1 + w_xy lam) <alpha, x_t> exactly; neglecting the "
    "multiplicative part of layer 1 gives one GD step of size -w_yx (1 + w_xy rho)",
    ref="Section 5.3",
    routes=("symbolic", "exact forward pass"),
)
def check(report: Report) -> None:
    s = derive_step_size()
    report.require(
        sp.expand(s.step - (-omega_yx * (1 + omega_xy * rho))) == 0,
        f"derived step {s.step} equals the printed -w_yx (1 + w_xy rho)",
    )
    report.require(
        is_zero(s.exact - (s.approx + s.neglected)), "exact = approx + neglected (identically)"
    )
    report.ok(
        f"exact: {s.exact_lam}; neglected term: {s.neglected}; dropped layer-1 part: {s.multiplicative}"
    )
    lam_ols = replace_adjacent(
        simplify_matexpr((w_star.T * x + r_tok) * (w_star.T * x + r_tok).T), OLS_SUMS
    )
    lhs = symmetric(s.exact_lam.xreplace({lam: lam_ols}))
    rhs = replace_adjacent(
        s.exact, {(alpha.T, w_star): w_star.T * Sigma * w_star}
    )  # alpha = Sigma w*
    report.require(
        is_zero(lhs - rhs),
        f"lam = {lam_ols}: the lam-form of the exact prediction equals its OLS form",
    )
    rng = np.random.default_rng(5)
    dd, n = 2, 6
    ctx = context(rng, n, dd)
    wxy, wyx = Fraction(-1, 9), Fraction(-1, 11)
    P, Q = diag_universal([[1], [0]], [[0], [1]], [[0], [wyx]], [[wxy], [0]], dd)
    Z0, Z1, Z2 = forward_all(P, Q, ctx)
    y_hat = -Z2[n, dd]
    S, al, lm = stats(Z0, n)
    ws = solve(S, al)
    res = ctx.y - (ctx.X @ ws).reshape(-1)
    rho_ = res @ res
    xt = col(ctx.x_query)
    exact_l = exact_prediction_rule().numpy(al, lm, xt, wxy, wyx)[0, 0]
    ex, ap, ng, step = step_size_rule().numpy(al, S, ws, rho_, xt, wxy, wyx)
    report.require(
        y_hat == exact_l == ex[0, 0],
        f"exact forward pass (d={dd}, n={n}, w_xy={wxy}, w_yx={wyx}): y_hat = {float(y_hat):.6g} "
        f"= exported lam-form = exported OLS form",
    )
    # Approximation by a forward pass: layer-1 tokens with only the additive update w_xy r_i alpha.
    Z1a = Z0.copy()
    for i in range(n):
        Z1a[i, :dd] = Z0[i, :dd] + wxy * res[i] * al.reshape(-1)
    y_hat_a = -layer_forward(list(P[1]), list(Q[1]), Z1a, n)[n, dd]
    report.require(
        y_hat_a == ap[0, 0] and y_hat == ap[0, 0] + ng[0, 0],
        f"approximate forward pass y_hat_approx = {float(y_hat_a):.6g} = exported approx; "
        f"y_hat - y_hat_approx = {float(ng[0, 0]):.6g} = exported neglected term (rho = {float(rho_):.4g}, "
        f"step = {float(step):.6g})",
    )
    report.require(ng[0, 0] != 0, "the neglected term is not zero on this data")


if __name__ == "__main__":
    raise SystemExit(check.main())
