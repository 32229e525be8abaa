"""One-layer closed form: E-loss of one GD step from Wishart moments; optimum d(d+1)/(2(n+d+1)) at sigma = 0."""

from __future__ import annotations

import numpy as np
import sympy as sp

from lintf_theory import ONE_STEP_SYMBOLS, derive_one_step_gd, one_step_rule, wishart_moments
from proofs._check import Report, claim


def _mc_losses(key, noise: str, etas, n: int, d: int, batch: int) -> list[tuple[float, float]]:
    """Monte Carlo ½E(y_t - ŷ)² of the one-layer GD construction (literal token pass), with standard errors.

    Data as in :mod:`numerics.data` (w, x_i, x_t ~ N(0, I), per-sequence sigma from ``Noise``), drawn with NumPy
    to avoid compiling the JAX sampler inside ``lintf verify`` (tests/theory/test_closed_forms.py uses ``sample``)."""
    import jax  # lazy: start-up

    from numerics.data import Noise  # lazy: start-up
    from numerics.models import forward_tokens, universal  # lazy: start-up
    from numerics.models.constructions import gd  # lazy: start-up

    out = []
    rng = np.random.default_rng(int(key))
    sigma = Noise.parse(noise).sample_sigma(
        jax.random.PRNGKey(int(key)), batch
    )  # the data module's noise draw
    w = rng.standard_normal((batch, d))
    X, xq = rng.standard_normal((batch, n, d)), rng.standard_normal((batch, d))
    y = np.einsum("bnd,bd->bn", X, w) + np.asarray(sigma, dtype=np.float64)[
        :, None
    ] * rng.standard_normal((batch, n))
    with jax.enable_x64(True):
        for eta in etas:
            P, Q = universal(gd(float(eta), 1), d)
            y_hat = -np.asarray(
                forward_tokens(P, Q, X, y, xq)[-1, :, -1, -1]
            )  # ŷ = -y_{n+1}^L, literal layer
            sq = 0.5 * (np.einsum("bd,bd->b", xq, w) - y_hat) ** 2
            out.append((float(sq.mean()), float(sq.std() / np.sqrt(batch))))
    return out


@claim(
    "One GD step with step eta: E-loss d/2 (1 - 2 eta n + eta^2 n (n+d+1+sigma^2)); optimum eta = 1/(n+d+1+E sigma^2); "
    "at sigma = 0 the loss is d(d+1)/(2(n+d+1))",
    ref="docs/model.md closed form",
    routes=("symbolic", "numeric"),
)
def check(report: Report) -> None:

    d, n, sigma2 = ONE_STEP_SYMBOLS.d, ONE_STEP_SYMBOLS.n, ONE_STEP_SYMBOLS.sigma2
    from numerics.data import Noise  # lazy: start-up

    m, g = wishart_moments(), derive_one_step_gd()
    report.ok(f"Wishart moments from chi-square moments: E Sigma = {m.m1} I, E Sigma^2 = {m.m2} I")
    report.ok(f"recursion: one GD layer gives w^1 = {g.step_coefficient} alpha; loss = {g.loss}")
    printed = d * (d + 1) / (2 * (n + d + 1))  # the claim under test (docs/model.md)
    report.require(
        sp.simplify(g.loss_opt.subs(sigma2, 0) - printed) == 0
        and sp.simplify(g.eta_opt.subs(sigma2, 0) - 1 / (n + d + 1)) == 0,
        f"optimum eta* = {g.eta_opt}, loss* = {g.loss_opt}; at sigma = 0 equals printed d(d+1)/(2(n+d+1)) with eta = 1/(n+d+1)",
    )
    report.require(
        g.affine_in_sigma2,
        "loss is affine in sigma^2 (second derivative 0): a noise prior enters only through E sigma^2",
    )
    loss_f, opt_f = (r.numpy for r in one_step_rule())
    n_, d_, batch = 20, 10, 10000
    worst = 0.0
    lines = []
    for i, noise in enumerate(("fixed:0", "uniform:3")):
        s2 = Noise.parse(noise).mean_sigma2
        eta_star, loss_star = opt_f(n_, d_, s2)
        etas = (float(eta_star), 0.5 * float(eta_star))
        for eta, (mc, se) in zip(etas, _mc_losses(i + 1, noise, etas, n_, d_, batch)):
            cf = float(loss_f(n_, d_, eta, s2))
            worst = max(worst, abs(mc - cf) / se)
            lines.append(f"{noise} eta={eta:.4f}: MC {mc:.4f} +- {se:.4f} vs {cf:.4f}")
    report.require(
        worst < 4.0,
        f"Monte Carlo (n=20, d=10, {batch} sequences, literal one-layer model): "
        + "; ".join(lines)
        + f"; max |z| = {worst:.2f} < 4",
    )


if __name__ == "__main__":
    raise SystemExit(check.main())
