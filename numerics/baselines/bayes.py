r"""The Bayes-optimal prediction under ``w ~ N(0, I_d)`` and the noise prior (docs/model.md; not in the paper).

Given ``σ``, the posterior of ``w`` is Gaussian with mean ``w_{σ²} = (Σ + σ² I)^{-1} α`` (ridge).
The noise level is unknown, so the posterior mean of the query target mixes ridge solutions,
each weighted by its posterior probability:

.. math::

    \hat y_{\rm Bayes} = \sum_j \pi_j \, x_t^\top (\Sigma + s_j I)^{+} \alpha, \qquad
    \pi_j \propto \omega_j \, \mathcal N(y;\, 0,\, X X^\top + s_j I_n), \qquad s_j = \sigma_j^2,

and this minimises ``½ E (y_t − ŷ)²`` over all functions of ``(X, y, x_t)``. The marginal
likelihood is evaluated through the eigenvalues ``μ_k`` of ``Σ`` only (our derivation; checked
against a dense ``n × n`` computation in ``tests/baselines/test_bayes.py``):

.. math::

    \log\det(XX^\top + sI_n) = \sum_{k:\,\mu_k>0} \log(\mu_k + s) + (n - r)\log s
    \quad\text{(Sylvester: } \det(sI_n + XX^\top) = s^{n-d}\det(sI_d + X^\top X)\text{)},

    y^\top (XX^\top + sI_n)^{-1} y = \frac{\lambda - \alpha^\top(\Sigma + sI)^{-1}\alpha}{s}
    = \frac{\rho}{s} + \sum_{k:\,\mu_k>0} \frac{\beta_k^2}{\mu_k(\mu_k + s)}
    \quad\text{(Woodbury, then } \lambda = \rho + \sum_k \beta_k^2/\mu_k\text{)}.

The last form is a sum of non-negative terms, so it does not cancel as ``s → 0``. The weights are a
softmax of ``log ω_j + log N(y; 0, XXᵀ + s_j I)`` (logsumexp-stable).

==============  ==========================================================================
symbol          code
==============  ==========================================================================
``μ_k, β, γ``   :class:`numerics.baselines.spectral.Spectral` ``mu, beta, gamma`` (``β = Vᵀα``, ``γ = Vᵀx_t``)
``ρ, λ``        ``rho`` (OLS residual energy), ``lam = ‖y‖²``
``r``           numerical rank of ``X``; ``n − r`` is ``Spectral.dof``
``s_j, ω_j``    :class:`Quadrature` ``s`` (``σ_j²``) and ``log_w`` (``log ω_j``, prior mass of node j)
==============  ==========================================================================

Priors (``Quadrature``): *fixed* ``σ``: one node. *categorical* ``S``: the exact mixture,
``ω_j = 1/|S|``. *uniform* ``U(0, σ_max)``: the posterior in ``σ`` has relative width about
``1/√(2(n−d))`` at every scale, so a grid in ``σ`` would miss the peaks of near-noiseless
sequences. We integrate in ``t = log σ`` instead, with composite 8-point Gauss–Legendre panels on
``[log σ_max − T, log σ_max]`` (prior density ``e^t/σ_max``), plus one 8-point Gauss–Legendre panel
in ``σ`` on ``[0, σ_max e^{−T}]`` so that the prior masses sum to one. The point ``σ = 0`` is a prior
atom only for ``fixed:0`` / ``uniform:0`` (or ``0 ∈ S``). At ``s = 0`` and ``n > r`` the Gaussian is
singular: its likelihood is ``+∞`` if ``ρ = 0`` (the data interpolate) and ``0`` otherwise, so a
categorical ``0 ∈ S`` takes all the weight exactly when ``ρ`` vanishes, and a single atom at ``0``
gives OLS (minimum-norm interpolation when ``n ≤ d``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from numerics.baselines.spectral import Spectral, _inv, check_data, spectral
from numerics.data import Noise
from numerics.types import Inputs, Queries, Scalars, Targets

#: Gauss–Legendre points per panel, and the depth ``T`` of the log-σ range below ``σ_max``.
PANEL_POINTS = 8
LOG_DEPTH = 12.0
#: Default number of log-σ nodes (``nodes / PANEL_POINTS`` panels); see ``tests/baselines/test_bayes.py`` for convergence.
DEFAULT_NODES = 192
#: ``ρ`` below ``RHO_ATOL * λ`` counts as exact interpolation for an atom at ``σ = 0``.
RHO_ATOL = 1e-20


class Quadrature(NamedTuple):
    """Nodes ``s_j = σ_j²`` ``(K,)`` and log prior masses ``log ω_j`` ``(K,)`` of the noise prior."""

    s: np.ndarray
    log_w: np.ndarray


def quadrature(noise: Noise | str, nodes: int = DEFAULT_NODES) -> Quadrature:
    """Discretise the prior of ``σ``: exact for fixed/categorical, Gauss–Legendre in ``log σ`` for uniform."""
    noise = Noise.parse(noise)
    if int(nodes) < PANEL_POINTS or int(nodes) % PANEL_POINTS:
        raise ValueError(f"nodes must be a positive multiple of {PANEL_POINTS}, got {nodes}")
    v = np.asarray(noise.values, dtype=np.float64)
    if noise.kind == "fixed" or (noise.kind == "uniform" and v[0] == 0.0):
        return Quadrature(np.array([v[0] ** 2]), np.zeros(1))
    if noise.kind == "categorical":
        return Quadrature(v**2, np.full(v.shape, -np.log(v.size)))
    smax = v[0]
    x, g = np.polynomial.legendre.leggauss(PANEL_POINTS)  # on [-1, 1], weights sum to 2
    edges = np.linspace(np.log(smax) - LOG_DEPTH, np.log(smax), int(nodes) // PANEL_POINTS + 1)
    mid, half = (edges[1:] + edges[:-1]) / 2, (edges[1:] - edges[:-1]) / 2
    t = (mid[:, None] + half[:, None] * x).ravel()
    log_w_t = np.log(half[:, None] * g).ravel() + t - np.log(smax)  # ∫ e^t/σ_max dt
    low = smax * np.exp(-LOG_DEPTH)
    sig_low = low / 2 * (1 + x)  # ∫_0^low dσ/σ_max
    log_w_low = np.log(low / 2 * g / smax)
    return Quadrature(
        np.concatenate([sig_low**2, np.exp(2 * t)]), np.concatenate([log_w_low, log_w_t])
    )


@jax.jit
def log_marginal_likelihood(sp: Spectral, s: jax.Array) -> jax.Array:
    r"""``log N(y; 0, XXᵀ + s I_n)`` ``(B, K)`` for nodes ``s (K,)`` from the spectrum (formula above).

    At ``s = 0`` with ``n > r``: ``+∞`` if ``ρ ≤ RHO_ATOL·λ``, else ``−∞``.
    """
    n = sp.dof + sp.active.sum(-1)  # (B,)
    s = jnp.asarray(s, sp.mu.dtype)

    def one(sj: jax.Array) -> jax.Array:
        pos = sj > 0
        s_safe = jnp.where(pos, sj, 1.0)
        inv = _inv(sp, sj)
        logdet = jnp.sum(sp.active * jnp.log(jnp.where(sp.active > 0, sp.mu + sj, 1.0)), -1)
        logdet = logdet + jnp.where(sp.dof > 0, sp.dof * jnp.log(s_safe), 0.0)
        mu_safe = jnp.where(sp.active > 0, sp.mu, 1.0)
        quad = jnp.sum(sp.beta**2 * inv / mu_safe, -1) + jnp.where(sp.dof > 0, sp.rho / s_safe, 0.0)
        ll = -0.5 * (logdet + quad + n * jnp.log(2 * jnp.pi))
        interp = sp.rho <= RHO_ATOL * sp.lam
        at_zero = jnp.where(sp.dof > 0, jnp.where(interp, jnp.inf, -jnp.inf), ll)
        return jnp.where(pos, ll, at_zero)

    return jax.lax.map(one, s).T


@jax.jit
def posterior_weights(sp: Spectral, s: jax.Array, log_w: jax.Array) -> jax.Array:
    """Posterior probabilities ``π (B, K)`` of the nodes (logsumexp-stable; ``+∞`` atoms take all weight)."""
    if s.shape[0] == 1:
        return jnp.ones(sp.rho.shape + (1,), sp.mu.dtype)
    ll = log_marginal_likelihood(sp, s)
    pinf = ll == jnp.inf
    logits = jnp.where(pinf, 0.0, ll) + log_w
    soft = jax.nn.softmax(logits, axis=-1)
    atoms = pinf * jnp.exp(log_w - jnp.max(log_w))
    atoms = atoms / jnp.maximum(atoms.sum(-1, keepdims=True), 1e-300)
    return jnp.where(pinf.any(-1, keepdims=True), atoms, soft)


def _node_predict(sp: Spectral, sj: jax.Array) -> jax.Array:
    return jnp.sum(sp.gamma * sp.beta * _inv(sp, sj), -1)


@jax.jit
def _predict_streaming(sp: Spectral, s: jax.Array, log_w: jax.Array) -> Scalars:
    """One pass over the nodes with an online logsumexp (all ``s_j > 0``); memory ``O(B d)``."""
    ll = lambda sj: log_marginal_likelihood(sp, sj[None])[:, 0]  # noqa: E731

    def step(carry, node):
        m, z, acc = carry
        logit = ll(node[0]) + node[1]
        m_new = jnp.maximum(m, logit)
        old, new = jnp.exp(m - m_new), jnp.exp(logit - m_new)
        return (m_new, z * old + new, acc * old + new * _node_predict(sp, node[0])), None

    zero = jnp.zeros_like(sp.rho)
    (_, z, acc), _ = jax.lax.scan(step, (zero - jnp.inf, zero, zero), jnp.stack([s, log_w], -1))
    return acc / z


@jax.jit
def _predict_weights(sp: Spectral, s: jax.Array, log_w: jax.Array) -> Scalars:
    pi = posterior_weights(sp, s, log_w)
    yhat = jax.lax.map(lambda sj: _node_predict(sp, sj), s)  # (K, B)
    return jnp.sum(pi * yhat.T, -1)


def predict_spectral(sp: Spectral, s: jax.Array, log_w: jax.Array) -> Scalars:
    """``ŷ_Bayes = Σ_j π_j ŷ(s_j)`` from precomputed spectra, nodes ``s`` and log prior masses ``log_w``.

    Many nodes, all positive (uniform prior): one streaming pass, memory ``O(B d)``. Otherwise
    (fixed, categorical, atoms at ``σ = 0``): explicit posterior weights, memory ``O(B K)``.
    """
    s_host = np.asarray(s)
    if s_host.size > 16 and np.all(s_host > 0):
        return _predict_streaming(sp, s, log_w)
    return _predict_weights(sp, s, log_w)


def predict(
    X: Inputs, y: Targets, x_query: Queries, noise: Noise | str, nodes: int = DEFAULT_NODES
) -> Scalars:
    """Bayes-optimal prediction of the noiseless query target for data ``(X, y, x_query)`` under ``noise``."""
    check_data(X, y, x_query)
    q = quadrature(noise, nodes)
    return predict_spectral(
        spectral(X, y, x_query), jnp.asarray(q.s, X.dtype), jnp.asarray(q.log_w, X.dtype)
    )
