"""The evaluation computes Bayes' predictions on a setting's evaluation sequences once per process and reads them
back for every later model (:data:`numerics.reproduce.judge.BAYES_CACHE`): the same numbers, bit for bit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from numerics.models import constructions, universal
from numerics.reproduce import judge
from numerics.reproduce.budgets import get_budget

SMALL = replace(get_budget("test"), n=6, d=3)
P, Q = (np.asarray(x, np.float64) for x in universal(constructions.gd(0.1, 2), 3))
SEQUENCES = 41_000  # three chunks of the evaluation, the last one short


def test_a_second_evaluation_reads_bayes_and_gives_the_same_numbers(monkeypatch) -> None:
    judge.BAYES_CACHE.clear()
    first = judge.evaluate_model(P, Q, "uniform:1", SMALL, SEQUENCES)
    (key, chunks), = judge.BAYES_CACHE.items()
    assert key == ("uniform:1", SEQUENCES, 6, 3) and [len(c["Bayes"]) for c in chunks] == [20_000, 20_000, 1000]

    def refused(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("Bayes computed again")

    with monkeypatch.context() as m:
        m.setattr(judge.baselines, "predictor", refused)
        assert judge.evaluate_model(P, Q, "uniform:1", SMALL, SEQUENCES) == first
        with pytest.raises(AssertionError, match="computed again"):  # another setting is not read from it
            judge.evaluate_model(P, Q, "categorical:1,3", SMALL, SEQUENCES)
    other = judge.evaluate_model(0.5 * P, Q, "categorical:1,3", SMALL, SEQUENCES)
    judge.BAYES_CACHE.clear()
    assert judge.evaluate_model(0.5 * P, Q, "categorical:1,3", SMALL, SEQUENCES) == other
    assert judge.evaluate_model(P, Q, "uniform:1", SMALL, SEQUENCES) == first
    judge.BAYES_CACHE.clear()


def test_an_evaluation_in_slices_is_the_whole_chunks(monkeypatch) -> None:
    """Every read-out of the evaluation and the profile, run in slices of ``SLICE`` sequences (the float64 passes
    do), is what whole chunks give: every stored number the same."""
    monkeypatch.setattr(judge.evaluation, "SLICE", 10**9)
    whole = judge.evaluate_model(P, Q, "uniform:1", SMALL, SEQUENCES), judge.profile_model(P, Q, "uniform:1", SMALL)
    monkeypatch.setattr(judge.evaluation, "SLICE", 37)  # the profile's chunks of 100 are sliced too
    parts = judge.evaluate_model(P, Q, "uniform:1", SMALL, SEQUENCES), judge.profile_model(P, Q, "uniform:1", SMALL)
    assert parts == whole
    judge.BAYES_CACHE.clear()
