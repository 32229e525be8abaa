"""The training configuration: its checks, its per-model defaults and what ``config.json``
records."""

from __future__ import annotations

import pytest

from numerics.train.config import TrainConfig, config_dict
from tests.strategies.training import TINY


def test_y_step_defaults_to_scaled_for_full_and_plain_for_diag() -> None:
    """The per-model default (``DEFAULT_Y_STEP``), and what config.json records: FULL's choice
    always (its runs from before the scaled default were plain), DIAG's only when it is not the
    default."""
    full, diag = TrainConfig(model="full", **TINY), TrainConfig(model="diag", **TINY)
    assert (full.y_step, diag.y_step, TrainConfig(model="gdpp", **TINY).y_step) == (
        "scaled",
        "plain",
        "plain",
    )
    assert config_dict(full)["y_step"] == "scaled" and "y_step" not in config_dict(diag)
    assert config_dict(TrainConfig(model="full", y_step="plain", **TINY))["y_step"] == "plain"
    assert config_dict(TrainConfig(model="diag", y_step="scaled", **TINY))["y_step"] == "scaled"


def test_a_micro_batch_that_does_not_divide_the_batch_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"micro_batch must be 0 \(the whole batch\) or divide batch=100, got 30"
    ):
        TrainConfig(model="diag", layers=2, batch=100, micro_batch=30)
    with pytest.raises(ValueError, match="got -2"):
        TrainConfig(model="diag", layers=2, batch=100, micro_batch=-2)
    # the default is left out of a run's config, so run directories written before the option resume
    assert "micro_batch" not in config_dict(TrainConfig(model="diag", layers=2))
    assert (
        config_dict(TrainConfig(model="diag", layers=2, batch=100, micro_batch=25))["micro_batch"]
        == 25
    )
