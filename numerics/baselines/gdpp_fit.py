r"""Spectral fit of GD++: minimise the exact expected loss over the ``2L`` layer parameters.

For GD++ every quantity is a polynomial in ``Σ = XᵀX`` (:mod:`lintf_theory._gdpp_spectral`,
derived), so given ``X`` the expected loss over ``w_τ, ξ, x_t`` is a sum over the eigenvalues
``μ_j`` of ``Σ`` of the derived per-eigenvalue loss, and the training objective becomes

.. math::

    ℒ(θ) = \mathbb{E}_{Σ, σ}\Big[\sum_{j=1}^{d} ℓ_θ(μ_j, σ)\Big],\qquad
    ℓ_θ = \tfrac12\big(r_L^2 + σ^2 μ s_L^2\big) = \tfrac12 \sum_k ρ_k^2,

with ``(m_l, s_l, r_l)`` from the bridge export :func:`lintf_theory.gdpp_spectral_rule` and the
residuals ``ρ_k`` from :func:`lintf_theory.gdpp_spectral_residual_rule`.  ``θ = (ω_xx^l, ω_yx^l)``.

Choices (each documented where it is made):

* **Importance sampling of Σ** and **stratified thinning** of its eigenvalues
  (:mod:`numerics.baselines.wishart`): a few ``10⁴`` weighted points stand for the expected loss.
* **Gauss–Newton (Levenberg–Marquardt)** on the residuals ``√weight_p · ρ_k(μ_p)`` with
  ``x_scale="jac"`` (the parameters span six decades: ``ω_xx^1 ≈ −1e-2``, ``ω_yx^L ≈ −70``), Jacobian by
  ``jax.jacfwd`` in float64.  L-BFGS on the same objective stalls at ``L = 6``.
* **Continuation over depth**: the ``L``-layer fit starts from the ``(L−1)``-layer optimum with one
  preconditioning layer (``ω_yx = 0``) inserted at every position ``p``, with
  ``ω_xx = −t/ν_p`` for ``t ∈ {1/3, 1, 3}`` (``ν_p``: the largest layer-``p`` eigenvalue
  ``μ m_p²`` of the sample; ``t = 1/3`` is Lemma A.3's choice; at the last position ``ω_xx`` is
  fixed: one start); the best of the ``3L − 2`` fits is kept.  (Dropping ``t = 3`` saves ~40 % of
  the time but lost ``L = 2``: ``0.342`` instead of ``0.267`` on the fit points, seed 0.)
* The last layer's ``ω_xx`` does not reach the prediction (only its ``x``-map) and is fixed to 0.

Deterministic by seed (numpy ``Generator(PCG64(seed))``; LM is deterministic).
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import least_squares

from lintf_theory import gdpp_spectral_residual_rule, gdpp_spectral_rule
from numerics.baselines.wishart import Points, SpectralSample, sample_spectra, thin
from numerics.data import Noise
from numerics.models import Gdpp

#: Sequences whose spectra the fit uses (~3 s to draw; thinned to ~27 000 points).  The ``L = 7`` fit
#: (continuation from ``L = 1``) took 64–214 s on 2 shared cores, depending on load.
FIT_SEQUENCES = 200_000


class SpectralFit(NamedTuple):
    """Fitted GD++ parameters (float64) and, per depth ``1..L``, ``(loss on the fit points, params)``; ``seconds``: the
    time the path's fits up to ``L`` took."""

    params: Gdpp
    loss: float
    path: tuple[tuple[float, Gdpp], ...]
    seconds: float


def factors(omega_xx: Any, omega_yx: Any, mu: Any, xp: Any = jnp) -> tuple[Any, Any]:
    r"""``(s_L(μ), r_L(μ))`` by the derived per-eigenvalue recursion (bridge export), elementwise in ``mu``."""
    step = gdpp_spectral_rule().jax if xp is jnp else gdpp_spectral_rule().numpy
    m, s, r = xp.ones_like(mu), xp.zeros_like(mu), xp.ones_like(mu)
    for l in range(omega_xx.shape[0]):
        m, s, r = step(mu, m, s, r, omega_xx[l], omega_yx[l])
    return s, r


def sequence_losses(params: Gdpp, sample: SpectralSample) -> np.ndarray:
    r"""Per-sequence expected loss ``Σ_j ℓ(μ_j, σ)`` given ``Σ`` (numpy, float64), times the importance weight."""
    wxx, wyx = (np.asarray(p, np.float64) for p in params)
    s, r = factors(wxx, wyx, sample.mu, np)
    rho = gdpp_spectral_residual_rule().numpy(sample.mu, s, r, sample.sigma[:, None])
    rho = rho if isinstance(rho, (list, tuple)) else [rho]
    per = 0.5 * sum(np.broadcast_to(q, sample.mu.shape) ** 2 for q in rho).sum(-1)
    return per * sample.weight


def estimate(params: Gdpp, sample: SpectralSample) -> tuple[float, float]:
    """Loss estimate and its standard error from a spectral sample (importance-weighted mean over sequences)."""
    v = sequence_losses(params, sample)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


