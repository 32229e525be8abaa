"""Lemma A.3: one GD++ layer with gamma*nu = 1/3 maps the condition number kappa to 4 kappa^3/(3 kappa - 1)^2."""

from __future__ import annotations

import numpy as np
import sympy as sp

from lintf_theory import (
    SECOND_ORDER_SYMBOLS,
    derive_lemma_a3,
    gdpp_eigenvalue_map,
    gram_update,
    kappa_next_rule,
)
from proofs._check import Report, claim


@claim(
    "GD++ layer with gamma*nu = 1/3: f non-decreasing on [0, nu]; kappa' <= c kappa (kappa >= 1.1), "
    "kappa' <= 1 + 2 eps^2 (eps <= 0.1); gamma*nu = 1/3 cancels the first-order term",
    ref="Lemma A.3",
    routes=("symbolic", "numeric"),
)
def check(report: Report) -> None:
    t = SECOND_ORDER_SYMBOLS.t

    L = derive_lemma_a3()
    report.require(
        L.monotone.holds,
        f"f'(nu s) = {sp.factor(L.fprime_scaled)} >= 0 on s in [0,1]: {L.monotone}",
    )
    lo_third = min(L.fprime_roots_t, key=lambda r: r.subs(t, sp.Rational(1, 2)))
    report.require(
        all(r.subs(t, sp.Rational(1, 3)) >= 1 for r in L.fprime_roots_t)
        and lo_third.subs(t, sp.Rational(1, 2)) < 1,
        f"general t = gamma nu: roots of f'(nu s) are {L.fprime_roots_t}; the smaller, 1/(3t), "
        "lies outside (0,1) iff t <= 1/3, so f is monotone on [0, nu] iff t <= 1/3",
    )
    report.require(
        L.t_cancel == [sp.Rational(1, 3)],
        f"first-order coefficient of kappa'(1+eps) is {L.first_order_t}; zero only at t = {L.t_cancel}",
    )
    report.ok(f"derived kappa' = {L.kappa_next}; kappa'(1+eps) - 1 = {L.eps_next}")
    fd = (float(kappa_next_rule()[0].numpy(1 + 1e-4)) - 1) / 1e-8
    report.require(
        abs(fd - float(L.leading)) < 1e-3,
        f"numeric (kappa'(1+1e-4)-1)/1e-8 = {fd:.6f}; Taylor: kappa'(1+eps) = {L.series} + O(eps^4); leading coefficient {L.leading}",
    )
    report.require(
        L.bound_printed.holds,
        f"kappa' <= 1 + 2 eps^2 on [0, 1/10]: (1+2eps^2) den - num: {L.bound_printed}",
    )
    report.require(
        L.bound_sharp_all_eps,
        f"kappa' <= 1 + {L.leading} eps^2 for every eps >= 0 (ray certificate, Descartes)",
    )
    report.require(
        L.ratio_decreasing and L.kappa_next_increasing,
        "kappa'/kappa is decreasing and kappa' increasing on kappa >= 1.1 (ray certificates)",
    )
    grid = np.geomspace(1.1, 1e6, 20001)
    ratio = kappa_next_rule()[0].numpy(grid) / grid
    report.require(
        L.c < 1 and abs(ratio.max() - float(L.c)) < 1e-14 and int(np.argmax(ratio)) == 0,
        f"best c = kappa'(1.1)/1.1 = {L.c} = {float(L.c):.6f}; kappa'/kappa -> {L.c_limit} as kappa -> oo; "
        f"numeric max of kappa'/kappa on a grid of [1.1, 1e6] = {ratio.max():.6f} at 1.1",
    )
    report.finding(
        f"sharper than printed: kappa' <= 1 + (3/4) eps^2 holds for every eps > 0, not only eps <= 0.1 with 2; "
        f"exact kappa'(1+eps) - 1 = {L.eps_next}"
    )
    # Numeric route: one GD++ layer through the bridge's Gram map on data with spectrum [mu, nu].
    kn, f = (r.numpy for r in kappa_next_rule())
    rng = np.random.default_rng(0)
    worst = 0.0
    for kap in (1.05, 1.1, 3.0, 50.0):
        d, n = 6, 15
        lam = np.concatenate([[1.0, kap], rng.uniform(1.0, kap, d - 2)])
        U, _ = np.linalg.qr(rng.standard_normal((n, d)))
        X = U * np.sqrt(lam)
        y = X @ rng.standard_normal(d)
        Z = np.column_stack([X, y])
        om = -1.0 / (3.0 * kap)
        P, Q = np.diag([om] * d + [0.0]), np.diag([1.0] * d + [0.0])
        E1 = gram_update(Z.T @ Z, P @ Z.T @ Z @ Q, "numpy")
        ev = np.linalg.eigvalsh(E1[:d, :d])
        worst = max(
            worst,
            abs(ev[-1] / ev[0] / float(kn(kap)) - 1),
            float(np.max(np.abs(np.sort(f(lam, om)) - ev) / ev)),
        )
    report.require(
        worst < 1e-12,
        f"numeric: new eigenvalues = f(lambda) and cond = kappa'(kappa) for kappa in "
        f"(1.05, 1.1, 3, 50); max rel. deviation {worst:.1e} (float64)",
    )
    report.ok(f"eigenvalue map from the Gram map: {gdpp_eigenvalue_map()}")


if __name__ == "__main__":
    raise SystemExit(check.main())
