"""The adjusted loss chunk by chunk, and the cache of its model-independent part (the oracle's losses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics.baselines import scoring
from numerics.evaluate import losses
from numerics.models import universal
from numerics.models.constructions import gd

P, Q = (np.asarray(x, np.float64) for x in universal(gd(0.05, 2), 10))
KEY = jax.random.PRNGKey(11)


def _direct(noise: str, sequences: int, chunk: int) -> np.ndarray:
    with jax.enable_x64(True):
        return np.concatenate(
            [
                np.asarray(losses.adjusted_full(jnp.asarray(P), jnp.asarray(Q), b, sp))
                for b, sp in losses.batches(KEY, noise, sequences, 20, 10, chunk)
            ]
        )


def test_cached_oracle_gives_the_direct_numbers_bit_for_bit():
    losses.ORACLE_CACHE.clear()
    # the same key under two noises: two sets of sequences (two levels of one kind, so the sampler and the
    # oracle compile once; the other tests here evaluate uniform:1 and uniform:2 on the same chunks)
    for noise in ("uniform:2", "uniform:1"):
        first = losses.adjusted_per_sequence(P, Q, noise, 20, 10, KEY, 250, chunk=100)
        again = losses.adjusted_per_sequence(
            P, Q, noise, 20, 10, KEY, 250, chunk=100
        )  # from the cache
        np.testing.assert_array_equal(first, _direct(noise, 250, 100))
        np.testing.assert_array_equal(again, first)
    assert len(losses.ORACLE_CACHE) == 6  # 3 chunks (100, 100, 50) per noise


def test_the_cache_is_what_a_second_evaluation_reads():
    losses.ORACLE_CACHE.clear()
    first = losses.adjusted_per_sequence(P, Q, "uniform:1", 20, 10, KEY, 200, chunk=100)
    for k in losses.ORACLE_CACHE:
        losses.ORACLE_CACHE[k] = losses.ORACLE_CACHE[k] + 1.0
    np.testing.assert_allclose(
        losses.adjusted_per_sequence(P, Q, "uniform:1", 20, 10, KEY, 200, chunk=100),
        first - 1.0,
        rtol=0,
        atol=1e-12,
    )
    losses.ORACLE_CACHE.clear()


def test_a_drawn_chunk_is_kept_and_read_again():
    losses.BATCH_CACHE.clear()
    noise = losses.Noise.parse("uniform:2")
    with jax.enable_x64(True):
        first = losses.chunk_batch(KEY, noise, 1, 70, 20, 10, 100)
        direct = losses.data.sample(jax.random.fold_in(KEY, 1), noise, 100, 20, 10, jnp.float64)
        for a, b in zip(first, direct):
            np.testing.assert_array_equal(a, b[:70])
        assert losses.chunk_batch(KEY, noise, 1, 70, 20, 10, 100) is first
        assert (
            losses.chunk_batch(KEY, losses.Noise.parse("uniform:3"), 1, 70, 20, 10, 100)
            is not first
        )
    # an evaluation reads the kept chunk: a changed target there changes its losses
    losses.BATCH_CACHE.clear()
    before = losses.adjusted_per_sequence(P, Q, "uniform:1", 20, 10, KEY, 200, chunk=100)
    for k, b in losses.BATCH_CACHE.items():
        losses.BATCH_CACHE[k] = b._replace(y_query=b.y_query + 1.0)
    assert not np.allclose(
        losses.adjusted_per_sequence(P, Q, "uniform:1", 20, 10, KEY, 200, chunk=100), before
    )
    losses.BATCH_CACHE.clear()


def test_the_chunk_cache_stays_within_its_bytes(monkeypatch):
    losses.BATCH_CACHE.clear()
    one = (
        100 * (20 * 10 + 20 + 10 + 1 + 1 + 10) * 8
    )  # X, y, x_query, y_query, sigma, w of one float64 chunk
    monkeypatch.setattr(scoring, "BATCH_CACHE_BYTES", 3 * one)
    first = losses.adjusted_per_sequence(P, Q, "uniform:1", 20, 10, KEY, 500, chunk=100)
    assert (
        len(losses.BATCH_CACHE) == 2
    )  # three chunks fill it, the fourth empties it: the fourth and fifth kept
    np.testing.assert_array_equal(
        losses.adjusted_per_sequence(P, Q, "uniform:1", 20, 10, KEY, 500, chunk=100), first
    )
    losses.BATCH_CACHE.clear()


_MMAP_SCRIPT = r"""
import ctypes, json, sys
import numpy as np
from numerics.baselines import scoring
from numerics.evaluate import losses

