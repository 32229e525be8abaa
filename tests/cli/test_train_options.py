"""``lintf train``'s options come from :class:`numerics.train.config.TrainConfig`: same defaults, one flag per field."""

from __future__ import annotations

from dataclasses import fields

from numerics.cli import build_parser
from numerics.cli.train import config_from_args
from numerics.train.config import TrainConfig


def _train_args(*extra: str):
    return build_parser().parse_args(["train", "--model", "diag", "--layers", "2", *extra])


def test_train_defaults_are_the_configs():
    assert config_from_args(_train_args()) == TrainConfig(model="diag", layers=2)


def test_every_field_with_help_has_an_option_and_chunk_counts_steps():
    args = _train_args("--chunk-steps", "7", "--eval-sequences", "9")
    cfg = config_from_args(args)
    assert (cfg.chunk, cfg.eval_sequences) == (7, 9)
    with_help = {f.name for f in fields(TrainConfig) if f.metadata.get("help") is not None}
    assert with_help <= set(vars(args))
