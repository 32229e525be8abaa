r"""Closed-form baselines of the paper's Table 1 (§4), plus GD and the Bayes-optimal floor.

All are ridge-type predictions ``ŷ(s) = x_tᵀ (Σ + sI)^{-1} α`` (one ``eigh`` per sequence, see
:mod:`numerics.baselines.spectral`) with different choices of ``s``, or one GD step:

==========  =========================================================  ==========================
name        prediction                                                 tuned on the tuning set
==========  =========================================================  ==========================
OLS         ``s = 0``: ``x_tᵀ Σ^{-1} α``                                —
Oracle      ``s = σ_τ²`` (true noise level; the reference of the metric) —
ConstRR     ``s = λ_c``, one value for all sequences                   ``λ_c`` (grid + refinement)
AdaRR       ``s = σ̂² = ρ / (n − d)``, ``ρ = ‖y − X w*‖²``               —
TunedRR     ``s = m · min(σ̂², c)``                                     cap ``c``, multiplier ``m``
GD          ``ŷ = η x_tᵀ α`` (one GD step from ``w = 0``)                ``η`` (exact least squares)
Bayes       posterior mean under the noise prior (:mod:`numerics.baselines.bayes`)  —
==========  =========================================================  ==========================

``ConstRR_Esigma2`` is ridge at ``s = E σ²`` of the noise prior, not tuned: the loss-minimising spectral
filter ``f(Σ) α``, so no GD++ model has a lower expected loss (:mod:`lintf_theory._gdpp_floor`); tuned
ConstRR's ``λ_c`` estimates the same ``E σ²``.

Departure from the paper: the paper does not say whether TunedRR's multiplier acts before or after
the cap; ``m · min(σ̂², c)`` and ``min(m σ̂², c')`` coincide with ``c' = m c``. Tuning minimises the
mean loss ``½(y_t − ŷ)²`` on ``tune_sequences`` sequences drawn with a key independent of the
evaluation key; the grid search is deterministic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np

from numerics.baselines import bayes, scoring
from numerics.baselines.spectral import (
    Spectral,
    check_ols,
    check_s,
    ridge_predict,
    ridge_predict_grid,
)
from numerics.data import Noise

NAMES: tuple[str, ...] = (
    "OLS",
    "ConstRR",
    "ConstRR_Esigma2",
    "AdaRR",
    "TunedRR",
    "GD",
    "Bayes",
    "Oracle",
)
#: Ridge at ``λ = E σ²``: the loss-minimising spectral filter, so no GD++ model has a lower expected loss.
FLOOR = "ConstRR_Esigma2"
OLS_BASED: tuple[str, ...] = ("OLS", "AdaRR", "TunedRR")
#: The baselines tuned on separate sequences (:func:`tune`), and how many by default.
TUNED: tuple[str, ...] = ("ConstRR", "TunedRR", "GD")
TUNE_SEQUENCES = 50_000
#: Coarse grids (then ``REFINE`` rounds of ``REFINE_POINTS`` points between the best point's neighbours).
CONST_GRID = np.concatenate([[0.0], np.geomspace(1e-6, 1e4, 51)])
MULT_GRID = np.geomspace(0.05, 20.0, 27)
CAP_QUANTILES = np.array([0.25, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99, 1.0])
REFINE, REFINE_POINTS = 3, 9


@dataclass(frozen=True)
class Tuned:
    """Tuned parameters: ConstRR ``lam_const``, TunedRR ``cap`` and ``mult``, GD step ``eta``."""

    lam_const: float = 0.0
    cap: float = float("inf")
    mult: float = 1.0
    eta: float = 0.0

    def __post_init__(self) -> None:
        for k in ("lam_const", "mult", "eta"):
            v = getattr(self, k)
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"{k} must be finite and >= 0, got {v}")
        if np.isnan(self.cap) or self.cap < 0:
            raise ValueError(f"cap must be >= 0 (inf allowed), got {self.cap}")


@jax.jit
def sigma2_hat(sp: Spectral) -> jax.Array:
    r"""AdaRR's noise estimate ``σ̂² = ρ / (n − d)`` ``(B,)`` (needs ``n > d``)."""
    return sp.rho / sp.dof


@jax.jit
def gd_direction(sp: Spectral) -> jax.Array:
    """``x_tᵀ α = γᵀ β`` ``(B,)``: the GD prediction is ``η`` times this."""
    return jnp.sum(sp.gamma * sp.beta, -1)


@jax.jit
def mean_loss_grid(sp: Spectral, y_query: jax.Array, s_grid: jax.Array) -> jax.Array:
    return jnp.mean(scoring.per_sequence_loss(ridge_predict_grid(sp, s_grid), y_query), -1)


@jax.jit
def tuned_loss_grid(
    sp: Spectral, y_query: jax.Array, caps: jax.Array, mults: jax.Array
) -> jax.Array:
    s2 = sigma2_hat(sp)

    def one(cm: jax.Array) -> jax.Array:
        return jnp.mean(
            scoring.per_sequence_loss(ridge_predict(sp, cm[1] * jnp.minimum(s2, cm[0])), y_query)
        )

    return jax.lax.map(one, jnp.stack([caps, mults], -1))


