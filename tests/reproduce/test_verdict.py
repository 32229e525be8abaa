"""The verdict: the one failure rule on given numbers, the pooled SE, and an evaluation's paired gap to Bayes."""

from __future__ import annotations

import numpy as np
import pytest

from numerics.evaluate import losses as evaluation
from numerics.reproduce import verdict
from numerics.reproduce.verdict import failure, pooled


def _judged(
    failed: str | None = None, mx: float = 1.0, mean: float = 1e-4, se: float = 5e-5, **extra
) -> dict:
    tail = {"failed": failed, "max": mx, "mean": mean, "se": se, "sequences": 100_000}
    return {"eval": {"tail": tail}, "tail_check": None, "spectral": None} | extra


def _tc(mean: float = 1.2e-4, se: float = 5e-6, passed: bool = True) -> dict:
    return {
        "passed": passed,
        "above": 0 if passed else 1,
        "sequences": 1_000_000,
        "limit": 1e4,
        "max": 30.0,
        "mean": mean,
        "se": se,
    }


def test_a_passing_cell_passes() -> None:
    assert failure(_judged()) is None


def test_the_se_rule_alone_is_settled_by_the_pooled_tail_check() -> None:
    only_se = _judged("SE 5e-05 above 10% of the mean", mx=0.5)
    assert failure(only_se).startswith("evaluation: SE")
    assert failure(only_se | {"tail_check": _tc()}) is None
    huge = _judged(
        "SE 5e-05 above 10% of the mean", mx=2e3
    )  # one sequence above FAIL_MAX: no pooling
    assert failure(huge | {"tail_check": _tc()}) == "evaluation: SE 5e-05 above 10% of the mean"


@pytest.mark.parametrize(
    "extra, says",
    [
        ({"tail_check": _tc(passed=False)}, "tail check: 1 of 1000000 sequences above 10000"),
        (
            {
                "spectral": {
                    "above": 2,
                    "spectra": 100,
                    "limit": 1e4,
                    "max": 3e4,
                    "mean": 0.1,
                    "se": 0.1,
                }
            },
            "spectral check: 2 of 100 spectra",
        ),
    ],
)
def test_each_check_fails_a_cell(extra: dict, says: str) -> None:
    assert failure(_judged() | extra).startswith(says)


def test_sequences_left_out_of_the_final_phase_fail_a_cell() -> None:
    assert failure(_judged(), dropped_final=3) == "training left 3 sequences out of its final phase"


def test_pooling_weights_by_count() -> None:
    ev = {
        "sequences": 100_000,
        "mean": 5.6e-3,
        "se": 5.6e-3,
    }  # one sequence at 560 carries the mean
    mean, se = pooled(ev, _tc())
    assert mean == pytest.approx((1e5 * 5.6e-3 + 1e6 * 1.2e-4) / 1.1e6)
    assert se == pytest.approx(np.hypot(1e5 * 5.6e-3, 1e6 * 5e-6) / 1.1e6)
    assert not evaluation.se_settles(mean, se)  # the one sequence still carries it


def test_the_evaluation_pairs_every_read_out_with_bayes() -> None:
    # one layer on 500 uniform:1 sequences: the shapes of the tiny cell of
    # tests/reproduce/test_cell.py, whose evaluation programs are compiled once in a test run
    L, d = 1, 10
    P = np.zeros((L, 1, d + 1, d + 1))
    Q = np.zeros((L, 1, d + 1, d + 1))
    P[:, 0, d, d] = -1.0
    Q[:, 0, :d, :d] = np.eye(d) * 0.01  # a small GD step in each layer
    ev = verdict.evaluate_model(P, Q, "uniform:1", 500, 20, d)
    lay = ev["layers"]
    assert len(lay["loss"]) == L + 1 and ev["loss"] == lay["loss"][-1] and ev["sequences"] == 500
    assert np.allclose(np.asarray(lay["loss"]) - np.asarray(lay["minus_Bayes"]), ev["Bayes"])
    assert all(np.isfinite(lay["minus_Bayes_se"]))
    assert (
        verdict.evaluate_model(P, Q, "uniform:1", 500, 20, d) == ev
    )  # the cached Bayes gives the same