def _residual_fn(points: Points, L: int):
    mu, sig, sw = (
        jnp.asarray(a, jnp.float64) for a in (points.mu, points.sigma, np.sqrt(points.weight))
    )
    res_rule = gdpp_spectral_residual_rule().jax

    def F(theta):  # theta = (ω_xx^1..ω_xx^{L−1}, ω_yx^1..ω_yx^L); ω_xx^L = 0
        wxx = jnp.concatenate([theta[: L - 1], jnp.zeros(1, theta.dtype)])
        s, r = factors(wxx, theta[L - 1 :], mu)
        rho = res_rule(mu, s, r, sig)
        rho = rho if isinstance(rho, (list, tuple)) else [rho]
        return jnp.concatenate([jnp.broadcast_to(q, mu.shape) * sw for q in rho])

    return jax.jit(F), jax.jit(jax.jacfwd(F))


def _lm(F, J, x0: np.ndarray, max_nfev: int) -> tuple[float, np.ndarray]:
    fun = lambda t: np.asarray(F(jnp.asarray(t)))  # noqa: E731
    jac = lambda t: np.asarray(J(jnp.asarray(t)))  # noqa: E731
    if not np.all(np.isfinite(fun(x0))):
        return np.inf, x0
    r = least_squares(
        fun,
        x0,
        jac=jac,
        method="lm",
        x_scale="jac",
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
        max_nfev=max_nfev,
    )
    return float(r.cost), r.x  # cost = ½ Σ_p weight_p Σ_k ρ_k² = ℒ on the points


def fit_gdpp(
    layers: int,
    noise: str = "fixed:0",
    n: int = 20,
    d: int = 10,
    seed: int = 0,
    sequences: int = FIT_SEQUENCES,
    max_nfev: int = 300,
) -> SpectralFit:
    r"""Fit GD++ with ``layers`` layers by continuation ``L = 1..layers`` (module docstring); float64 throughout.
    The process keeps each setting's path: a fit of another depth takes its step of it, or goes on from its end."""
    if int(layers) < 1:
        raise ValueError(f"layers must be >= 1, got {layers}")
    return _fit_cached(
        int(layers),
        str(Noise.parse(noise)),
        int(n),
        int(d),
        int(seed),
        int(sequences),
        int(max_nfev),
    )


#: Per fit setting ``(noise, n, d, seed, sequences, max_nfev)``, the fits of depth ``1, 2, …`` so far, each with its
#: seconds: continuation makes the depth-``L`` fit the path's ``L``-th step, so a fit of any depth reuses the path and
#: a deeper one goes on from its end (the same numbers as a fit from nothing: LM and the sample are deterministic).
_PATHS: dict[tuple, list[tuple[float, Gdpp, float]]] = {}


def clear_cache() -> None:
    """Forget every fitted path (the next fit starts from nothing)."""
    _PATHS.clear()
    _points.cache_clear()


@lru_cache(maxsize=16)
def _points(noise: str, n: int, d: int, seed: int, sequences: int) -> Points:
    return thin(sample_spectra(seed, sequences, n, d, noise))


def _fit_cached(
    layers: int, noise: str, n: int, d: int, seed: int, sequences: int, max_nfev: int
) -> SpectralFit:
    path = _PATHS.setdefault((noise, n, d, seed, sequences, max_nfev), [])
    with jax.enable_x64(True):
        for L in range(len(path) + 1, layers + 1):
            t0 = time.perf_counter()
            pts = _points(noise, n, d, seed, sequences)
            wxx, wyx = (np.asarray(a) for a in path[-1][1]) if path else (np.zeros(0), np.zeros(0))
            F, J = _residual_fn(pts, L)
            if L == 1:
                starts = [np.array([-1.0 / float(np.average(pts.mu, weights=pts.weight))])]
            else:
                starts = []
                step = gdpp_spectral_rule().numpy
                m = np.ones_like(pts.mu)
                for p in range(L):
                    nu = float(np.max(pts.mu * m**2))
                    # at p = L−1 the inserted layer is the last one, whose ω_xx is fixed: one start
                    for t in (1 / 3, 1.0, 3.0) if p < L - 1 else (1.0,):
                        nxx, nyx = np.insert(wxx, p, -t / nu), np.insert(wyx, p, 0.0)
                        starts.append(np.concatenate([nxx[: L - 1], nyx]))
                    if p < L - 1:  # the scale of x after layer p, by the derived rule
                        m, _, _ = step(pts.mu, m, np.zeros_like(m), np.ones_like(m), wxx[p], wyx[p])
            best = (np.inf, starts[0])
            for x0 in starts:
                val, x = _lm(F, J, x0, max_nfev)
                if val < best[0]:
                    best = (val, x)
            fitted = Gdpp(np.concatenate([best[1][: L - 1], [0.0]]), best[1][L - 1 :].copy())
            path.append((best[0], fitted, time.perf_counter() - t0))
    loss, params, _ = path[layers - 1]
    return SpectralFit(
        params,
        loss,
        tuple((v, p) for v, p, _ in path[:layers]),
        sum(sec for _, _, sec in path[:layers]),
    )
