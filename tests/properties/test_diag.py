r"""DIAG and GD++ models against the derived diagonal form and Lemma 4.4.

Parameter sources: random (scaled) DIAG models here; trained models in ``tests/properties/test_trained.py``.
The checks themselves live in :mod:`tests.strategies.checks` (``omega_form_tokens``, ``lemma44_residual``).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax.numpy as jnp
import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from lintf_theory import layer_omegas
from numerics import models
from tests.strategies import (
    RTOL64,
    TRAINED_D,
    TRAINED_N,
    ModelConfig,
    config_batch,
    lemma44_residual,
    max_rel_err,
    model_configs,
    omega_form_tokens,
    property_settings,
    scaled_model,
)


def _diag_params(cfg: ModelConfig, b: Any) -> tuple[Any, Any, models.Diag]:
    P, Q = scaled_model("diag", cfg.seed, cfg.L, cfg.H, b)
    return P, Q, models.diag_from_universal(P, Q)


#: ``(d, n, L, H)`` of the default run's DIAG models and contexts, four sequences each (the first
#: one checked): the trained models' sizes (``tests/properties/test_trained.py``; Hypothesis's first
#: example); one input, token, layer and head; fewer tokens than inputs, two heads and layers; the
#: largest of the draw (five inputs, ten tokens, four layers, three heads).  Most of an example's
#: time is compiling its model's conversions and passes and deriving the ω rule of its number of
#: heads; drawn from these four in both tests (the data and the degeneracy as ``model_configs``
#: draws them), examples meet shapes met before, in this test, the other or the trained models'
#: tests, and reuse them.  The slow profile draws every size.
SIZES = ((TRAINED_D, TRAINED_N, 3, 1), (1, 1, 1, 1), (2, 1, 2, 2), (5, 10, 4, 3))
BATCH = 4  # sequences per batch, as the trained models' tests draw


@st.composite
def diag_configs(draw: st.DrawFn) -> ModelConfig:
    cfg = draw(model_configs(kinds=("diag",), max_L=4))
    if os.environ.get("HYPOTHESIS_PROFILE") == "slow":
        return cfg
    d, n, L, H = draw(st.sampled_from(SIZES))
    return dataclasses.replace(cfg, d=d, n=n, L=L, H=H)


@property_settings()
@given(diag_configs())
def test_diag_model_equals_its_omega_form_and_its_universal_form(cfg: ModelConfig) -> None:
    b = config_batch(cfg, batch=BATCH)
    P, Q, diag = _diag_params(cfg, b)
    Z = models.forward_tokens(P, Q, b.X, b.y, b.x_query)[:, 0]  # universal P/Q run as FULL
    Zw = omega_form_tokens(diag, *(np.asarray(v[0]) for v in (b.X, b.y, b.x_query)))
    assert max_rel_err(Zw, Z) < RTOL64


@given(
    st.lists(st.floats(-3, 3), min_size=4, max_size=4),
    st.lists(st.floats(-3, 3), min_size=4, max_size=4),
)
def test_one_head_constraint_holds_and_two_heads_break_it(h1: list[float], h2: list[float]) -> None:
    wxx, wxy, wyx, wyy = layer_omegas(*([v] for v in h1))
    assert abs(wxx * wyy - wxy * wyx) <= 1e-12 * max(1.0, abs(wxx * wyy))
    two = layer_omegas(*([a, b] for a, b in zip(h1, h2, strict=True)))
    # for two heads the defect is exactly the 2x2 minor (p_x1 p_y2 - p_x2 p_y1)(q_x1 q_y2 - q_x2 q_y1)
    minor = (h1[0] * h2[1] - h2[0] * h1[1]) * (h1[2] * h2[3] - h2[2] * h1[3])
    assert abs((two[0] * two[3] - two[1] * two[2]) - minor) <= 1e-9 * max(1.0, abs(minor))


@property_settings()
@given(diag_configs())
def test_lemma_4_4_form_matches_the_forward_pass_on_random_diag_models(cfg: ModelConfig) -> None:
    assume(cfg.n > cfg.d and cfg.degeneracy in ("none", "zero_targets"))  # w* needs Σ invertible
    b = config_batch(cfg, batch=BATCH)
    P, Q, diag = _diag_params(cfg, b)
    X, y = np.asarray(b.X[0]), np.asarray(b.y[0])
    assume(np.linalg.cond(X.T @ X) < 1e6)
    assert lemma44_residual(P, Q, diag, X, y) < 1e-8  # cond(Σ) <= 1e6 times RTOL64-level rounding


def test_gdpp_conversion_keeps_omega_xy_and_omega_yy_zero() -> None:
    gd = models.Gdpp(jnp.asarray([-0.1, 0.05]), jnp.asarray([-0.2, -0.3]))
    P, Q = models.universal(gd, 3)
    _, wxy, _, wyy = models.omegas(models.diag_from_universal(P, Q))
    assert float(jnp.max(jnp.abs(wxy))) == 0.0 and float(jnp.max(jnp.abs(wyy))) == 0.0