def oracle_weights(X: jax.Array, y: jax.Array, sigma: jax.Array) -> jax.Array:
    r"""The oracle ridge weights ``w_{σ²} = (Σ + σ_τ² I)^{-1} α`` per sequence, ``(B, d)``, for the true noise
    levels ``sigma (B,)`` (``Σ = Xᵀ X``, ``α = Xᵀ y``; docs/model.md).  The adjusted loss of training's held-out
    evaluation and the inspector's reference weights use it; the baselines' spectral route
    (:func:`numerics.baselines.spectral.ridge_predict` at ``s = σ²``) computes the same predictor by eigenvalues."""
    Sigma = jnp.einsum("bnd,bne->bde", X, X)
    alpha = jnp.einsum("bnd,bn->bd", X, y)
    eye = jnp.eye(X.shape[-1], dtype=Sigma.dtype)
    return jnp.linalg.solve(Sigma + (sigma**2)[:, None, None] * eye, alpha[..., None])[..., 0]


def _between(grid: np.ndarray, i: int) -> np.ndarray:
    """Refined points spanning the neighbours of ``grid[i]`` (geometric if positive, else linear)."""
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    if lo > 0 and np.isfinite(hi):
        return np.geomspace(lo, hi, REFINE_POINTS)
    if not np.isfinite(
        hi
    ):  # keep ∞ (no cap) as a candidate, refine the finite side up to 4× the best
        top = grid[i] if np.isfinite(grid[i]) else lo
        return np.concatenate([np.geomspace(lo, 4 * top, REFINE_POINTS - 1), [hi]])
    return np.linspace(lo, hi, REFINE_POINTS)


def tune_const(sp: Spectral, y_query: jax.Array) -> float:
    """ConstRR's ``λ_c``: coarse grid (``0`` included, extended upwards while its best is at the top) then refinement
    rounds; deterministic."""
    grid = CONST_GRID
    losses = np.asarray(mean_loss_grid(sp, y_query, jnp.asarray(grid)))
    while (
        int(np.argmin(losses)) == len(grid) - 1 and grid[-1] < 1e13
    ):  # best at the top: go on a decade at a time
        grid = np.geomspace(grid[-2], grid[-1] * 10, 7)  # (σ up to 1e6 puts λ = σ² up to 1e12)
        losses = np.asarray(mean_loss_grid(sp, y_query, jnp.asarray(grid)))
    for k in range(REFINE + 1):
        if k:
            losses = np.asarray(mean_loss_grid(sp, y_query, jnp.asarray(grid)))
        i = int(np.argmin(losses))
        best = float(grid[i])
        grid = _between(grid, i)
    return best


def tune_tuned(sp: Spectral, y_query: jax.Array) -> tuple[float, float]:
    """TunedRR's ``(cap, mult)``: 2-D grid (caps at quantiles of ``σ̂²``, plus ``∞``) then refinement."""
    s2 = np.asarray(sigma2_hat(sp))
    caps = np.unique(np.concatenate([np.quantile(s2, CAP_QUANTILES), [np.inf]]))
    caps = caps[caps > 0] if np.any(caps > 0) else np.array([np.inf])
    mults = MULT_GRID
    for _ in range(REFINE + 1):
        C, M = np.meshgrid(caps, mults, indexing="ij")
        losses = np.asarray(
            tuned_loss_grid(sp, y_query, jnp.asarray(C.ravel()), jnp.asarray(M.ravel()))
        )
        i, j = np.unravel_index(int(np.argmin(losses)), C.shape)
        best = (float(caps[i]), float(mults[j]))
        caps, mults = _between(caps, i), _between(mults, j)
    return best


def tune_eta(sp: Spectral, y_query: jax.Array) -> float:
    r"""GD step: the exact minimiser over ``η >= 0`` of the tuning loss, ``max(0, Σ y_t g / Σ g²)`` with
    ``g = x_tᵀ α`` (the loss is quadratic in ``η``; where noise swamps the signal the unconstrained minimiser can be
    a step against the gradient, and a GD step is not that)."""
    g = np.asarray(gd_direction(sp))
    gg = float(np.dot(g, g))
    return max(0.0, float(np.dot(np.asarray(y_query), g)) / gg) if gg > 0 else 0.0


