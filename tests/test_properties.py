r"""Layer-by-layer properties of random, constructed and trained transformers.

Each property compares the model's literal forward pass (:func:`numerics.models.forward_tokens`)
or its fast Gram-form pass (:func:`numerics.models.predict`) with the rules derived in
:mod:`lintf_theory` and exported through the bridge.  The Theorem 4.1 properties (token form, query
isolation, implicit weight, permutation invariance) are the public checks of :mod:`numerics.evaluate.testing`,
the ones users run on their own implementations.  The ``assert_*`` functions are shared with
``tests/test_trained.py``; tolerances live in :mod:`tests.model_helpers` (``RTOL64``), with their
justification.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics import models
from numerics.evaluate import inspector
from numerics.evaluate import testing
from numerics.data import Batch
from tests.model_helpers import RTOL64, max_rel_err, scaled_model, toy_batch
from tests.strategies import ModelConfig, config_batch, model_configs, property_settings


# 1-3. Theorem 4.1 through numerics.evaluate.testing, on both of lintf's forward passes ----------------------
def lintf_forwards(P: Any, Q: Any) -> dict[str, Any]:
    """``models.forward_tokens`` (every layer's tokens) and ``models.predict`` as ``forward(X, y, x_query)``."""
    return {"tokens": lambda X, y, q: models.forward_tokens(P, Q, X, y, q),
            "predict": lambda X, y, q: models.predict(P, Q, X, y, q)}


def _arrays(P: Any, Q: Any, b: Batch) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(v, np.float64) for v in (P, Q, b.X, b.y, b.x_query))


def assert_token_form(P: Any, Q: Any, b: Batch) -> None:
    """Every token at every layer equals ``T^l e_i`` with ``T^l`` from the derived recursion."""
    testing.check_token_form(lintf_forwards(P, Q)["tokens"], *_arrays(P, Q, b), rtol=RTOL64)


def assert_query_isolation(P: Any, Q: Any, b: Batch, seed: int, s: float, t: float) -> None:
    """Context tokens ignore ``x_t``; ``ŷ`` is linear in ``x_t``, equals ``⟨w^L, x_t⟩``, and autodiff gives ``w^L``."""
    for name, forward in lintf_forwards(P, Q).items():
        testing.check_query_isolation(forward, *_arrays(P, Q, b), rtol=RTOL64, seed=seed, s=s, t=t)
        testing.check_implicit_weight(forward, *_arrays(P, Q, b), rtol=RTOL64, differentiate="jax")
    w = inspector.implicit_states(P, Q, b.X, b.y, backend="numpy").w  # (L+1, B, d): every layer, not only L
    assert max_rel_err(inspector.autodiff_weights(P, Q, b.X, b.y, b.x_query), w) < RTOL64


# 3. Invariance -----------------------------------------------------------------------------------
def assert_permutation_invariance(P: Any, Q: Any, b: Batch, seed: int) -> None:
    testing.check_permutation_invariance(lintf_forwards(P, Q)["predict"], *_arrays(P, Q, b), rtol=RTOL64, seed=seed)
    perm = np.random.default_rng(seed).permutation(b.X.shape[1])
    y1 = models.predict(P, Q, b.X, b.y, b.x_query, all_layers=True)
    y2 = models.predict(P, Q, b.X[:, perm], b.y[:, perm], b.x_query, all_layers=True)
    assert max_rel_err(y2, y1) < RTOL64
    s1 = inspector.implicit_states(P, Q, b.X, b.y, backend="numpy")
    s2 = inspector.implicit_states(P, Q, b.X[:, perm], b.y[:, perm], backend="numpy")
    for f in ("M", "u", "a", "w"):
        assert max_rel_err(getattr(s2, f), getattr(s1, f)) < RTOL64


def rotation_change(P: Any, Q: Any, b: Batch, seed: int) -> float:
    """Relative change of ``ŷ`` when every ``x`` (context and query) is rotated by one orthogonal matrix."""
    d = b.X.shape[-1]
    R, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    R = jnp.asarray(R)
    return max_rel_err(models.predict(P, Q, b.X @ R.T, b.y, b.x_query @ R.T),
                       models.predict(P, Q, b.X, b.y, b.x_query))


# 7. Layer-wise read-outs -------------------------------------------------------------------------
def assert_readouts(P: Any, Q: Any, b: Batch) -> None:
    """Loss of the read-out after each layer from token states = loss of ``⟨w^l, x_t⟩`` from the recursion."""
    reads = -models.forward_tokens(P, Q, b.X, b.y, b.x_query)[:, :, -1, -1]  # (L+1, B)
    w = inspector.implicit_states(P, Q, b.X, b.y, backend="numpy").w
    loss_tokens = 0.5 * jnp.mean((b.y_query - reads) ** 2, axis=-1)
    loss_weights = 0.5 * jnp.mean((b.y_query - jnp.einsum("lbd,bd->lb", w, b.x_query)) ** 2, axis=-1)
    assert max_rel_err(loss_tokens, loss_weights) < RTOL64
    assert max_rel_err(models.predict(P, Q, b.X, b.y, b.x_query, all_layers=True), reads) < RTOL64


def random_model(cfg: ModelConfig, batch: Batch) -> tuple[Any, Any]:
    return scaled_model(cfg.kind, cfg.seed, cfg.L, cfg.H, batch)


@property_settings()
@given(model_configs())
def test_every_token_has_the_theorem_4_1_form_with_the_derived_tuple(cfg: ModelConfig) -> None:
    b = config_batch(cfg)
    assert_token_form(*random_model(cfg, b), b)


@property_settings()
@given(model_configs(), st.floats(-3, 3), st.floats(-3, 3))
def test_query_never_reaches_the_context_and_prediction_is_linear_in_it(cfg: ModelConfig, s: float, t: float) -> None:
    b = config_batch(cfg)
    assert_query_isolation(*random_model(cfg, b), b, cfg.seed, s, t)


@property_settings()
@given(model_configs())
def test_permuting_the_context_changes_nothing(cfg: ModelConfig) -> None:
    b = config_batch(cfg)
    assert_permutation_invariance(*random_model(cfg, b), b, cfg.seed)


@property_settings()
@given(model_configs(kinds=("diag", "gdpp")))
def test_diag_and_gdpp_are_rotation_invariant(cfg: ModelConfig) -> None:
    b = config_batch(cfg)
    assert rotation_change(*random_model(cfg, b), b, cfg.seed) < RTOL64


def test_full_is_not_rotation_invariant_in_general() -> None:
    b = toy_batch(3, n=6, d=3)
    change = rotation_change(*scaled_model("full", 3, 2, 1, b), b, 3)
    assert change > 1e-2, f"FULL prediction changed by only {change:.2e} under a rotation"


@property_settings()
@given(model_configs())
def test_readout_loss_from_tokens_equals_loss_of_implicit_weights(cfg: ModelConfig) -> None:
    b = config_batch(cfg)
    assert_readouts(*random_model(cfg, b), b)


@pytest.mark.slow
@given(model_configs(max_L=12, max_d=10, max_n=30), st.floats(-3, 3), st.floats(-3, 3))
def test_larger_models_slow(cfg: ModelConfig, s: float, t: float) -> None:
    """The paper's sizes and beyond (d ≤ 10, n ≤ 30, L ≤ 12), larger batches."""
    b = config_batch(cfg, batch=16)
    P, Q = random_model(cfg, b)
    assert_token_form(P, Q, b)
    assert_query_isolation(P, Q, b, cfg.seed, s, t)
    assert_permutation_invariance(P, Q, b, cfg.seed)
    assert_readouts(P, Q, b)
