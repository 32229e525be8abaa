"""The sequences every method is scored on (numerics.baselines.scoring): the paired adjusted loss
and its tail statistics against NumPy on the very sequences drawn."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from numerics.baselines import scoring
from numerics.data import Noise

KEY = jax.random.PRNGKey(5)


def test_evaluate_is_the_mean_and_paired_se_of_numpy_losses_on_the_drawn_sequences() -> None:
    """:func:`scoring.evaluate` of two predictors (OLS and ``ŷ = 0``) over three chunks against
    NumPy on the concatenated chunks :func:`scoring.batches` yields: the mean of ``½(y_t − ŷ)² −
    ½(y_t − ŷ_oracle)²`` with ``ŷ_oracle`` the ridge at the sequence's own ``σ²``, its SE
    ``std/√N``, and the paired difference to ``ŷ = 0``."""
    # the sizes of tests/evaluate/test_losses.py's evaluations: the sampler and spectral programs
    # are compiled once in a test run
    n, d, sequences, chunk = 20, 10, 250, 100

    def predict(batch, sp):  # noqa: ANN001, ANN202 - in NumPy: no program compiled per chunk size
        X, y, xq = (np.asarray(a) for a in (batch.X, batch.y, batch.x_query))
        Xy = np.einsum("bni,bn->bi", X, y)[..., None]
        w = np.linalg.solve(np.einsum("bni,bnj->bij", X, X), Xy)[..., 0]
        return {"ols": np.einsum("bi,bi->b", w, xq), "zero": np.zeros(len(xq))}

    with jax.enable_x64(True):
        got = scoring.evaluate(predict, "uniform:1", sequences, n, d, KEY, chunk, against="zero")
        parts = [b for b, _ in scoring.batches(KEY, "uniform:1", sequences, n, d, chunk)]
    X, y, xq, yq, sigma = (
        np.concatenate([np.asarray(getattr(b, f)) for b in parts])
        for f in ("X", "y", "x_query", "y_query", "sigma")
    )
    assert X.shape == (sequences, n, d) and np.all((sigma >= 0) & (sigma <= 1))

    def ridge(s2: np.ndarray) -> np.ndarray:
        return np.array(
            [
                xq[b] @ np.linalg.solve(X[b].T @ X[b] + s2[b] * np.eye(d), X[b].T @ y[b])
                for b in range(sequences)
            ]
        )

    oracle = 0.5 * (yq - ridge(sigma**2)) ** 2
    raw = {"ols": 0.5 * (yq - ridge(np.zeros(sequences))) ** 2, "zero": 0.5 * yq**2}
    for name, loss in raw.items():
        adj = loss - oracle
        assert got[name]["count"] == sequences
        assert got[name]["loss"] == pytest.approx(adj.mean(), rel=1e-9)
        assert got[name]["se"] == pytest.approx(adj.std(ddof=1) / np.sqrt(sequences), rel=1e-9)
        assert got[name]["raw"] == pytest.approx(loss.mean(), rel=1e-9)
        rel = loss - raw["zero"]
        assert got[name]["minus_zero"] == pytest.approx(rel.mean(), rel=1e-9, abs=1e-15)
        assert got[name]["minus_zero_se"] == pytest.approx(
            rel.std(ddof=1) / np.sqrt(sequences), abs=1e-15
        )
    # the two predictors differ: a swap could not pass
    assert got["ols"]["loss"] < got["zero"]["loss"]


def test_a_chunk_is_drawn_from_its_own_key_and_a_short_chunk_is_a_prefix() -> None:
    """Chunk ``i`` is the draw from ``fold_in(key, i)``; a short last chunk keeps its first
    sequences."""
    # chunks of 100 at n = 20, d = 10, as the test above draws: one compiled sampler
    with jax.enable_x64(True):
        short = scoring.chunk_batch(KEY, Noise.parse("uniform:2"), 1, 30, 20, 10, 100)
        full = scoring.chunk_batch(KEY, Noise.parse("uniform:2"), 1, 100, 20, 10, 100)
        other = scoring.chunk_batch(KEY, Noise.parse("uniform:2"), 0, 100, 20, 10, 100)
    np.testing.assert_array_equal(np.asarray(short.X), np.asarray(full.X)[:30])
    assert not np.allclose(np.asarray(other.X), np.asarray(full.X))
    assert scoring.chunks(250, 100) == [100, 100, 50]
    assert scoring.chunks(200, 100) == [100, 100]


def test_tail_stats_are_numpys_and_each_rule_names_its_reason() -> None:
    rng = np.random.default_rng(3)
    a = np.abs(rng.standard_normal(1000)) * 1e-2
    t = scoring.tail_stats(a)
    assert (t["mean"], t["median"], t["max"]) == (
        pytest.approx(a.mean()),
        pytest.approx(np.median(a)),
        a.max(),
    )
    assert t["se"] == pytest.approx(a.std(ddof=1) / np.sqrt(1000)) and t["failed"] is None
    assert t["above_100x_median"] == int(np.sum(a > 100 * np.median(a)))
    big = a.copy()
    big[7] = 2 * scoring.FAIL_MAX
    assert scoring.tail_stats(big)["failed"].startswith("largest per-sequence adjusted loss")
    few = a.copy()
    # three sequences carry the mean: its SE is above a tenth of it
    few[:3] = 0.9 * scoring.FAIL_MAX
    assert scoring.tail_stats(few)["failed"].startswith("SE ")
    nan = a.copy()
    nan[0] = np.nan
    assert scoring.tail_stats(nan)["failed"] == "a non-finite per-sequence loss"
