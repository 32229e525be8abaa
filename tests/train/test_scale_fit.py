"""The scale fit of the sweep's stages (:func:`numerics.train.scale_fit.fit_scale`): a stratified sample that keeps a
pool's worst sequences and estimates its mean without bias, and a scale that removes a rare exploding context."""

from __future__ import annotations

import jax
import numpy as np

from numerics import models
from numerics.evaluate import losses as evaluation
from numerics.models import constructions
from numerics.train.scale_fit import (
    SCALE_LOW,
    SCALE_SHARE,
    fit_scale,
    pool_losses,
    pool_rows,
    stratify,
)

N, D, NOISE = 6, 3, "uniform:1"


def _gd(eta: float, layers: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """``layers`` GD steps of size ``eta``: the error on an eigenvalue ``λ`` of the context is ``(1 − ηλ)^L``, so a
    step beyond ``2/λ`` explodes on the rare context with a large ``λ``."""
    P, Q = models.universal(constructions.gd(eta, layers), D)
    return np.asarray(P, np.float64), np.asarray(Q, np.float64)


#: The chunk of the sequences drawn here in several chunks (the pools, the fresh sequences), and the
#: pool of :func:`test_fit_scale_of_a_model_past_1e154_gives_a_scale_not_an_overflow`: the tests
#: share the programs of 2000 sequences (sampler, spectra, oracle), and every pool and chunk is whole
#: slices of the float64 pass (:data:`numerics.evaluate.losses.SLICE`): one program per depth.
CHUNK = 2 * evaluation.SLICE


def test_stratified_sample_keeps_the_pool_worst_and_estimates_its_mean_without_bias():
    """A pool of 8000 sequences in four chunks, sampled 125 + 125 as the next test's fit samples
    its pool of 8000."""
    P, Q = _gd(0.12)
    key, pool, top = jax.random.PRNGKey(5), 4 * CHUNK, 4 * CHUNK // SCALE_SHARE
    full = evaluation.adjusted_per_sequence(
        P, Q, NOISE, N, D, key, pool, chunk=CHUNK
    )  # the same sequences
    losses = pool_losses(P, Q, NOISE, N, D, key, pool, chunk=CHUNK)
    # four chunks: the worst merged across them
    s = stratify(losses, NOISE, N, D, key, top, top, chunk=CHUNK)
    with jax.enable_x64(True):
        a = np.asarray(
            evaluation.adjusted_full(P, Q, type(s.batch)(*s.batch), type(s.spectra)(*s.spectra))
        )
    assert (
        np.allclose(np.sort(a[:top]), np.sort(full)[-top:], rtol=1e-12) and s.pool_max == full.max()
    )
    assert abs(s.weight.sum() - 1.0) < 1e-12
    rest = np.sort(full)[:-top]
    r = len(a) - top
    se = (pool - top) / pool * rest.std(ddof=1) / np.sqrt(r)
    assert abs(float(np.sum(s.weight * a)) - full.mean()) < 4 * se
    # the sample's estimate is far tighter than a uniform sample of the same size would be
    assert se < full.std(ddof=1) / np.sqrt(len(a)) / 10


def test_fit_scale_removes_a_rare_exploding_context_and_leaves_a_calm_model_alone():
    P, Q = _gd(0.12)
    fresh, m = jax.random.PRNGKey(11), 10 * CHUNK
    before = evaluation.adjusted_per_sequence(P, Q, NOISE, N, D, fresh, m, CHUNK)
    assert before.max() > 1e4  # the model explodes on a rare context
    c, info = fit_scale(P, Q, NOISE, N, D, pool=4 * CHUNK)
    after = evaluation.adjusted_per_sequence(P, c * Q, NOISE, N, D, fresh, m, CHUNK)
    assert info["searched"] and 0.5 <= c <= info["slack"] <= info["best"] < 1
    assert after.mean() < before.mean() / 100 and after.max() < evaluation.FAIL_MAX
    calm_P, calm_Q = _gd(0.02)
    c, info = fit_scale(calm_P, calm_Q, NOISE, N, D, pool=4 * CHUNK)
    assert c == 1.0 and not info["searched"]


def test_fit_scale_of_a_model_past_1e154_gives_a_scale_not_an_overflow():
    """Six GD steps of size 1e12 (the depth of the tests above: their programs) reach adjusted losses
    of 1e161: finite, but their squares are not."""
    P, Q = _gd(1e12)
    c, info = fit_scale(P, Q, NOISE, N, D, pool=CHUNK)
    assert info["searched"] and info["pool_max"] > 1e154 and SCALE_LOW <= c <= 1.0


def test_pool_rows_are_the_pools_sequences_in_the_order_asked():
    """The sample's rows are gathered chunk by chunk after the loss pass: each is the pool's sequence of its index,
    whichever chunk holds it and in whatever order the indices come."""
    P, Q = _gd(0.12)
    key, pool, chunk = jax.random.PRNGKey(3), 2 * CHUNK + 1000, CHUNK  # three, the last one short
    parts = [b for b, _ in evaluation.adjusted_chunks(P, Q, NOISE, N, D, key, pool, chunk)]
    whole = jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *parts)
    idx = np.array([pool - 1, 0, CHUNK, CHUNK - 1, 7, 2 * CHUNK, 3000])
    rows = pool_rows(NOISE, N, D, key, pool, idx, chunk)
    for got, want in zip(rows, whole):
        assert np.array_equal(got, want[idx])
