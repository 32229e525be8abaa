r"""Layer-by-layer properties of random, constructed and trained transformers (issue 5).

Each property compares the model's literal forward pass (:func:`numerics.models.forward_tokens`)
or its fast Gram-form pass (:func:`numerics.models.predict`) with the rules derived in
:mod:`lintf_theory` and exported through the bridge.  Tolerances live in
:mod:`tests.model_helpers` (``RTOL64``), with their justification.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics import inspector, models
from tests.model_helpers import RTOL64, max_rel_err, scaled_model, toy_batch
from tests.strategies import ModelConfig, config_batch, model_configs, property_settings


def random_model(cfg: ModelConfig, batch):  # noqa: ANN001, ANN201
    return scaled_model(cfg.kind, cfg.seed, cfg.L, cfg.H, batch)


# 1. Token form (Theorem 4.1) -----------------------------------------------------------------
@property_settings()
@given(model_configs())
def test_every_token_has_the_theorem_4_1_form_with_the_derived_tuple(cfg: ModelConfig) -> None:
    b = config_batch(cfg)
    P, Q = random_model(cfg, b)
    Z = models.forward_tokens(P, Q, b.X, b.y, b.x_query)  # (L+1, B, n+1, d+1)
    T = inspector.transfer_matrices(inspector.implicit_states(P, Q, b.X, b.y, backend="numpy"))
    for l in range(cfg.L + 1):
        predicted = jnp.einsum("bij,bnj->bni", T[l], Z[0])  # T^l applied to the original tokens
        assert max_rel_err(Z[l], predicted) < RTOL64, f"layer {l}"


# 2. Query isolation ------------------------------------------------------------------------------
@property_settings()
@given(model_configs(), st.floats(-3, 3), st.floats(-3, 3))
def test_query_never_reaches_the_context_and_prediction_is_linear_in_it(cfg: ModelConfig, s: float, t: float) -> None:
    b = config_batch(cfg)
    P, Q = random_model(cfg, b)
    rng = np.random.default_rng(cfg.seed + 1)
    q1, q2 = (jnp.asarray(rng.standard_normal(b.x_query.shape)) for _ in range(2))
    Z1 = models.forward_tokens(P, Q, b.X, b.y, q1)
    Z2 = models.forward_tokens(P, Q, b.X, b.y, q2)
    assert jnp.array_equal(Z1[:, :, :-1], Z2[:, :, :-1]), "a context token depends on the query"
    f = lambda q: models.predict(P, Q, b.X, b.y, q)  # noqa: E731
    assert max_rel_err(f(s * q1 + t * q2), s * f(q1) + t * f(q2)) < RTOL64
    w = inspector.implicit_states(P, Q, b.X, b.y, backend="numpy").w  # (L+1, B, d)
    assert max_rel_err(f(q1), jnp.einsum("bd,bd->b", w[-1], q1)) < RTOL64
    assert max_rel_err(inspector.autodiff_weights(P, Q, b.X, b.y, q1), w) < RTOL64


# 3. Invariance -----------------------------------------------------------------------------------
@property_settings()
@given(model_configs())
def test_permuting_the_context_changes_nothing(cfg: ModelConfig) -> None:
    b = config_batch(cfg)
    P, Q = random_model(cfg, b)
    perm = np.random.default_rng(cfg.seed).permutation(cfg.n)
    y1 = models.predict(P, Q, b.X, b.y, b.x_query, all_layers=True)
    y2 = models.predict(P, Q, b.X[:, perm], b.y[:, perm], b.x_query, all_layers=True)
    assert max_rel_err(y2, y1) < RTOL64
    s1 = inspector.implicit_states(P, Q, b.X, b.y, backend="numpy")
    s2 = inspector.implicit_states(P, Q, b.X[:, perm], b.y[:, perm], backend="numpy")
    for f in ("M", "u", "a", "w"):
        assert max_rel_err(getattr(s2, f), getattr(s1, f)) < RTOL64


def _rotated(b, seed: int):  # noqa: ANN001, ANN202
    d = b.X.shape[-1]
    R, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    R = jnp.asarray(R)
    return b.X @ R.T, b.x_query @ R.T


@property_settings()
@given(model_configs(kinds=("diag", "gdpp")))
def test_diag_and_gdpp_are_rotation_invariant(cfg: ModelConfig) -> None:
    b = config_batch(cfg)
    P, Q = random_model(cfg, b)
    Xr, qr = _rotated(b, cfg.seed)
    assert max_rel_err(models.predict(P, Q, Xr, b.y, qr), models.predict(P, Q, b.X, b.y, b.x_query)) < RTOL64


def test_full_is_not_rotation_invariant_in_general() -> None:
    b = toy_batch(3, n=6, d=3)
    P, Q = scaled_model("full", 3, 2, 1, b)
    Xr, qr = _rotated(b, 3)
    change = max_rel_err(models.predict(P, Q, Xr, b.y, qr), models.predict(P, Q, b.X, b.y, b.x_query))
    assert change > 1e-2, f"FULL prediction changed by only {change:.2e} under a rotation"


# 7. Layer-wise read-outs -------------------------------------------------------------------------
@property_settings()
@given(model_configs())
def test_readout_loss_from_tokens_equals_loss_of_implicit_weights(cfg: ModelConfig) -> None:
    b = config_batch(cfg)
    P, Q = random_model(cfg, b)
    reads = -models.forward_tokens(P, Q, b.X, b.y, b.x_query)[:, :, -1, -1]  # (L+1, B)
    w = inspector.implicit_states(P, Q, b.X, b.y, backend="numpy").w
    loss_tokens = 0.5 * jnp.mean((b.y_query - reads) ** 2, axis=-1)
    loss_weights = 0.5 * jnp.mean((b.y_query - jnp.einsum("lbd,bd->lb", w, b.x_query)) ** 2, axis=-1)
    assert max_rel_err(loss_tokens, loss_weights) < RTOL64
    assert max_rel_err(models.predict(P, Q, b.X, b.y, b.x_query, all_layers=True), reads) < RTOL64


@pytest.mark.slow
@property_settings()
@given(model_configs())
def test_token_form_slow_profile_larger_batches(cfg: ModelConfig) -> None:
    b = config_batch(cfg, batch=16)
    P, Q = random_model(cfg, b)
    Z = models.forward_tokens(P, Q, b.X, b.y, b.x_query)
    T = inspector.transfer_matrices(inspector.implicit_states(P, Q, b.X, b.y))
    assert max_rel_err(Z, jnp.einsum("lbij,bnj->lbni", T, Z[0])) < RTOL64
