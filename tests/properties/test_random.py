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

import dataclasses
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.data import Batch
from tests.strategies import (
    RTOL64,
    TRAINED_D,
    TRAINED_N,
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


#: ``(d, n, L, H)`` of the default run's models and contexts, four sequences each: the trained
#: models' sizes (``tests/properties/test_trained.py``; Hypothesis's first example); one input,
#: token, layer and head; fewer tokens than inputs, two heads, five layers; the largest of
#: ``model_configs`` (five inputs, ten tokens, seven layers, three heads).  Most of an example's
#: time is compiling the operations of the passes and checks for its shapes; drawn from these four
#: (the kind, the data, the degeneracy and the seed as ``model_configs`` draws them), examples meet
#: shapes met before, here or in the trained models' tests, and reuse their programs.  The slow
#: profile draws every size.
SIZES = ((TRAINED_D, TRAINED_N, 3, 1), (1, 1, 1, 1), (4, 2, 5, 2), (5, 10, 7, 3))
BATCH = 4  # sequences per batch, as the trained models' tests draw


@st.composite
def configs(draw: st.DrawFn) -> ModelConfig:
    cfg = draw(model_configs())
    if os.environ.get("HYPOTHESIS_PROFILE") == "slow":
        return cfg
    d, n, L, H = draw(st.sampled_from(SIZES))
    return dataclasses.replace(cfg, d=d, n=n, L=L, H=1 if cfg.kind == "gdpp" else H)


# Token form, permutation invariance and the read-outs run the same passes (``forward_tokens``,
# ``predict``, the derived recursion) on the same model and batch, so one test checks all three on
# each drawn config: every check still sees ``property_settings``' count of drawn configs per run,
# and each config's programs are compiled once instead of three times.  Rotation invariance (DIAG
# and GD++) is checked on the same sizes and batch: on the drawn model where it is DIAG or GD++,
# else on a GD++ (one head) or DIAG model of the drawn FULL model's sizes, whose universal
# ``P, Q`` have FULL's shapes ``(L, H, d+1, d+1)``: the ``predict`` programs the checks above
# compiled.
@property_settings()
@given(configs())
def test_every_token_has_the_theorem_4_1_form_permutation_invariance_readouts_and_rotations(
    cfg: ModelConfig,
) -> None:
    b = config_batch(cfg, batch=BATCH)
    P, Q = random_model(cfg, b)
    assert_token_form(P, Q, b)
    assert_permutation_invariance(P, Q, b, cfg.seed)
    assert_readouts(P, Q, b)
    invariant = P, Q
    if cfg.kind == "full":
        kind = "gdpp" if cfg.H == 1 else "diag"
        invariant = random_model(dataclasses.replace(cfg, kind=kind), b)
    assert rotation_change(*invariant, b, cfg.seed) < RTOL64


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
