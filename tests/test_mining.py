"""Hard-sequence mining (``TrainConfig.pool``): a stratified sample whose weighted loss is an unbiased estimate
of the pool's mean loss, so that training still minimises the plain mean squared error."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models
from numerics.data import sample
from numerics.training import MINED_SHARE, TrainConfig, config_dict, mine, train


def _pool_and_losses(cfg: TrainConfig, params):
    pool = sample(jax.random.PRNGKey(3), "uniform:2", cfg.batch * cfg.pool, cfg.n, cfg.d)
    yhat = models.predict(*models.universal(params, cfg.d), pool.X, pool.y, pool.x_query)
    return pool, np.asarray(0.5 * (yhat - pool.y_query) ** 2, np.float64)


def test_mined_batch_holds_the_hardest_sequences_and_estimates_the_pool_mean_without_bias():
    cfg = TrainConfig(model="diag", layers=2, noise="uniform:2", n=6, d=3, batch=16, pool=8)
    params = models.init("diag", jax.random.PRNGKey(0), 2, cfg.d, scale=0.4)
    pool, loss = _pool_and_losses(cfg, params)
    m, B, N = cfg.batch // MINED_SHARE, cfg.batch, cfg.batch * cfg.pool
    hardest = set(np.argsort(-loss)[:m].tolist())
    b, w = jax.jit(jax.vmap(lambda k: mine(cfg, params, pool, k, False)))(jax.random.split(jax.random.PRNGKey(1), 4000))
    order = np.argsort(np.asarray(pool.y_query))  # every pool sequence has its own target: rows by target
    rows = order[np.searchsorted(np.asarray(pool.y_query)[order], np.asarray(b.y_query))]
    assert np.array_equal(np.asarray(pool.X)[rows[0]], np.asarray(b.X)[0])
    # each batch: the m hardest sequences plus B − m distinct others, with the stratified weights
    assert all(set(r[:m].tolist()) == hardest and len(set(r.tolist())) == B for r in rows[:50])
    assert np.allclose(np.asarray(w[0]), [B / N] * m + [B * (N - m) / (N * (B - m))] * (B - m))
    estimates = np.sum(np.asarray(w, np.float64) * loss[rows], axis=1) / B
    est = np.asarray(estimates)
    se = est.std(ddof=1) / np.sqrt(len(est))
    assert abs(est.mean() - loss.mean()) < 4 * se + 1e-12 * loss.mean()
    # mining estimates the pool mean far more precisely than a uniform batch of the same size
    uniform_se = loss.std(ddof=1) * np.sqrt((N - B) / (N - 1) / B)
    assert est.std(ddof=1) < uniform_se


def test_pool_is_validated_and_left_out_of_the_run_signature_at_its_default():
    with pytest.raises(ValueError, match="pool must be >= 1, got 0"):
        TrainConfig(model="diag", layers=1, pool=0)
    assert "pool" not in config_dict(TrainConfig(model="diag", layers=1))
    assert config_dict(TrainConfig(model="diag", layers=1, pool=4))["pool"] == 4


def test_mining_trains_deterministically():
    cfg = TrainConfig(model="diag", layers=2, noise="uniform:1", n=6, d=3, batch=32, pool=4, steps=10, chunk=10,
                      eval_sequences=64, select_sequences=64, seeds=2)
    a, b = train(cfg), train(cfg)
    for x, y in zip(jax.tree_util.tree_leaves(a.state.params), jax.tree_util.tree_leaves(b.state.params)):
        assert jnp.array_equal(x, y) and bool(jnp.all(jnp.isfinite(x)))
