r"""Theorem 4.2 numerically: cosine between the layer-``l`` targets and ``x(1)²``, and the projection bound.

For noiseless data ``y_i = ⟨w_τ, x_i⟩`` the derived identity ``y^l = X v^l`` (:mod:`lintf_theory._no_quadratics`)
gives ``|cos(y^l, q)| ≤ ‖P_X q‖/‖q‖`` with ``q = (x_1(1)², …, x_n(1)²)``.  Here the cosine is measured on
the literal forward pass (:func:`numerics.models.forward_tokens`), independently of the derivation.

============  ====================================================
name          shape / meaning
============  ====================================================
``X``         ``(B, n, d)`` context inputs
``y``         ``(B, n)`` noiseless targets ``X w_τ``
``q``         ``(B, n)`` the quadratic feature ``x_i(1)²``
``cos``       ``(L+1, B)`` ``|cos(y^l, q)|`` for ``l = 0..L``
``bound``     ``(B,)`` ``‖P_X q‖/‖q‖``
============  ====================================================
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from numerics.models.forward import forward_tokens
from numerics.models.kinds import init, universal


def quadratic_feature(X: np.ndarray, coord: int = 0) -> np.ndarray:
    """``q_i = x_i(coord)²`` for ``X (B, n, d)``; ``coord`` must index a coordinate."""
    if not 0 <= int(coord) < X.shape[-1]:
        raise ValueError(f"coord must be in [0, {X.shape[-1] - 1}], got {coord}")
    return X[..., int(coord)] ** 2


def abs_cosine(Y: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``|⟨Y, q⟩|/(‖Y‖‖q‖)`` along the last axis (broadcasts)."""
    return np.abs(np.sum(Y * q, -1)) / (np.linalg.norm(Y, axis=-1) * np.linalg.norm(q, axis=-1))


def projection_bound(X: np.ndarray, q: np.ndarray) -> np.ndarray:
    r"""``‖P_X q‖/‖q‖`` per sequence via a thin QR of ``X`` (``1`` when ``n ≤ d`` and ``X`` has full rank)."""
    Qx, _ = np.linalg.qr(X)
    return np.linalg.norm(np.einsum("bnk,bn->bk", Qx, q), axis=-1) / np.linalg.norm(q, axis=-1)


def layer_targets(P: Any, Q: Any, X: np.ndarray, y: np.ndarray, x_query: np.ndarray) -> np.ndarray:
    """Context targets ``y^l`` of every layer from the literal forward pass (float64): ``(L+1, B, n)``."""
    n = X.shape[-2]
    with jax.enable_x64(True):  # one XLA program per shape instead of one per operation
        Z = jax.jit(forward_tokens)(
            np.asarray(P, np.float64), np.asarray(Q, np.float64), X, y, x_query
        )
        return np.asarray(Z[:, :, :n, -1])


class CosineSample(NamedTuple):
    cos: np.ndarray  # (models, L+1, B): |cos(y^l, q)|
    bound: np.ndarray  # (models, B): ‖P_X q‖/‖q‖


def random_full_cosines(
    seed: int, n: int, d: int, layers: int, models: int, seqs: int
) -> CosineSample:
    r"""Random FULL models (``numerics.models.init``, entries of std ``(n(d+1))^{-1/2}`` so ``G = P E Q`` is
    ``O(1)``) on fresh noiseless sequences ``x_i, w_τ ~ N(0, I)``; deterministic in ``seed``."""
    for name, v, lo in (
        ("n", n, 1),
        ("d", d, 1),
        ("layers", layers, 1),
        ("models", models, 1),
        ("seqs", seqs, 1),
    ):
        if int(v) < lo:
            raise ValueError(f"{name} must be >= {lo}, got {v}")
    rng = np.random.default_rng(seed)
    with jax.enable_x64(True):  # one init call: models·layers layers, split into ``models`` models
        P_all, Q_all = universal(
            init(
                "full",
                jax.random.PRNGKey(seed),
                models * layers,
                d,
                scale=float((n * (d + 1)) ** -0.5),
                dtype=np.float64,
            ),
            d,
        )
    P_all, Q_all = (np.asarray(t).reshape(models, layers, *t.shape[1:]) for t in (P_all, Q_all))
    cos, bound = [], []
    for P, Q in zip(P_all, Q_all, strict=True):
        X = rng.standard_normal((seqs, n, d))
        y = np.einsum("bnd,bd->bn", X, rng.standard_normal((seqs, d)))
        xq = rng.standard_normal((seqs, d))
        q = quadratic_feature(X)
        cos.append(abs_cosine(layer_targets(P, Q, X, y, xq), q))
        bound.append(projection_bound(X, q))
    return CosineSample(np.stack(cos), np.stack(bound))


def limit_tail(t: float, n: int, d: int, weights: tuple[float, float]) -> float:
    r"""Asymptotic ``P(‖P_X q‖/‖q‖ > t) = P(w_1 χ²_1 + w_2 χ²_{d-1} > n t²)`` (weights from the derivation).

    With ``χ²_1 = U²``, ``U ~ N(0, 1)``: ``P = 2 ∫_0^{r} φ(u) S_{d-1}((s - w_1 u²)/w_2) du + 2 (1 - Φ(r))``,
    ``s = n t²``, ``r = √(s/w_1)``, ``S`` the χ² survival function; a smooth integrand, so 200-node
    Gauss–Legendre is exact to ~1e-12 (checked against ``scipy.integrate.quad`` in the tests).
    """
    # χ²_k survival = Q(k/2, x/2); scipy.special (lighter than scipy.stats) would cost importing
    # numerics.models 0.4 s
    from scipy.special import erfc, gammaincc  # lazy: start-up

    if int(d) < 1 or int(n) < 1 or not t > 0:
        raise ValueError(f"need n >= 1, d >= 1, t > 0; got n={n}, d={d}, t={t}")
    s, (w1, w2) = n * t * t, (float(weights[0]), float(weights[1]))
    r = np.sqrt(s / w1)
    two_sf = float(erfc(r / np.sqrt(2)))  # 2 (1 - Φ(r))
    if d == 1:
        return two_sf
    nodes, wts = np.polynomial.legendre.leggauss(200)
    u = 0.5 * r * (nodes + 1)
    phi = np.exp(-u * u / 2) / np.sqrt(2 * np.pi)
    inner = 0.5 * r * np.sum(wts * 2 * phi * gammaincc((d - 1) / 2, (s - w1 * u * u) / (2 * w2)))
    return float(inner + two_sf)


def n_for_tail(t: float, p: float, d: int, weights: tuple[float, float]) -> int:
    """Smallest ``n`` with :func:`limit_tail` ``< p`` (bisection; the tail decreases in ``n``)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    lo, hi = 1, 2
    while limit_tail(t, hi, d, weights) >= p:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if limit_tail(t, mid, d, weights) >= p else (lo, mid)
    return hi
