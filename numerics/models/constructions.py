r"""Hand-built linear transformers whose parameters come from the derivations (docs/model.md).

* :func:`gd` -- ``L`` layers of gradient descent with step ``η`` on ``½ Σ_i (⟨w, x_i⟩ - y_i)²`` from
  ``w = 0``: GD++ parameters ``ω_xx = 0``, ``ω_yx = -η`` (the read-out ``ŷ = -y_{n+1}^L`` then equals
  ``⟨w^L, x_t⟩`` of explicit GD; :func:`gd_explicit` is that independent reference).
* :func:`gdpp_second_order` -- Theorem 5.1: ``K`` preconditioning layers with
  ``ω_xx^l = -1/(3 ν_l)`` (Lemma A.3, ``γν = 1/3``), the eigenvalue bounds ``[μ_l, ν_l]`` carried by
  the derived map ``f`` (bridge export), then one GD read-out layer with ``ω_yx = -1/μ_K`` (Lemma A.2).
* :func:`theorem_5_2` -- the two-layer DIAG model of Theorem 5.2 (``ω_yx`` then ``ω_yy``), parameters
  from the symbolic solve in :mod:`lintf_theory._rescaling`.

Reference methods on the same data (numpy, float64): :func:`gd_best_step_errors` (GD with
``η = 2/(μ+ν)``) and :func:`newton_schulz_errors` (``X_{k+1} = X_k (2I - Σ X_k)`` for ``Σ^{-1}``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from lintf_theory import kappa_next_rule, layer_count, run_recursion, theorem_5_2_parameters
from numerics.models.kinds import Diag, Gdpp, universal


def _check_positive(name: str, value: float) -> float:
    v = float(value)
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return v


def gd(eta: float, layers: int) -> Gdpp:
    r"""``layers`` GD steps with step ``η``: ``w^{l+1} = w^l + η (α - Σ w^l)``; as GD++ ``ω_xx = 0, ω_yx = -η``."""
    if int(layers) < 1:
        raise ValueError(f"layers must be >= 1, got {layers}")
    eta = float(eta)
    if not np.isfinite(eta):
        raise ValueError(f"eta must be finite, got {eta}")
    return Gdpp(np.zeros(int(layers)), np.full(int(layers), -eta))


def gd_explicit(X: np.ndarray, y: np.ndarray, eta: float, layers: int) -> np.ndarray:
    r"""Explicit GD iterates ``w^0 = 0, …, w^L`` on one sequence: ``(L+1, d)`` (independent reference)."""
    w = np.zeros(X.shape[-1])
    out = [w]
    for _ in range(int(layers)):
        w = w - eta * X.T @ (X @ w - y)
        out.append(w)
    return np.stack(out)


class Preconditioner(NamedTuple):
    """A Theorem 5.1 model and the eigenvalue bounds ``[μ_l, ν_l]`` it tracks, ``l = 0..K``."""

    params: Gdpp
    mu: np.ndarray
    nu: np.ndarray


def gdpp_second_order(
    mu: float, nu: float, eps: float | None = None, precondition: int | None = None
) -> Preconditioner:
    r"""Theorem 5.1's GD++ model for data whose ``Σ`` has eigenvalues in ``[μ, ν]``.

    Exactly one of ``eps`` (then ``K = l(κ, ε) - 1`` from :func:`lintf_theory.layer_count`) and
    ``precondition`` (``K`` given) must be set.  Layers ``1..K``: ``ω_xx = -1/(3ν_l)``, ``ω_yx = 0``;
    bounds ``μ_{l+1} = f(μ_l)``, ``ν_{l+1} = f(ν_l)`` (``f`` monotone on ``[0, ν_l]``).  Layer ``K+1``:
    ``ω_xx = 0``, ``ω_yx = -1/μ_K``.  Total ``K + 1`` layers.
    """
    mu, nu = _check_positive("mu", mu), _check_positive("nu", nu)
    if mu > nu:
        raise ValueError(f"need mu <= nu, got mu={mu}, nu={nu}")
    if (eps is None) == (precondition is None):
        raise ValueError(
            "set exactly one of eps (target accuracy) and precondition (number of layers K)"
        )
    K = layer_count(nu / mu, float(eps)).total - 1 if eps is not None else int(precondition)  # type: ignore[arg-type]
    if K < 0:
        raise ValueError(f"precondition must be >= 0, got {precondition}")
    f = kappa_next_rule()[1].numpy
    mus, nus, wxx = [mu], [nu], []
    for _ in range(K):
        om = -1.0 / (3.0 * nus[-1])
        wxx.append(om)
        mus.append(float(f(mus[-1], om)))
        nus.append(float(f(nus[-1], om)))
    omega_xx = np.array(wxx + [0.0])
    omega_yx = np.array([0.0] * K + [-1.0 / mus[-1]])
    return Preconditioner(Gdpp(omega_xx, omega_yx), np.array(mus), np.array(nus))


def spectrum_data(
    seed: int, n: int, d: int, mu: float, nu: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""``X (n, d)`` whose ``Σ = XᵀX`` has eigenvalues spread on ``[μ, ν]`` (both end points included),
    a weight ``w* ~ N(0, I)``, and a query ``x_t ~ N(0, I)``; noiseless ``y = X w*`` is ``X @ w``."""
    if int(n) < int(d) or int(d) < 2:
        raise ValueError(f"need n >= d >= 2, got n={n}, d={d}")
    _check_positive("mu", mu), _check_positive("nu", nu)
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, d)))
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    lam = np.geomspace(mu, nu, d)
    X = U @ np.diag(np.sqrt(lam)) @ V.T
    return X, rng.standard_normal(d), rng.standard_normal(d)


