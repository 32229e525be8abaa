r"""Layer-by-layer properties of random, constructed and trained transformers.

Each property compares the model's literal forward pass (:func:`numerics.models.forward_tokens`)
or its fast Gram-form pass (:func:`numerics.models.predict`) with the rules derived in
:mod:`lintf_theory` and exported through the bridge.  The Theorem 4.1 properties (token form, query
isolation, implicit weight, permutation invariance) are the public checks of :mod:`numerics.testing`,
the ones users run on their own implementations.  The checks themselves live in
:mod:`tests.strategies.checks`, shared with ``tests/properties/test_trained.py``, with the tolerance ``RTOL64`` and
its justification.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.data import Batch
from tests.strategies import (
    RTOL64,
    ModelConfig,
    assert_permutation_invariance,
    assert_query_isolation,
    assert_readouts,
    assert_token_form,
    config_batch,
    model_configs,
    property_settings,
    rotation_change,
    scaled_model,
    toy_batch,
)


def random_model(cfg: ModelConfig, batch: Batch) -> tuple[Any, Any]:
    return scaled_model(cfg.kind, cfg.seed, cfg.L, cfg.H, batch)


# Token form, permutation invariance and the read-outs run the same passes (``forward_tokens``,
# ``predict``, the derived recursion) on the same model and batch, so one test checks all three on
# each drawn config: every check still sees ``property_settings``' count of drawn configs per run,
# and each config's programs are compiled once instead of three times.
@property_settings()
@given(model_configs())
def test_every_token_has_the_theorem_4_1_form_permutation_invariance_and_readouts(
    cfg: ModelConfig,
) -> None:
    b = config_batch(cfg)
    P, Q = random_model(cfg, b)
    assert_token_form(P, Q, b)
    assert_permutation_invariance(P, Q, b, cfg.seed)
    assert_readouts(P, Q, b)


# A long property run (half a minute): behind `slow`.  The default run checks the same property on the trained models
# of every kind (tests/properties/test_trained.py) and, with the other three properties, on a random model's passes
# (tests/testing/test_theorem.py).
@pytest.mark.slow
@property_settings()
@given(model_configs(), st.floats(-3, 3), st.floats(-3, 3))
def test_query_never_reaches_the_context_and_prediction_is_linear_in_it(
    cfg: ModelConfig, s: float, t: float
) -> None:
    b = config_batch(cfg)
    assert_query_isolation(*random_model(cfg, b), b, cfg.seed, s, t)


@property_settings()
@given(model_configs(kinds=("diag", "gdpp")))
def test_diag_and_gdpp_are_rotation_invariant(cfg: ModelConfig) -> None:
    b = config_batch(cfg)
    assert rotation_change(*random_model(cfg, b), b, cfg.seed) < RTOL64


def test_full_is_not_rotation_invariant_in_general() -> None:
    b = toy_batch(3, n=6, d=3)
    change = rotation_change(*scaled_model("full", 3, 2, 1, b), b, 3)
    assert change > 1e-2, f"FULL prediction changed by only {change:.2e} under a rotation"


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
