r"""GD++ (``ω_xy = ω_yy = 0``): ``x' = (I + ω_xx Σ) x``, ``Σ' = (I + ω_xx Σ) Σ (I + ω_xx Σ)``,
eigenvalues ``μ ↦ μ (1 + ω_xx μ)²``.

Routes: (symbolic) the derived map vs the printed forms (typed here only as the claim under
test); (exact) the literal GD++ forward pass on rational data gives the exported ``Σ'``; (float64)
the eigenvalues of the forward pass's ``Σ'`` equal the exported eigenvalue map of ``eig(Σ)``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from lintf_theory import (
    GDPP_SYMBOLS,
    derive_gdpp,
    diagonal_rule,
    gdpp_covariance_rule,
    gdpp_eigen_rule,
)
from lintf_theory.exact import diag_universal
from lintf_theory.matexpr import is_zero
from lintf_theory.symbols import Sigma, alpha, d, omega_xx, omega_yx, x, y
from proofs._check import Report, claim
from proofs._diag_data import col, context, forward_all, one, stats

mu = GDPP_SYMBOLS.mu

#: Relative tolerance of the float64 eigenvalue comparison: eigvalsh of a well-conditioned 3x3
#: matrix is accurate to a few ulps of the largest eigenvalue; 1e-10 leaves ample margin.
EIG_RTOL = 1e-10


@claim(
    "GD++: x' = (I + w_xx S) x, S' = (I + w_xx S) S (I + w_xx S), eigenvalue mu -> mu (1 + w_xx mu)^2",
    ref="Section 5.1 (GD++)",
    routes=("symbolic", "exact forward pass", "float64 eigenvalues"),
)
def check(report: Report) -> None:
    g = derive_gdpp()
    T_printed = sp.Identity(d) + omega_xx * Sigma
    report.require(
        is_zero(g.T - T_printed), f"derived x-map T = {g.T} equals the printed I + w_xx Sigma"
    )
    report.require(
        is_zero(g.y_next - (y + omega_yx * alpha.T * x)),
        f"derived y' = {g.y_next} equals the printed y + w_yx <alpha, x>",
    )
    report.require(
        is_zero(g.Sigma_next - T_printed * Sigma * T_printed),
        f"derived Sigma' = {g.Sigma_next} equals the printed (I + w_xx S) S (I + w_xx S)",
    )
    report.require(
        sp.expand(g.eigen_map - mu * (1 + omega_xx * mu) ** 2) == 0,
        f"derived eigenvalue map {g.eigen_map} equals the printed mu (1 + w_xx mu)^2",
    )
    rng = np.random.default_rng(2)
    dd, n = 3, 6
    ctx = context(rng, n, dd)
    wxx, wyx = Fraction(-1, 7), Fraction(2, 3)
    # GD++ as one DIAG head: P = diag(w_xx I, w_yx), Q = diag(I, 0).
    P, Q = diag_universal([[wxx]], [[wyx]], [[Fraction(1)]], [[Fraction(0)]], dd)
    Z0, Z1 = forward_all(P, Q, ctx)
    S0, al0, lm0 = stats(Z0, n)
    S1, _, _ = stats(Z1, n)
    report.require(
        np.array_equal(gdpp_covariance_rule().numpy(S0, wxx), S1),
        f"exact: Sigma' of the forward pass (d={dd}, n={n}, w_xx={wxx}) equals the exported map",
    )
    f = diagonal_rule().numpy
    ok = all(
        np.array_equal(
            f(S0, al0, lm0, wxx, 0, wyx, 0, col(Z0[i, :dd]), one(Z0[i, dd]))[0].reshape(-1),
            Z1[i, :dd],
        )
        for i in range(n + 1)
    )
    report.require(ok, "exact: every token (query included) follows x' = (I + w_xx S) x")
    S0f, S1f = S0.astype(float), S1.astype(float)
    mu0 = np.linalg.eigvalsh(S0f)
    mapped = np.sort(gdpp_eigen_rule().numpy(mu0, float(wxx)))
    mu1 = np.linalg.eigvalsh(S1f)
    err = float(np.max(np.abs(mapped - mu1)) / np.max(np.abs(mu1)))
    report.require(
        err < EIG_RTOL,
        f"float64: eig(Sigma') = sorted f(eig(Sigma)), max rel. error {err:.2e} < {EIG_RTOL}; "
        f"eig(Sigma) = {np.round(mu0, 4).tolist()} -> {np.round(mu1, 4).tolist()}",
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