def gd_best_step_errors(
    Sigma: np.ndarray, alpha: np.ndarray, w_star: np.ndarray, steps: int
) -> np.ndarray:
    r"""``‖w^k - w*‖/‖w*‖``, ``k = 0..steps``, for GD with the best fixed step ``η = 2/(μ+ν)``."""
    ev = np.linalg.eigvalsh(Sigma)
    eta = 2.0 / (ev[0] + ev[-1])
    w, out = np.zeros_like(alpha), []
    for _ in range(steps + 1):
        out.append(np.linalg.norm(w - w_star) / np.linalg.norm(w_star))
        w = w + eta * (alpha - Sigma @ w)
    return np.array(out)


def newton_schulz_errors(
    Sigma: np.ndarray, alpha: np.ndarray, w_star: np.ndarray, steps: int
) -> np.ndarray:
    r"""``‖X_k α - w*‖/‖w*‖`` for Newton–Schulz ``X_{k+1} = X_k (2I - Σ X_k)``, ``X_0 = 2/(μ+ν) I``."""
    ev = np.linalg.eigvalsh(Sigma)
    Xk = 2.0 / (ev[0] + ev[-1]) * np.eye(Sigma.shape[0])
    out = []
    for _ in range(steps + 1):
        out.append(np.linalg.norm(Xk @ alpha - w_star) / np.linalg.norm(w_star))
        Xk = Xk @ (2 * np.eye(Sigma.shape[0]) - Sigma @ Xk)
    return np.array(out)


def theorem_5_2(sigma1: float, sigma2: float, n: int) -> Diag:
    r"""Two-layer DIAG model of Theorem 5.2: layer 1 ``ω_yx`` only, layer 2 ``ω_yy`` only (single head).

    Layer 1: ``p_y = ω_yx, q_x = 1``; layer 2: ``p_y = ω_yy, q_y = 1``; other entries zero.
    """
    if int(n) < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    s1, s2 = float(sigma1), float(sigma2)
    if not (np.isfinite(s1) and np.isfinite(s2) and s1 >= 0 and s2 >= 0 and s1 != s2):
        raise ValueError(
            f"sigma1, sigma2 must be finite, >= 0 and distinct, got {sigma1}, {sigma2}"
        )
    omega_yx, omega_yy = theorem_5_2_parameters(s1, s2, int(n))
    z = np.zeros((2, 1))
    py = np.array([[omega_yx], [omega_yy]])
    qx = np.array([[1.0], [0.0]])
    qy = np.array([[0.0], [1.0]])
    return Diag(z.copy(), py, qx, qy)


def implicit_weight(
    params: Gdpp | Diag, X: np.ndarray, y: np.ndarray, all_layers: bool = False
) -> np.ndarray:
    r"""The model's implicit weight ``w^L`` (or every ``w^l``, ``(L+1, d)``) on one sequence, float64.

    Computed by the bridge :func:`lintf_theory.run_recursion` (NumPy backend) on the universal
    ``P, Q`` of :func:`numerics.models.universal`; ``ŷ = ⟨w^L, x_t⟩`` (Theorem 4.1).
    """
    X = np.asarray(X, dtype=np.float64)
    arrays = [np.asarray(p, dtype=np.float64) for p in params]
    L = arrays[0].shape[0]
    Lpad = max(128, 1 << max(L - 1, 0).bit_length())  # few shapes: JAX compiles once per d
    padded = [np.concatenate([a, np.zeros((Lpad - L, *a.shape[1:]))]) for a in arrays]
    with jax.enable_x64(True):
        P, Q = (
            np.asarray(m, dtype=np.float64)[:L]
            for m in universal(type(params)(*padded), X.shape[1])
        )
    states = run_recursion(P, Q, X, np.asarray(y, dtype=np.float64), backend="numpy")
    ws = np.stack([st.w for st in states])
    return ws if all_layers else ws[-1]