class Info(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                                              "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
fixed = losses.fix_mmap_threshold()
a = np.ones(4_000_000); del a  # a freed 32 MB block: glibc's own threshold would rise to its size
a = np.ones(4_000_000)
print(json.dumps({"fixed": fixed, "mmapped": libc.mallinfo2().hblkhd}))
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's mallopt and mallinfo2 are Linux's"
)
@pytest.mark.parametrize("env", [{}, {"MALLOC_MMAP_THRESHOLD_": "4194304"}])
def test_a_freed_cache_chunk_goes_back_to_the_system(env):
    """After :func:`fix_mmap_threshold`, a 32 MB block allocated after another was freed is still mmapped (so freeing
    it unmaps it), where glibc alone would serve it from the heap; a threshold the user set is left alone."""
    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    out = subprocess.run(
        [sys.executable, "-c", _MMAP_SCRIPT],
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["fixed"] is not bool(env)
    assert r["mmapped"] >= 32_000_000, r  # mmapped by the fixed threshold, or by the user's (4 MiB)


def test_a_profile_draws_with_the_sampler_a_plain_draw_compiled():
    """:func:`losses.profile` calls the sampler as :func:`numerics.data.sample` does (the inputs' distribution
    passed, not left to its default): jit keys its cache on how arguments are given, and the same program was
    compiled twice in a sweep (the evaluation's draw, then the profile's)."""
    from numerics import data

    losses.PROFILE_CACHE.clear()  # chunks an earlier profile drew would call no sampler at all
    with jax.enable_x64(True):
        # chunks of 100 at n = 20, d = 10, as the next test's profile and the evaluations above: the
        # sampler and the spectral programs are compiled once for the module
        data.sample(jax.random.PRNGKey(3), "uniform:2", 100, 20, 10, jnp.float64)
        entries = data.sample_with_sigma._cache_size()
        losses.profile(
            lambda b, sp: {"zero": jnp.zeros_like(b.y_query)},
            [0.0, 1.0],
            20,
            10,
            300,
            KEY,
            chunk=100,
        )
    assert data.sample_with_sigma._cache_size() == entries


def test_a_profile_reads_the_chunks_it_drew_again_and_its_cache_stays_within_its_bytes(monkeypatch):
    """A second profile on the same key and noise levels gives the first's numbers from the kept chunks (a target
    changed there changes its losses); drawn afresh they are the same; the cache is emptied past its bytes."""

    def prof():  # noqa: ANN202
        with jax.enable_x64(True):
            return losses.profile(
                lambda b, sp: {"zero": jnp.zeros_like(b.y_query)},
                [0.0, 1.0],
                20,
                10,
                300,
                KEY,
                chunk=100,
            )["zero"]["loss"]

    losses.PROFILE_CACHE.clear()
    first = prof()
    assert len(losses.PROFILE_CACHE) == 6  # two noise levels, three chunks each
    np.testing.assert_array_equal(prof(), first)
    for k, (b, sp, oracle) in list(losses.PROFILE_CACHE.items()):
        losses.PROFILE_CACHE[k] = (b._replace(y_query=b.y_query + 1.0), sp, oracle)
    assert not np.allclose(prof(), first)
    losses.PROFILE_CACHE.clear()
    np.testing.assert_array_equal(prof(), first)
    one = scoring.nbytes(next(iter(losses.PROFILE_CACHE.values())))
    monkeypatch.setattr(losses, "PROFILE_CACHE_BYTES", 4 * one)
    losses.PROFILE_CACHE.clear()
    np.testing.assert_array_equal(prof(), first)
    assert (
        len(losses.PROFILE_CACHE) == 2
    )  # four chunks fill it, the fifth empties it: the fifth and sixth kept
    losses.PROFILE_CACHE.clear()


def test_an_overflowing_square_gives_an_infinite_se_and_a_failed_tail_without_a_warning():
    """One sequence at 1e160 (finite; its square is not): the moments' SE is inf, quietly, and the tail rules fail
    the sample on its largest value."""
    import warnings

    x = np.array([1.0, 2.0, 1e160])
    m = scoring.Moments()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.add(x[:2])
        m.add(x[2:])
        t = losses.tail_stats(x)
    assert m.mean == pytest.approx(1e160 / 3) and m.count == 3 and np.isinf(m.se())
    assert "largest per-sequence adjusted loss" in t["failed"]


def test_a_pass_in_slices_gives_each_sequence_the_whole_chunks_number(monkeypatch):
    """The float64 model pass runs a chunk in slices of :data:`losses.SLICE` sequences (the last one short): each
    sequence's loss is the one the whole chunk gives, bit for bit, in the chunk's order."""
    monkeypatch.setattr(losses, "SLICE", 10**9)
    whole = losses.adjusted_per_sequence(P, Q, "uniform:2", 20, 10, KEY, 250, chunk=100)
    seen = []
    passes = losses._model_losses
    monkeypatch.setattr(
        losses, "_model_losses", lambda *a: seen.append(a[2].X.shape[0]) or passes(*a)
    )
    # 75: two slice shapes (75, 25) beside the whole chunks' (100, 50), each compiled once
    monkeypatch.setattr(losses, "SLICE", 75)
    parts = losses.adjusted_per_sequence(P, Q, "uniform:2", 20, 10, KEY, 250, chunk=100)
    assert seen == [75, 25] * 2 + [50]  # chunks of 100, 100 and 50
    np.testing.assert_array_equal(parts, whole)
