r"""Trained transformers follow the derived update rules, layer by layer.

Two sources of trained models:
* committed: ``tests/data/trained/{full,diag,gdpp}-3.npz`` (universal ``P, Q``; d=3, n=8, three
  layers, ``uniform:1``), made by ``bash tests/data/trained/make.sh``;
* a short DIAG and GD++ training run (``numerics.train.train``) cached for the whole test run.

Every model goes through the same checks as the random ones in ``tests/test_properties.py``, on
data drawn by Hypothesis (seed and degeneracy), plus the DIAG-specific ones of
``tests/test_properties_diag.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics import io, models
from numerics.train import TrainConfig, train
from tests.model_helpers import RTOL64, max_rel_err
from tests.strategies import DEGENERACIES, ModelConfig, config_batch, property_settings
from tests.test_properties import (assert_permutation_invariance, assert_query_isolation, assert_readouts,
                                   assert_token_form, rotation_change)
from tests.test_properties_diag import lemma44_residual, omega_form_tokens

TRAINED = Path(__file__).parent / "data" / "trained"
D, N = 3, 8  # sizes of every trained model here


def _fresh_run(kind: str) -> tuple[jax.Array, jax.Array]:
    cfg = TrainConfig(model=kind, layers=3, noise="uniform:1", steps=100, batch=256, n=N, d=D, seeds=1,
                      chunk=100, dtype="float64", select_sequences=256, eval_sequences=256)
    params = jax.tree_util.tree_map(lambda a: a[0], train(cfg).state.params)
    return models.universal(params, D)


@pytest.fixture(scope="module")
def trained() -> dict[str, tuple[Any, Any]]:
    """``name -> (P, Q)`` for every trained model (committed and freshly trained)."""
    out: dict[str, tuple[Any, Any]] = {}
    for path in sorted(TRAINED.glob("*.npz")):
        P, Q, meta = io.load_model(path)
        assert meta["kind"] in models.KINDS
        out[f"committed-{path.stem}"] = (jnp.asarray(P), jnp.asarray(Q))
    assert {"committed-full-3", "committed-diag-3", "committed-gdpp-3"} <= set(out), "committed models missing"
    for kind in ("diag", "gdpp"):
        out[f"fresh-{kind}-3"] = _fresh_run(kind)
    return out


NAMES = ["committed-full-3", "committed-diag-3", "committed-gdpp-3", "fresh-diag-3", "fresh-gdpp-3"]
DIAGONAL = [n for n in NAMES if "full" not in n]
data_draws = st.tuples(st.integers(0, 2**16), st.sampled_from(DEGENERACIES))


def _batch(seed: int, degeneracy: str) -> Any:
    return config_batch(ModelConfig("trained", D, N, 1, 3, seed, degeneracy), batch=4)


@pytest.mark.parametrize("name", NAMES)
@property_settings(default_examples=4)
@given(draw=data_draws, s=st.floats(-3, 3), t=st.floats(-3, 3))
def test_trained_models_follow_token_form_query_isolation_invariance_and_readouts(
        trained: dict, name: str, draw: tuple[int, str], s: float, t: float) -> None:
    P, Q = trained[name]
    b = _batch(*draw)
    assert_token_form(P, Q, b)
    assert_query_isolation(P, Q, b, draw[0], s, t)
    assert_permutation_invariance(P, Q, b, draw[0])
    assert_readouts(P, Q, b)
    if name in DIAGONAL:
        assert rotation_change(P, Q, b, draw[0]) < RTOL64


@pytest.mark.parametrize("name", ["committed-gdpp-3", "fresh-gdpp-3"])
def test_trained_gdpp_keeps_omega_xy_and_omega_yy_zero(trained: dict, name: str) -> None:
    P, Q = trained[name]
    _, wxy, _, wyy = models.omegas(models.diag_from_universal(P, Q))
    assert float(jnp.max(jnp.abs(wxy))) == 0.0 and float(jnp.max(jnp.abs(wyy))) == 0.0
    models.gdpp_from_universal(P, Q)  # and it converts back to native GD++ parameters


@pytest.mark.parametrize("name", ["committed-diag-3", "fresh-diag-3"])
@property_settings(default_examples=4)
@given(draw=data_draws)
def test_trained_diag_omegas_reproduce_predictions_and_lemma_4_4(trained: dict, name: str,
                                                                  draw: tuple[int, str]) -> None:
    P, Q = trained[name]
    diag = models.diag_from_universal(P, Q)  # the extracted per-head p, q
    b = _batch(*draw)
    X, y, xq = (np.asarray(v[0]) for v in (b.X, b.y, b.x_query))
    Zw = omega_form_tokens(diag, X, y, xq)  # the derived ω-form rule, fed with the extracted ω's
    assert max_rel_err(-Zw[-1, -1, -1], models.predict(P, Q, b.X[:1], b.y[:1], b.x_query[:1])[0]) < RTOL64
    if draw[1] in ("none", "zero_targets"):  # Lemma 4.4 needs Σ invertible (n=8 > d=3)
        assert lemma44_residual(P, Q, diag, X, y) < 1e-8
