r"""Adjusted evaluation loss with paired standard errors, per-variance profiles and per-layer read-outs.

The paper's metric (docs/model.md) is a method's loss minus the loss of ridge with the true
noise level (the *oracle*) on the same sequences:

.. math::

    \ell_\tau = \tfrac12 (y_{t,\tau} - \hat y_\tau)^2, \qquad
    \ell^{\rm or}_\tau = \tfrac12 \bigl(y_{t,\tau} - x_{t,\tau}^\top(\Sigma_\tau + \sigma_\tau^2 I)^{+}\alpha_\tau\bigr)^2,
    \qquad \text{adjusted} = \frac1N \sum_\tau (\ell_\tau - \ell^{\rm or}_\tau),

with standard error ``std(ℓ − ℓ^or)/√N`` of the *paired* difference (the oracle's own sampling
noise cancels). The evaluation sequences, the oracle and the accumulator of adjusted losses
live in :mod:`numerics.baselines.scoring` (the baselines are scored with them too); this module
re-exports them and adds the models' evaluation: per-variance profiles, per-layer read-outs, the
float64 passes of a universal model in slices, and the tail check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from numerics import data
from numerics.baselines.scoring import BATCH_CACHE as BATCH_CACHE
from numerics.baselines.scoring import CHUNK as CHUNK
from numerics.baselines.scoring import FAIL_MAX as FAIL_MAX
from numerics.baselines.scoring import FAIL_SE_REL as FAIL_SE_REL
from numerics.baselines.scoring import MMAP_THRESHOLD as MMAP_THRESHOLD
from numerics.baselines.scoring import SE_FLOOR as SE_FLOOR
from numerics.baselines.scoring import TAIL_FACTOR as TAIL_FACTOR
from numerics.baselines.scoring import LossAccumulator as LossAccumulator
from numerics.baselines.scoring import Moments as Moments
from numerics.baselines.scoring import PredictFn as PredictFn
from numerics.baselines.scoring import batches as batches
from numerics.baselines.scoring import chunk_batch as chunk_batch
from numerics.baselines.scoring import chunks as chunks
from numerics.baselines.scoring import evaluate as evaluate
from numerics.baselines.scoring import fix_mmap_threshold as fix_mmap_threshold
from numerics.baselines.scoring import keep_within, key_id
from numerics.baselines.scoring import oracle_predict as oracle_predict
from numerics.baselines.scoring import per_sequence_loss as per_sequence_loss
from numerics.baselines.scoring import se_settles as se_settles
from numerics.baselines.scoring import tail_stats as tail_stats
from numerics.baselines.spectral import Spectral, spectral
from numerics.data import Batch, Noise
from numerics.models import Full
from numerics.models.forward import predict_fast

#: The float64 model passes run a chunk in slices of at most this many sequences (:func:`sliced`).
SLICE = 1000


def sliced(fn: Callable[..., jax.Array], *args: Any) -> jax.Array:
    """``fn(*args)`` on slices of at most :data:`SLICE` sequences (the leading axis of every array in ``args``; bind the
    parameters in ``fn``), joined on its output's last axis: the same numbers, each sequence's arithmetic being its own,
    sooner, a slice's intermediates staying in the CPU's cache (``git show 57798be:benchmarks/sliced_pass.py``)."""
    B = jax.tree_util.tree_leaves(args)[0].shape[0]
    return jnp.concatenate(
        [fn(*jax.tree.map(lambda a, i=i: a[i : i + SLICE], args)) for i in range(0, B, SLICE)], -1
    )


def sigma_grid(noise: Noise | str, points: int = 17, beyond: float = 1.0) -> np.ndarray:
    """``σ`` grid ``[0, σ_max + beyond]`` for per-variance profiles (past the training range, as Fig. 2)."""
    noise = Noise.parse(noise)
    if int(points) < 2:
        raise ValueError(f"points must be >= 2, got {points}")
    if not np.isfinite(beyond) or beyond < 0:
        raise ValueError(f"beyond must be finite and >= 0, got {beyond}")
    return np.linspace(0.0, noise.sigma_max + beyond, int(points))


def profile(
    predict: PredictFn, sigmas, n: int, d: int, sequences: int, key: jax.Array, chunk: int = CHUNK
) -> dict[str, dict]:
    """Per-variance profile: for each ``σ`` of ``sigmas``, the adjusted loss ± SE on ``sequences``
    sequences drawn with exactly that ``σ`` (``data.sample_with_sigma``). Values are arrays over ``σ``
    (leading axes of multi-axis predictions come first)."""
    sig = np.asarray(sigmas, dtype=np.float64)
    if sig.ndim != 1 or not np.all(np.isfinite(sig)) or np.any(sig < 0):
        raise ValueError("sigmas must be a 1-D array of finite values >= 0")
    data.check_sizes(n, d, sequences)
    per, sizes = [], chunks(sequences, chunk)
    for j, s in enumerate(sig):
        acc = LossAccumulator()
        for i, b in enumerate(sizes):
            batch, sp, oracle = sigma_chunk(key, j, float(s), i, b, n, d, int(chunk))
            acc.add(predict(batch, sp), batch.y_query, oracle)
        per.append(acc.result())
    keys = ("loss", "se", "raw", "raw_se")
    return {
        name: {k: np.stack([np.asarray(p[name][k]) for p in per], -1) for k in keys}
        | {"sigma": sig}
        for name in per[0]
    }


#: The chunks of :func:`profile` drawn so far, each with its spectral statistics and the oracle's predictions, by key,
#: point, σ, sizes and chunk index, up to :data:`PROFILE_CACHE_BYTES` (then emptied).  A sweep profiles every cell of
#: a noise setting on the same sequences, and a chunk costs more to draw than a model costs to evaluate on it.
PROFILE_CACHE: dict[tuple, tuple[Batch, Spectral, jax.Array]] = {}
PROFILE_CACHE_BYTES = 2**30


def sigma_chunk(
    key: jax.Array, j: int, s: float, i: int, b: int, n: int, d: int, chunk: int
) -> tuple[Batch, Spectral, jax.Array]:
    """Chunk ``i`` of :func:`profile`'s point ``j`` (noise ``σ = s``), its spectral statistics and the oracle's
    predictions (call under float64): a full chunk drawn from ``fold_in(fold_in(key, j), i)``, of which the first
    ``b`` sequences are kept; a chunk drawn before comes from :data:`PROFILE_CACHE`."""
    k = (key_id(key), int(j), float(s), int(n), int(d), int(chunk), int(i), int(b))
    if k not in PROFILE_CACHE:
        # the inputs' distribution passed as :func:`numerics.data.sample` passes it: jit keys its cache on how the
        # arguments are given, and a default left out would compile the sampler a second time
        batch = data.sample_with_sigma(
            jax.random.fold_in(jax.random.fold_in(key, j), i),
            jnp.full((chunk,), s, jnp.float64),
            n,
            d,
            jnp.float64,
            data.NORMAL_X,
        )
        batch = Batch(*(a[:b] for a in batch)) if b < chunk else batch
        sp = spectral(batch.X, batch.y, batch.x_query)
        keep_within(
            PROFILE_CACHE, PROFILE_CACHE_BYTES, k, (batch, sp, oracle_predict(sp, batch.sigma))
        )
    return PROFILE_CACHE[k]


def layer_losses(reads: jax.Array, batch: Batch) -> dict[str, np.ndarray]:
    """Adjusted loss ± SE of per-layer read-outs ``reads (L+1, B)`` (``models.predict(..., all_layers=True)``)."""
    if reads.ndim != 2 or reads.shape[1] != batch.y_query.shape[0]:
        raise ValueError(
            f"reads must have shape (L+1, B) with B={batch.y_query.shape[0]}, got {tuple(reads.shape)}"
        )
    acc = LossAccumulator()
    sp = spectral(batch.X, batch.y, batch.x_query)
    acc.add({"layers": reads}, batch.y_query, oracle_predict(sp, batch.sigma))
    return acc.result()["layers"]


#: The tail check: no per-sequence adjusted loss above this on :data:`TAIL_SEQUENCES` fresh float64 sequences.
TAIL_MAX = 1e4
TAIL_SEQUENCES = 1_000_000


@jax.jit
def adjusted_full(P: jax.Array, Q: jax.Array, batch: Batch, sp: Spectral) -> jax.Array:
    """Per-sequence adjusted losses ``(B,)`` of the universal model ``P, Q`` (call under float64)."""
    return model_losses(P, Q, batch) - per_sequence_loss(
        oracle_predict(sp, batch.sigma), batch.y_query
    )


def model_losses(P: jax.Array, Q: jax.Array, batch: Batch) -> jax.Array:
    """Per-sequence losses ``½(y_t − ŷ)²`` ``(B,)`` of the universal model ``P, Q`` (call under float64)."""
    return per_sequence_loss(
        predict_fast(Full(P, Q), batch.X, batch.y, batch.x_query), batch.y_query
    )


_model_losses = jax.jit(model_losses)  # one program per chunk shape, for every model of that depth

#: The oracle's per-sequence losses of every chunk :func:`adjusted_chunks` has drawn, by key, noise, sizes and chunk
#: index.  They do not depend on the model, and a sweep evaluates model after model on the same keys (the stages'
#: pool, the held-out sequences, the tail check): the eigendecompositions are a third of an evaluation.
#: 8 bytes a sequence; cleared when it passes :data:`ORACLE_CACHE_MAX` sequences.
ORACLE_CACHE: dict[tuple, np.ndarray] = {}
ORACLE_CACHE_MAX = 2**26


def adjusted_chunks(
    P: Any,
    Q: Any,
    noise: Noise | str,
    n: int,
    d: int,
    key: jax.Array,
    sequences: int,
    chunk: int = CHUNK,
):
    """Yield ``(Batch, adjusted losses)`` of the universal model ``P, Q`` chunk by chunk, on the float64 sequences
    of :func:`batches`; the same numbers as :func:`adjusted_full` on each chunk, with the oracle's part cached
    (:data:`ORACLE_CACHE`)."""
    noise = Noise.parse(noise)
    data.check_sizes(n, d, sequences)
    base = (key_id(key), str(noise), int(n), int(d), int(chunk))
    with jax.enable_x64(True):
        P, Q = jnp.asarray(P, jnp.float64), jnp.asarray(Q, jnp.float64)
    for i, b in enumerate(chunks(sequences, chunk)):
        with jax.enable_x64(True):
            batch = chunk_batch(key, noise, i, b, n, d, chunk)
            k = (*base, i, b)
            if k not in ORACLE_CACHE:
                if sum(len(v) for v in ORACLE_CACHE.values()) + b > ORACLE_CACHE_MAX:
                    ORACLE_CACHE.clear()
                sp = spectral(batch.X, batch.y, batch.x_query)
                ORACLE_CACHE[k] = np.asarray(
                    per_sequence_loss(oracle_predict(sp, batch.sigma), batch.y_query)
                )
            a = np.asarray(sliced(lambda part: _model_losses(P, Q, part), batch)) - ORACLE_CACHE[k]
        yield batch, a


def adjusted_per_sequence(
    P: Any,
    Q: Any,
    noise: Noise | str,
    n: int,
    d: int,
    key: jax.Array,
    sequences: int,
    chunk: int = CHUNK,
) -> np.ndarray:
    """Per-sequence adjusted losses ``(sequences,)`` of the universal model ``P, Q`` on fresh float64 sequences
    drawn chunk by chunk from ``key`` (:func:`batches`)."""
    return np.concatenate([a for _, a in adjusted_chunks(P, Q, noise, n, d, key, sequences, chunk)])


def tail_check(
    P: Any,
    Q: Any,
    noise: Noise | str,
    n: int,
    d: int,
    key: jax.Array,
    sequences: int = TAIL_SEQUENCES,
    chunk: int = CHUNK,
) -> dict[str, Any]:
    """The largest per-sequence adjusted loss of the universal model ``P, Q`` on ``sequences`` fresh float64
    sequences (chunked, so memory stays ``O(chunk · n · d)``), the count above :data:`TAIL_MAX`, whether it
    passes (every value finite and at most :data:`TAIL_MAX`), and the mean ± SE on those sequences (``None``
    where a value is not finite)."""
    a = adjusted_per_sequence(P, Q, noise, n, d, key, sequences, chunk)
    finite = bool(np.all(np.isfinite(a)))
    worst, above = float(np.max(a)) if finite else None, int(np.sum(~(a <= TAIL_MAX)))
    mean, se = (float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size))) if finite else (None, None)
    return {
        "sequences": int(sequences),
        "max": worst,
        "above": above,
        "mean": mean,
        "se": se,
        "limit": TAIL_MAX,
        "passed": finite and above == 0,
    }
