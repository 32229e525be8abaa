r"""Trained transformers follow the derived update rules, layer by layer.

The models come from the fixture ``trained`` (``tests/conftest.py``): the committed
``tests/data/trained/{full,diag,gdpp}-3.npz`` and a short DIAG and GD++ training run.  Every model goes
through the same checks as the random ones in ``tests/properties/test_random.py``, on data drawn by Hypothesis
(seed and degeneracy), plus the DIAG-specific ones of ``tests/properties/test_diag.py`` and, for GD++,
the layer written on its two native parameters (:func:`tests.strategies.gdpp_recursion`).

The short training run costs about half a minute of the default run, so its models (``run-*``) are
``slow`` cases of each test; their fast siblings are the same test's ``committed-*`` cases: the same
checks on trained models of the same kinds, read from ``tests/data/trained`` without training.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics import models
from tests.strategies import (
    DEGENERACIES,
    RTOL64,
    TRAINED_D,
    TRAINED_N,
    ModelConfig,
    TrainedModel,
    assert_permutation_invariance,
    assert_query_isolation,
    assert_readouts,
    assert_token_form,
    config_batch,
    gdpp_recursion,
    lemma44_residual,
    max_rel_err,
    omega_form_tokens,
    property_settings,
    rotation_change,
)

NAMES = ["committed-full-3", "committed-diag-3", "committed-gdpp-3", "run-diag-3", "run-gdpp-3"]
DIAGONAL = [n for n in NAMES if "full" not in n]


def _names(*names: str) -> list[Any]:
    """``names`` as indirect parameters of ``model``; the training run's models are ``slow`` (the module's
    docstring: their fast siblings are the committed models of the same kinds)."""
    return [pytest.param(n, marks=pytest.mark.slow) if n.startswith("run-") else n for n in names]


@pytest.fixture(scope="module")
def model(request: pytest.FixtureRequest) -> tuple[str, TrainedModel]:
    """``(name, model)``: a committed model comes from the fixture ``committed``, without starting the
    training run of the fixture ``trained``, which a ``run-*`` model comes from."""
    name = request.param
    models_of = "committed" if name.startswith("committed-") else "trained"
    return name, request.getfixturevalue(models_of)[name]


data_draws = st.tuples(st.integers(0, 2**16), st.sampled_from(DEGENERACIES))


def _batch(seed: int, degeneracy: str) -> Any:
    return config_batch(
        ModelConfig("trained", TRAINED_D, TRAINED_N, 1, 3, seed, degeneracy), batch=4
    )


@pytest.mark.parametrize("model", _names(*NAMES), indirect=True)
@property_settings(default_examples=4)
@given(draw=data_draws, s=st.floats(-3, 3), t=st.floats(-3, 3))
def test_trained_models_follow_token_form_query_isolation_invariance_and_readouts(
    model: tuple[str, TrainedModel], draw: tuple[int, str], s: float, t: float
) -> None:
    name, m = model
    P, Q = m.P, m.Q
    b = _batch(*draw)
    assert_token_form(P, Q, b)
    assert_query_isolation(P, Q, b, draw[0], s, t)
    assert_permutation_invariance(P, Q, b, draw[0])
    assert_readouts(P, Q, b)
    if name in DIAGONAL:
        assert rotation_change(P, Q, b, draw[0]) < RTOL64


@pytest.mark.parametrize("model", _names("committed-gdpp-3", "run-gdpp-3"), indirect=True)
@property_settings(default_examples=4)
@given(draw=data_draws)
def test_trained_gdpp_predicts_like_the_gdpp_layer_on_its_native_parameters(
    model: tuple[str, TrainedModel], draw: tuple[int, str]
) -> None:
    """GD++ written on ``(ω_xx, ω_yx)`` alone, against ``predict`` on ``models.universal`` of them and on the
    universal form the other checks use: a nonzero ``ω_xy`` or ``ω_yy`` in either changes every read-out."""
    m = model[1]
    b = _batch(*draw)
    expected = gdpp_recursion(m.params.omega_xx, m.params.omega_yx, b.X, b.y, b.x_query)
    for P, Q in (models.universal(m.params, TRAINED_D), (m.P, m.Q)):
        assert (
            max_rel_err(models.predict(P, Q, b.X, b.y, b.x_query, all_layers=True), expected)
            < RTOL64
        )


@pytest.mark.parametrize("model", _names("committed-diag-3", "run-diag-3"), indirect=True)
@property_settings(default_examples=4)
@given(draw=data_draws)
def test_trained_diag_omegas_reproduce_predictions_and_lemma_4_4(
    model: tuple[str, TrainedModel], draw: tuple[int, str]
) -> None:
    P, Q = model[1].P, model[1].Q
    diag = models.diag_from_universal(P, Q)  # the extracted per-head p, q
    b = _batch(*draw)
    X, y, xq = (np.asarray(v[0]) for v in (b.X, b.y, b.x_query))
    Zw = omega_form_tokens(diag, X, y, xq)  # the derived ω-form rule, fed with the extracted ω's
    assert (
        max_rel_err(-Zw[-1, -1, -1], models.predict(P, Q, b.X[:1], b.y[:1], b.x_query[:1])[0])
        < RTOL64
    )
    if draw[1] in ("none", "zero_targets"):  # Lemma 4.4 needs Σ invertible (n=8 > d=3)
        assert lemma44_residual(P, Q, diag, X, y) < 1e-8
