r"""GD++ per eigenvalue: ``w^L = s_L(Σ) α`` with ``(m, s, r)`` recursions, and the expected loss
``½ E[(ŷ − y_t)² | X] = Σ_j ½ (r_L(μ_j)² + σ² μ_j s_L(μ_j)²)`` (:mod:`lintf_theory._gdpp_spectral`).

Routes: (symbolic) the layer-``l`` eigenvalue ``μ m_l²`` of the derived recursion follows the
eigenvalue map derived independently from the Gram map (:func:`lintf_theory.gdpp_eigenvalue_map`);
(float64, model) the model's Gram-form pass :func:`numerics.models.predict` on concrete noisy data
gives ``ŷ = x_tᵀ V diag(s_L(μ)) Vᵀ α`` with ``s_L`` from the bridge export; (float64, model) the
conditional expected loss computed exactly from ``predict`` (``ŷ = x_tᵀ K y`` is linear in ``y`` and
``x_t`` for GD++, ``K`` read off with basis inputs, then ``½(‖K X − I‖_F² + σ² ‖K‖_F²)``) equals the
sum of the exported per-eigenvalue losses.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from lintf_theory import (
    GDPP_SPECTRAL_SYMBOLS,
    GDPP_SYMBOLS,
    SECOND_ORDER_SYMBOLS,
    derive_gdpp_spectral,
    gdpp_eigenvalue_map,
    gdpp_spectral_loss_rule,
)
from lintf_theory.symbols import omega_xx
from proofs._check import Report, claim

#: float64 comparisons of a 3-layer model on n=20, d=10 data: both sides are O(1) sums of
#: ~1e3 rounded products; 1e-9 relative leaves a wide margin over the observed ~1e-13.
RTOL = 1e-9
N_CTX, D = 20, 10
#: A 3-layer GD++ model with non-trivial ω_xx and ω_yx in every layer (scaled to the spectrum of n=20, d=10).
OMEGA_XX = (-0.012, -0.06, 0.0)
OMEGA_YX = (-0.013, -0.1, -0.5)


def _data(seed: int, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N_CTX, D))
    y = X @ rng.standard_normal(D) + sigma * rng.standard_normal(N_CTX)
    return X, y, rng.standard_normal(D)


def spectral_prediction_error(
    seed: int = 0, sigma: float = 0.5, omega_xx=OMEGA_XX, omega_yx=OMEGA_YX
) -> float:
    r"""Max relative gap between ``predict`` and ``x_tᵀ V diag(s_L(μ)) Vᵀ α`` over 8 sequences."""
    import jax  # lazy: start-up
    import jax.numpy as jnp  # lazy: start-up

    from numerics.baselines.gdpp_fit import factors  # lazy: start-up
    from numerics.models import Gdpp, predict, universal  # lazy: start-up

    with jax.enable_x64(True):
        wxx, wyx = np.asarray(omega_xx, float), np.asarray(omega_yx, float)
        data = [_data(seed * 100 + k, sigma) for k in range(8)]
        X, y, xq = (np.stack(a) for a in zip(*data))
        P, Q = universal(Gdpp(jnp.asarray(wxx), jnp.asarray(wyx)), D)
        yhat = np.asarray(predict(P, Q, jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq)))
        mu, V = np.linalg.eigh(np.einsum("bni,bnj->bij", X, X))
        s, _ = factors(wxx, wyx, mu, np)
        alpha = np.einsum("bni,bn->bi", X, y)
        spec = np.einsum("bi,bij,bj,bkj,bk->b", xq, V, s, V, alpha)
    return float(np.max(np.abs(yhat - spec)) / np.max(np.abs(yhat)))


def conditional_loss_error(
    seed: int = 0, sigma: float = 0.5, omega_xx=OMEGA_XX, omega_yx=OMEGA_YX
) -> tuple[float, float]:
    r"""``(relative gap, exact loss)``: ``½(‖K X − I‖² + σ²‖K‖²)`` from ``predict`` vs ``Σ_j ℓ(μ_j)``."""
    import jax  # lazy: start-up
    import jax.numpy as jnp  # lazy: start-up

    from numerics.baselines.gdpp_fit import factors  # lazy: start-up
    from numerics.models import Gdpp, predict, universal  # lazy: start-up

    with jax.enable_x64(True):
        wxx, wyx = np.asarray(omega_xx, float), np.asarray(omega_yx, float)
        X, _, _ = _data(seed, sigma)
        # K[i, k] = ŷ(x_t = e_i, y = e_k): the model is bilinear in (x_t, y) for GD++ (x-maps ignore y).
        E_d, E_n = np.eye(D), np.eye(N_CTX)
        xq = np.repeat(E_d, N_CTX, axis=0)
        yy = np.tile(E_n, (D, 1))
        P, Q = universal(Gdpp(jnp.asarray(wxx), jnp.asarray(wyx)), D)
        Xb = np.broadcast_to(X, (D * N_CTX, N_CTX, D))
        K = np.asarray(predict(P, Q, jnp.asarray(Xb), jnp.asarray(yy), jnp.asarray(xq))).reshape(
            D, N_CTX
        )
        exact = 0.5 * (np.sum((K @ X - np.eye(D)) ** 2) + sigma**2 * np.sum(K**2))
        mu = np.linalg.eigvalsh(X.T @ X)
        s, r = factors(wxx, wyx, mu, np)
        spec = float(np.sum(gdpp_spectral_loss_rule().numpy(mu, s, r, sigma)))
    return abs(exact - spec) / exact, float(exact)


@claim(
    "GD++ per eigenvalue: m' = m(1 + w_xx mu m^2), s' = s - w_yx m^2 (1 - mu s), r' = r(1 + w_yx mu m^2); "
    "E[(y_hat - y_t)^2 | X]/2 = sum_j (r_j^2 + sigma^2 mu_j s_j^2)/2",
    ref="Section 5.1 (GD++), Theorem 4.1",
    routes=("symbolic", "float64 model pass", "float64 exact expectation"),
)
def check(report: Report) -> None:
    m_s, mu = GDPP_SPECTRAL_SYMBOLS.m_s, GDPP_SYMBOLS.mu
    mu_gram, omega_gram = SECOND_ORDER_SYMBOLS.mu, SECOND_ORDER_SYMBOLS.omega_xx

    g = derive_gdpp_spectral()
    report.ok(
        f"derived: m' = {g.m_next}, s' = {g.s_next}, r' = {g.r_next}, loss = {g.loss}, residuals = {g.residuals}"
    )
    # the Gram-map route uses its own (assumption-carrying) symbols; map them onto ours
    f = gdpp_eigenvalue_map().xreplace({mu_gram: mu * m_s**2, omega_gram: omega_xx})
    gap = sp.expand(mu * g.m_next**2 - f)
    report.require(
        gap == 0,
        "symbolic: the layer eigenvalue mu m^2 of the implicit-state recursion maps by the "
        "eigenvalue map derived from the Gram map (mu m'^2 = f(mu m^2))",
    )
    # r enters the loss check (σ = 0: ℓ = ½ r²), s the prediction check and the σ > 0 loss check.
    for seed, sigma in ((0, 0.0), (1, 0.5)):
        err = spectral_prediction_error(seed, sigma)
        report.require(
            err < RTOL,
            f"float64: predict (Gram form) = x_t^T V diag(s_L(mu)) V^T alpha on 8 sequences "
            f"(sigma={sigma}), max rel. gap {err:.1e} < {RTOL}",
        )
        lerr, exact = conditional_loss_error(seed, sigma)
        report.require(
            lerr < RTOL,
            f"float64: exact E[loss | X] from predict {exact:.6g} = sum of per-eigenvalue "
            f"losses (sigma={sigma}), rel. gap {lerr:.1e} < {RTOL}",
        )


if __name__ == "__main__":
    raise SystemExit(check.main())
