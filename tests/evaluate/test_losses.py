"""The adjusted loss chunk by chunk, and the cache of its model-independent part (the oracle's losses)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from numerics.evaluate import losses
from numerics.models import universal
from numerics.models.constructions import gd

P, Q = (np.asarray(x, np.float64) for x in universal(gd(0.05, 2), 10))
KEY = jax.random.PRNGKey(11)


def _direct(noise: str, sequences: int, chunk: int) -> np.ndarray:
    with jax.enable_x64(True):
        return np.concatenate([np.asarray(losses.adjusted_full(jnp.asarray(P), jnp.asarray(Q), b, sp))
                               for b, sp in losses.batches(KEY, noise, sequences, 20, 10, chunk)])


def test_cached_oracle_gives_the_direct_numbers_bit_for_bit():
    losses.ORACLE_CACHE.clear()
    for noise in ("uniform:2", "categorical:1,3"):  # the same key under two noises: two sets of sequences
        first = losses.adjusted_per_sequence(P, Q, noise, 20, 10, KEY, 250, chunk=100)
        again = losses.adjusted_per_sequence(P, Q, noise, 20, 10, KEY, 250, chunk=100)  # from the cache
        np.testing.assert_array_equal(first, _direct(noise, 250, 100))
        np.testing.assert_array_equal(again, first)
    assert len(losses.ORACLE_CACHE) == 6  # 3 chunks (100, 100, 50) per noise


def test_the_cache_is_what_a_second_evaluation_reads():
    losses.ORACLE_CACHE.clear()
    first = losses.adjusted_per_sequence(P, Q, "uniform:1", 20, 10, KEY, 200, chunk=100)
    for k in losses.ORACLE_CACHE:
        losses.ORACLE_CACHE[k] = losses.ORACLE_CACHE[k] + 1.0
    np.testing.assert_allclose(losses.adjusted_per_sequence(P, Q, "uniform:1", 20, 10, KEY, 200, chunk=100),
                               first - 1.0, rtol=0, atol=1e-12)
    losses.ORACLE_CACHE.clear()
