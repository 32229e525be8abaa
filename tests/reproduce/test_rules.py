"""The rules: one frozen object; distinct streams give distinct sequences."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from numerics.reproduce.rules import RULES, Rules


def test_the_rules_are_frozen_and_checked() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        RULES.stop_rel = 0.5  # type: ignore[misc]
    with pytest.raises(ValueError, match="the streams must differ"):
        Rules(tail_stream=RULES.held_out_stream)
    with pytest.raises(ValueError, match="stop_rel must be in"):
        Rules(stop_rel=1.5)


def test_every_stream_draws_its_own_sequences() -> None:
    keys = [RULES.eval_key(), RULES.profile_key(), RULES.tail_key(), RULES.held_out_key()]
    draws = [np.asarray(jax.random.normal(k, (4,))) for k in keys]
    assert len({d.tobytes() for d in draws}) == len(draws)
    again = np.asarray(jax.random.normal(Rules().eval_key(), (4,)))
    assert np.array_equal(again, draws[0])  # deterministic
