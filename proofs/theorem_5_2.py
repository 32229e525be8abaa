"""Theorem 5.2: a two-layer DIAG model (omega_yx then omega_yy) tends to ridge at two noise levels as n -> infinity."""

from __future__ import annotations

import numpy as np
import sympy as sp

from lintf_theory import THEOREM_5_2_SYMBOLS, derive_theorem_5_2
from proofs._check import Report, claim


def _ridge_errors(
    sig_model: tuple[float, float], sigma: float, ns, trials: int, d: int = 4, seed: int = 0
) -> np.ndarray:
    """Mean ||w^2 - w*_{sigma^2}|| / ||w*_{sigma^2}|| over trials, x_i ~ N(0, I/n), for each n."""
    from numerics.models.constructions import implicit_weight, theorem_5_2  # lazy: start-up

    rng = np.random.default_rng(seed)
    out = []
    for n in ns:
        model = theorem_5_2(*sig_model, n)
        errs = []
        for _ in range(trials):
            X = rng.standard_normal((n, d)) / np.sqrt(n)
            y = X @ rng.standard_normal(d) + sigma * rng.standard_normal(n)
            ridge = np.linalg.solve(X.T @ X + sigma**2 * np.eye(d), X.T @ y)
            errs.append(
                np.linalg.norm(implicit_weight(model, X, y) - ridge) / np.linalg.norm(ridge)
            )
        out.append(np.mean(errs))
    return np.array(out)


@claim(
    "Two-layer DIAG model, layer 1 omega_yx, layer 2 omega_yy, solving two linear equations in "
    "(omega_yx, n omega_yx omega_yy): w^2 -> ridge for both noise levels as n -> infinity",
    ref="Theorem 5.2",
    routes=("symbolic", "numeric"),
)
def check(report: Report) -> None:
    P_nyy, omega_yx, sig2 = (
        THEOREM_5_2_SYMBOLS.P_nyy,
        THEOREM_5_2_SYMBOLS.omega_yx,
        THEOREM_5_2_SYMBOLS.sig2,
    )
    s1, s2 = THEOREM_5_2_SYMBOLS.s1, THEOREM_5_2_SYMBOLS.s2

    t = derive_theorem_5_2()
    report.ok(f"recursion: w^2 = {t.w2_coefficient} * alpha, lambda^1 = {t.lambda1} (d=1 instance)")
    report.ok(
        f"n -> oo with omega_yy = v/n, lambda^1 = n sigma^2 + O(sqrt n): w^2/alpha -> {t.limit_coefficient}; "
        f"ridge -> alpha * {t.ridge_limit}"
    )
    step = -t.solution[omega_yx]
    for s in (
        s1,
        s2,
    ):  # the printed equation form (1 + n sigma^2 omega_yy) * step = 1/(1 + sigma^2), claim under test
        lhs = (1 + sig2 * t.solution[P_nyy] / t.solution[omega_yx]) * step
        report.require(
            sp.simplify(lhs.subs(sig2, s) - 1 / (1 + s)) == 0,
            f"printed form (1 + n sigma^2 omega_yy) * step = 1/(1+sigma^2) holds at {s} with step = -omega_yx",
        )
    report.ok(
        f"solution: omega_yx = {t.solution[omega_yx]}, n omega_yx omega_yy = {t.solution[P_nyy]}, omega_yy = {t.omega_yy} (< 0)"
    )
    report.require(
        t.three_level_det != 0,
        f"three levels: augmented determinant {t.three_level_det} != 0 for distinct "
        "levels, so no (omega_yx, omega_yy) matches ridge at three noise levels",
    )
    ns = np.array([100, 400, 1600, 6400])
    rates = []
    for sigma in (1.0, 3.0):
        e = _ridge_errors((1.0, 3.0), sigma, ns, trials=8, seed=int(sigma))
        slope = np.polyfit(np.log(ns), np.log(e), 1)[0]
        rates.append(slope)
        report.ok(
            f"sigma={sigma:g}: mean rel. error to ridge by n={ns.tolist()}: {', '.join(f'{x:.3g}' for x in e)}; fitted rate n^{slope:.2f}"
        )
    report.require(
        max(rates) < -0.3,
        f"error to ridge falls with n at both levels (rates {', '.join(f'{r:.2f}' for r in rates)}, expected ~ -1/2 "
        "from the O(sqrt n) fluctuation of lambda^1 and Sigma - I)",
    )
    e5 = _ridge_errors((1.0, 3.0), 5.0, ns, trials=8, seed=5)
    report.require(
        e5[-1] > 0.1 and e5[-1] > 0.5 * e5[0],
        f"model for {{1,3}} at an unseen third level sigma=5: error "
        f"{', '.join(f'{x:.3g}' for x in e5)} does not vanish",
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
