"""Lemma A.2: one GD step on data whose Sigma has eigenvalues in [1, 1+eps] is eps-accurate."""

from __future__ import annotations

import numpy as np

from lintf_theory import SECOND_ORDER_SYMBOLS, derive_lemma_a2
from proofs._check import Report, claim


@claim(
    "Eigenvalues of Sigma in [1, 1+eps]: one GD step w_hat = sum_i y_i x_i has ||w_hat - w*|| <= eps ||w*||",
    ref="Lemma A.2",
    routes=("symbolic", "numeric"),
)
def check(report: Report) -> None:
    eps = SECOND_ORDER_SYMBOLS.eps
    from numerics.models.constructions import gd, implicit_weight  # lazy: start-up

    A2 = derive_lemma_a2()
    report.require(
        A2.bound.holds,
        f"per eigen-direction error factor {A2.error_factor} (eta=1); "
        f"eps^2 - (lambda-1)^2 >= 0 on lambda = 1 + eps s, s in [0,1]: {A2.bound}",
    )
    report.ok(
        f"sup over [1, 1+eps] of |lambda - 1| = {A2.sup_unit_step}; best step {A2.best_step} gives {A2.best_error}"
    )
    # Numeric: the one-layer GD construction (ω_yx = -1) on noisy data; w* is OLS (alpha = Sigma w*).
    rng = np.random.default_rng(3)
    worst_ratio, tight = 0.0, 0.0
    for e in (0.3, 0.1, 1e-3):
        n, d = 12, 4
        U, _ = np.linalg.qr(rng.standard_normal((n, d)))
        V, _ = np.linalg.qr(rng.standard_normal((d, d)))
        lam = np.concatenate([[1.0, 1.0 + e], rng.uniform(1, 1 + e, d - 2)])
        X = U @ np.diag(np.sqrt(lam)) @ V.T
        for w_true in (rng.standard_normal(d), V[:, 1]):
            y = X @ w_true + 0.1 * rng.standard_normal(n)
            w_star = np.linalg.solve(X.T @ X, X.T @ y)
            w_hat = implicit_weight(gd(1.0, 1), X, y)
            r = np.linalg.norm(w_hat - w_star) / (
                float(A2.sup_unit_step.subs(eps, e)) * np.linalg.norm(w_star)
            )
            worst_ratio = max(worst_ratio, r)
        w_hat = implicit_weight(gd(1.0, 1), X, X @ V[:, 1])
        tight = max(tight, np.linalg.norm(w_hat - V[:, 1]) / e)
    report.require(
        worst_ratio <= 1 + 1e-12,
        f"numeric (GD construction through the bridge, noisy data, eps in 0.3, 0.1, 1e-3): "
        f"max ||w_hat - w*|| / (eps ||w*||) = {worst_ratio:.6f} <= 1",
    )
    report.require(
        abs(tight - 1) < 1e-9,
        f"bound is attained for w* on the top eigenvector: ratio {tight:.12f}",
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
