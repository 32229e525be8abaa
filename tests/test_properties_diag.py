r"""DIAG and GD++ models against the derived diagonal form and Lemma 4.4.

Parameter sources: random (scaled) DIAG models here; trained models in ``tests/test_trained.py``.
The checks themselves are shared through :func:`omega_form_tokens` and :func:`lemma44_residual`.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from lintf_theory import alpha_l_rule, layer_omegas, lemma44_rule, run_recursion
from lintf_theory._diagonal import diagonal_rule
from numerics import models
from proofs._exact import state_matrix
from tests.model_helpers import RTOL64, max_rel_err, scaled_model
from tests.strategies import ModelConfig, config_batch, model_configs, property_settings


def omega_form_tokens(diag: models.Diag, X: np.ndarray, y: np.ndarray, xq: np.ndarray) -> np.ndarray:
    r"""Tokens after every layer by the derived ω-form rule (bridge ``diagonal_rule``), one sequence.

    ``x' = x + ω_xx Σ^l x + ω_xy y α^l``, ``y' = y + ω_yx ⟨α^l, x⟩ + ω_yy λ^l y`` with ``ω`` from
    :func:`lintf_theory.layer_omegas`; returns ``(L+1, n+1, d+1)``.
    """
    f = diagonal_rule().numpy
    n, d = X.shape
    Z = np.concatenate([np.c_[X, y], np.r_[xq, 0.0][None]], axis=0)
    out = [Z]
    for l in range(np.shape(diag.px)[0]):
        om = layer_omegas(*(np.asarray(p[l], dtype=np.float64) for p in diag))
        Cx, Cy = Z[:n, :d], Z[:n, d]
        Sigma, alpha, lam = Cx.T @ Cx, (Cx.T @ Cy)[:, None], np.array([[Cy @ Cy]])
        rows = []
        for e in Z:
            xn, yn = f(Sigma, alpha, lam, *om, e[:d, None], np.array([[e[d]]]))
            rows.append(np.r_[np.ravel(xn), np.ravel(yn)])
        Z = np.stack(rows)
        out.append(Z)
    return np.stack(out)


def lemma44_residual(P: Any, Q: Any, diag: models.Diag, X: np.ndarray, y: np.ndarray) -> float:
    r"""Largest relative mismatch of ``u^{l+1}, w^{l+1}`` in the Lemma 4.4 form (bridge ``lemma44_rule``)
    against the derived recursion (bridge ``run_recursion``), over all layers of one sequence."""
    P, Q = np.asarray(P, dtype=np.float64), np.asarray(Q, dtype=np.float64)
    S = X.T @ X
    w_star = np.linalg.solve(S, X.T @ y)[:, None]
    rho = float(np.sum((y - X @ w_star[:, 0]) ** 2))
    states = run_recursion(P, Q, X, y, backend="numpy")
    f, fa = lemma44_rule().numpy, alpha_l_rule().numpy
    worst = 0.0
    for l in range(P.shape[0]):
        st_, nxt = states[l], states[l + 1]
        M_, u_, a_, w_ = st_.M, st_.u[:, None], float(st_.a), st_.w[:, None]
        Zl = np.c_[X, y] @ state_matrix(st_.M, st_.u, st_.a, st_.w).T  # layer-l context tokens (Theorem 4.1 form)
        Xl, yl = Zl[:, :-1], Zl[:, -1]
        om = layer_omegas(*(np.asarray(p[l], dtype=np.float64) for p in diag))
        g = S @ (a_ * w_star - w_)
        alpha_l = np.ravel(fa(M_, u_, a_, w_, w_star, rho, S))
        Lu, Gam, s, Pi, Phi = f(M_, u_, a_, w_star, rho, Xl.T @ Xl, yl @ yl, *om)
        u_next = np.ravel(u_ - Lu + Gam @ g)
        w_next = np.ravel((1 + s) * w_ - Pi @ g - Phi @ u_)
        worst = max(worst, max_rel_err(alpha_l, Xl.T @ yl), max_rel_err(u_next, nxt.u), max_rel_err(w_next, nxt.w))
    return worst


def _diag_params(cfg: ModelConfig, b: Any) -> tuple[Any, Any, models.Diag]:
    P, Q = scaled_model("diag", cfg.seed, cfg.L, cfg.H, b)
    return P, Q, models.diag_from_universal(P, Q)


@property_settings()
@given(model_configs(kinds=("diag",), max_L=4))
def test_diag_model_equals_its_omega_form_and_its_universal_form(cfg: ModelConfig) -> None:
    b = config_batch(cfg, batch=1)
    P, Q, diag = _diag_params(cfg, b)
    Z = models.forward_tokens(P, Q, b.X, b.y, b.x_query)[:, 0]  # universal P/Q run as FULL
    Zw = omega_form_tokens(diag, *(np.asarray(v[0]) for v in (b.X, b.y, b.x_query)))
    assert max_rel_err(Zw, Z) < RTOL64


@given(st.lists(st.floats(-3, 3), min_size=4, max_size=4), st.lists(st.floats(-3, 3), min_size=4, max_size=4))
def test_one_head_constraint_holds_and_two_heads_break_it(h1: list[float], h2: list[float]) -> None:
    wxx, wxy, wyx, wyy = layer_omegas(*([v] for v in h1))
    assert abs(wxx * wyy - wxy * wyx) <= 1e-12 * max(1.0, abs(wxx * wyy))
    two = layer_omegas(*([a, b] for a, b in zip(h1, h2, strict=True)))
    # for two heads the defect is exactly the 2x2 minor (p_x1 p_y2 - p_x2 p_y1)(q_x1 q_y2 - q_x2 q_y1)
    minor = (h1[0] * h2[1] - h2[0] * h1[1]) * (h1[2] * h2[3] - h2[2] * h1[3])
    assert abs((two[0] * two[3] - two[1] * two[2]) - minor) <= 1e-9 * max(1.0, abs(minor))


@property_settings()
@given(model_configs(kinds=("diag",), max_L=4))
def test_lemma_4_4_form_matches_the_forward_pass_on_random_diag_models(cfg: ModelConfig) -> None:
    assume(cfg.n > cfg.d and cfg.degeneracy in ("none", "zero_targets"))  # w* needs Σ invertible
    b = config_batch(cfg, batch=1)
    P, Q, diag = _diag_params(cfg, b)
    X, y = np.asarray(b.X[0]), np.asarray(b.y[0])
    assume(np.linalg.cond(X.T @ X) < 1e6)
    assert lemma44_residual(P, Q, diag, X, y) < 1e-8  # cond(Σ) <= 1e6 times RTOL64-level rounding


def test_gdpp_conversion_keeps_omega_xy_and_omega_yy_zero() -> None:
    gd = models.Gdpp(jnp.asarray([-0.1, 0.05]), jnp.asarray([-0.2, -0.3]))
    P, Q = models.universal(gd, 3)
    _, wxy, _, wyy = models.omegas(models.diag_from_universal(P, Q))
    assert float(jnp.max(jnp.abs(wxy))) == 0.0 and float(jnp.max(jnp.abs(wyy))) == 0.0
