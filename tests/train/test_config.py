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


@pytest.mark.parametrize(
    "name,value,allowed",
    [
        ("forward", "slow", "fast, plain"),
        ("gdpp_xx", "up", "nonpositive, free"),
        ("y_step", "sometimes", "plain, scaled"),
        ("init", "zeros", "random, spectral"),
        ("dtype", "float16", "float32, float64"),
    ],
)
def test_a_choice_outside_its_list_is_refused_with_the_list(
    name: str, value: str, allowed: str
) -> None:
    """Every option with a fixed list of values: a value outside it is one line naming the option,
    the values it takes and the value given."""
    with pytest.raises(ValueError) as err:
        TrainConfig(model="diag", layers=2, **{name: value})
    assert str(err.value) == f"{name} must be one of {allowed}, got {value!r}"


def test_options_are_the_fields_with_help_and_the_rest_are_not() -> None:
    """``option`` gives a field its help (and its flag where it has its own); the fields the
    command line does not set carry no help."""
    from dataclasses import fields

    meta = {f.name: dict(f.metadata) for f in fields(TrainConfig)}
    assert meta["chunk"] == {
        "help": "steps per compiled chunk / checkpoint",
        "flag": "--chunk-steps",
    }
    assert meta["steps"] == {"help": "training steps"}
    quiet = {k for k, m in meta.items() if "help" not in m}
    assert quiet == {
        "init_scale",
        "explode",
        "select_sequences",
        "max_rollbacks",
        "forward",
        "final_fraction",
        "warm_start",
    }