def tune(
    key: jax.Array,
    noise: Noise | str,
    sequences: int,
    n: int,
    d: int,
    methods=NAMES,
    chunk: int | None = None,
) -> Tuned:
    """Tune ConstRR, TunedRR and GD on ``sequences`` fresh sequences drawn with ``key`` (float64)."""
    chunk = scoring.CHUNK if chunk is None else chunk
    if not set(TUNED) & set(methods):
        return Tuned()
    with jax.enable_x64(True):
        parts = list(scoring.batches(key, noise, sequences, n, d, chunk))
        sp = Spectral(*(jnp.concatenate(f) for f in zip(*(p[1] for p in parts))))
        yq = jnp.concatenate([p[0].y_query for p in parts])
        kw = {}
        if "ConstRR" in methods:
            kw["lam_const"] = tune_const(sp, yq)
        if "TunedRR" in methods:
            kw["cap"], kw["mult"] = tune_tuned(sp, yq)
        if "GD" in methods:
            kw["eta"] = tune_eta(sp, yq)
        return Tuned(**kw)


def predictor(tuned: Tuned, noise: Noise | str, methods=NAMES, nodes: int = bayes.DEFAULT_NODES):
    """``predict(batch, spectra) -> {name: ŷ (B,)}`` for :func:`numerics.baselines.scoring.evaluate` and
    :func:`numerics.evaluate.profile`."""
    q = bayes.quadrature(noise, nodes)
    mean_sigma2 = Noise.parse(noise).mean_sigma2
    s_nodes, log_w = jnp.asarray(q.s), jnp.asarray(q.log_w)

    def predict(batch, sp: Spectral) -> dict[str, jax.Array]:
        rules = {
            "OLS": lambda: ridge_predict(sp, 0.0),
            "ConstRR": lambda: ridge_predict(sp, tuned.lam_const),
            FLOOR: lambda: ridge_predict(sp, mean_sigma2),
            "AdaRR": lambda: ridge_predict(sp, sigma2_hat(sp)),
            "TunedRR": lambda: ridge_predict(
                sp, tuned.mult * jnp.minimum(sigma2_hat(sp), tuned.cap)
            ),
            "GD": lambda: tuned.eta * gd_direction(sp),
            "Bayes": lambda: bayes.predict_spectral(sp, s_nodes, log_w),
            "Oracle": lambda: ridge_predict(sp, batch.sigma**2),
        }
        return {m: rules[m]() for m in methods}

    return predict


def check_methods(methods, n: int, d: int) -> tuple[str, ...]:
    """Validate method names; OLS-based baselines need ``n > d``."""
    methods = tuple(methods)
    bad = [m for m in methods if m not in NAMES]
    if bad or not methods:
        got = ", ".join(repr(m) if m else "an empty name" for m in bad) or "none"
        raise ValueError(f"methods must be a non-empty subset of {', '.join(NAMES)}; got {got}")
    twice = sorted({m for m in methods if methods.count(m) > 1})
    if twice:
        raise ValueError(
            f"methods must name each baseline once; got {', '.join(twice)} more than once"
        )
    for m in methods:
        if m in OLS_BASED:
            check_ols(n, d, m)
    return methods


def table(
    noise: Noise | str,
    n: int = 20,
    d: int = 10,
    sequences: int = 100_000,
    seed: int = 0,
    tune_sequences: int = TUNE_SEQUENCES,
    methods=NAMES,
    nodes: int = bayes.DEFAULT_NODES,
    chunk: int | None = None,
) -> dict[str, dict]:
    """Adjusted loss of every baseline on ``sequences`` evaluation sequences (float64, chunked).

    Returns ``{name: {"loss", "se", "raw", "raw_se", "count", ...tuned parameters}}``; ``loss`` is
    the mean of ``½(y_t−ŷ)² − ½(y_t−ŷ_oracle)²`` and ``se`` its paired standard error; with Bayes
    among the methods also ``minus_Bayes`` ± ``minus_Bayes_se`` (paired ``ℓ_m − ℓ_Bayes``). The tuning set
    uses ``split(PRNGKey(seed))[0]``, the evaluation set ``[1]``.
    """
    chunk = scoring.CHUNK if chunk is None else chunk
    noise = Noise.parse(noise)
    methods = check_methods(methods, n, d)
    check_s(noise.values, "noise sigma")
    if int(tune_sequences) < 2:
        raise ValueError(f"tune_sequences must be >= 2, got {tune_sequences}")
    k_tune, k_eval = jax.random.split(jax.random.PRNGKey(int(seed)))
    tuned = tune(k_tune, noise, tune_sequences, n, d, methods, chunk)
    with jax.enable_x64(True):
        res = scoring.evaluate(
            predictor(tuned, noise, methods, nodes),
            noise,
            sequences,
            n,
            d,
            k_eval,
            chunk,
            against="Bayes" if "Bayes" in methods else None,
        )
    params = {
        "ConstRR": {"lam_const": tuned.lam_const},
        FLOOR: {"lam": noise.mean_sigma2},
        "TunedRR": {"cap": tuned.cap, "mult": tuned.mult},
        "GD": {"eta": tuned.eta},
        "Bayes": {"nodes": len(bayes.quadrature(noise, nodes).s)},
    }
    return {m: res[m] | params.get(m, {}) for m in methods}


def tuned_as_dict(tuned: Tuned) -> dict[str, float]:
    """Plain dict of the tuned parameters (for JSON)."""
    return asdict(tuned)
