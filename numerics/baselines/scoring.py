r"""The sequences every method is scored on and the oracle-paired loss: fresh float64 sequences in
chunks.

A method's adjusted loss (docs/model.md) is its loss minus that of ridge with the true noise level,
the *oracle*, on the same sequences, with the standard error of the *paired* difference.  This
module holds what that needs below the models: the chunked, cached draw of evaluation sequences
(:func:`batches`, :func:`chunk_batch`), the oracle's prediction (:func:`oracle_predict`), the
running accumulator of adjusted losses (:class:`LossAccumulator`, :func:`tail_stats`) and the loop
over a predictor (:func:`evaluate`).  The baselines' table (:func:`numerics.baselines.table`) is
scored with it, and :mod:`numerics.evaluate.losses` builds the models' evaluation on it (and
re-exports these names).

Sequences are drawn in chunks of ``chunk`` with key ``fold_in(key, i)`` for chunk ``i`` (a short
chunk keeps the first sequences of a full draw, so a smaller run evaluates a prefix of a larger
one), so the data depend on ``(key, chunk)``, memory stays ``O(chunk · n · d)``, and the sampler
compiles once per ``(chunk, n, d)``.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from numerics import data
from numerics.baselines.spectral import Spectral, ridge_predict, spectral
from numerics.data import Batch, Noise

#: Sequences per chunk: bounds memory (X is ``chunk·n·d`` floats) and fixes the data for a seed.
CHUNK = 20_000

PredictFn = Callable[[Batch, Spectral], Mapping[str, jax.Array]]


def per_sequence_loss(pred: jax.Array, y_query: jax.Array) -> jax.Array:
    """``½ (y_t − ŷ)²``; ``pred`` may carry leading axes, e.g. ``(L+1, B)``."""
    return 0.5 * (y_query - pred) ** 2


@jax.jit
def oracle_predict(sp: Spectral, sigma: jax.Array) -> jax.Array:
    """Ridge with the true ``σ_τ``: ``x_tᵀ (Σ + σ_τ² I)⁺ α`` ``(B,)``."""
    return ridge_predict(sp, sigma**2)


@dataclass
class Moments:
    """Running count, mean and centred sum of squares (Chan et al. merge), per leading index."""

    count: int = 0
    mean: np.ndarray | float = 0.0
    m2: np.ndarray | float = 0.0

    def add(self, x: np.ndarray) -> None:
        """Merge the values ``x (..., B)``.  A value near float64's largest (an exploding model's
        loss on one sequence) takes the centred sum of squares, hence the SE, to ``inf`` without a
        warning: that is the SE of such a sample, and :func:`tail_stats` gives the cell its reason
        to fail."""
        x = np.asarray(x, dtype=np.float64)
        nb = x.shape[-1]
        tot = self.count + nb
        with np.errstate(over="ignore", invalid="ignore"):
            mb = x.mean(-1)
            m2b = ((x - mb[..., None]) ** 2).sum(-1)
            delta = mb - self.mean
            self.mean = self.mean + delta * nb / tot
            self.m2 = self.m2 + m2b + delta**2 * self.count * nb / tot
        self.count = tot

    def se(self) -> np.ndarray:
        return np.sqrt(self.m2 / max(self.count - 1, 1) / self.count)


#: A cell fails the paper's evaluation when one sequence's adjusted loss exceeds this (predicting
#: ``ŷ = 0`` costs ``½ y_t²``, a few hundred at most on 10⁶ sequences) ...
FAIL_MAX = 1e3
#: ... or when the standard error exceeds this fraction of the mean (a few sequences carry it) ...
FAIL_SE_REL = 0.1
#: ... and this absolute value: a tenth of the resolution of a table printed to four decimals.  The
#: floor acts only on a mean below ``SE_FLOOR / FAIL_SE_REL = 10⁻⁴``, a near-perfect model at σ = 0,
#: whose mean of about 10⁻⁶ is carried by rare ill-conditioned contexts at every sample size.  At
#: 10⁵ sequences a single one above about 1 still fails it.
SE_FLOOR = 1e-5
#: A sequence is in the tail when its adjusted loss exceeds this many times the median.
TAIL_FACTOR = 100.0


def se_settles(mean: float, se: float) -> bool:
    """The SE rule: a mean estimate counts when its SE is at most :data:`FAIL_SE_REL` of it or at
    most :data:`SE_FLOOR`."""
    return bool(se <= max(FAIL_SE_REL * abs(mean), SE_FLOOR))


def tail_stats(adj: np.ndarray) -> dict[str, Any]:
    """Mean ± SE, median, largest value and the count above :data:`TAIL_FACTOR` × median of
    per-sequence adjusted losses ``adj (..., B)`` (leading axes, e.g. read-outs, give arrays), and
    why the last read-out fails (``None`` when it passes): a value above :data:`FAIL_MAX`, an SE
    above :data:`FAIL_SE_REL` of the mean and above :data:`SE_FLOOR`, or a non-finite value."""
    a = np.asarray(adj, np.float64)
    fin = np.all(np.isfinite(a), axis=-1)
    med = np.median(a, axis=-1)
    # a non-finite sequence fails below, with its reason
    with np.errstate(invalid="ignore", over="ignore"):
        out = {
            "mean": as_python(a.mean(-1)),
            "se": as_python(a.std(-1, ddof=1) / np.sqrt(a.shape[-1])),
            "median": as_python(med),
            "max": as_python(a.max(-1)),
            "above_100x_median": as_python((a > TAIL_FACTOR * np.abs(med)[..., None]).sum(-1)),
            "sequences": int(a.shape[-1]),
        }
    last = {k: (float(np.ravel(v)[-1]) if isinstance(v, np.ndarray) else v) for k, v in out.items()}
    reason = None
    if not np.ravel(fin)[-1]:
        reason = "a non-finite per-sequence loss"
    elif last["max"] > FAIL_MAX:
        reason = f"largest per-sequence adjusted loss {last['max']:.3g} > {FAIL_MAX:g}"
    elif not se_settles(last["mean"], last["se"]):
        reason = (
            f"SE {last['se']:.3g} > {FAIL_SE_REL:g} × mean {last['mean']:.3g} and > {SE_FLOOR:g}"
        )
    return out | {"failed": reason}


@dataclass
class LossAccumulator:
    """Accumulates raw and oracle-adjusted losses of several methods over chunks; ``keep`` also
    keeps every per-sequence adjusted loss for :func:`tail_stats` (``"tail"`` in :meth:`result`)."""

    against: str | None = None  # optional second reference: also accumulate ℓ_m − ℓ_against, paired
    keep: bool = False
    raw: dict[str, Moments] = field(default_factory=dict)
    adj: dict[str, Moments] = field(default_factory=dict)
    rel: dict[str, Moments] = field(default_factory=dict)
    kept: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def add(
        self, preds: Mapping[str, jax.Array], y_query: jax.Array, oracle_pred: jax.Array
    ) -> None:
        lo = np.asarray(per_sequence_loss(oracle_pred, y_query))
        losses = {name: np.asarray(per_sequence_loss(p, y_query)) for name, p in preds.items()}
        for name, lm in losses.items():
            self.raw.setdefault(name, Moments()).add(lm)
            self.adj.setdefault(name, Moments()).add(lm - lo)
            if self.keep:
                self.kept.setdefault(name, []).append(np.asarray(lm - lo, np.float64))
            if self.against is not None:
                self.rel.setdefault(name, Moments()).add(lm - losses[self.against])

    def result(self) -> dict[str, dict]:
        """``{name: {"loss", "se", "raw", "raw_se", "count"[, "minus_<against>",
        "minus_<against>_se"]}}``; arrays for multi-axis predictions."""
        out = {}
        for name in self.raw:
            a, r = self.adj[name], self.raw[name]
            out[name] = {
                "loss": as_python(a.mean),
                "se": as_python(a.se()),
                "raw": as_python(r.mean),
                "raw_se": as_python(r.se()),
                "count": r.count,
            }
            if self.against is not None:
                out[name] |= {
                    f"minus_{self.against}": as_python(self.rel[name].mean),
                    f"minus_{self.against}_se": as_python(self.rel[name].se()),
                }
            if self.keep:
                out[name]["tail"] = tail_stats(np.concatenate(self.kept[name], axis=-1))
        return out


def as_python(x):  # noqa: ANN001, ANN202
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


def chunks(sequences: int, chunk: int = CHUNK) -> list[int]:
    """Chunk sizes covering ``sequences``."""
    if int(sequences) < 1:
        raise ValueError(f"sequences must be >= 1, got {sequences}")
    if int(chunk) < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    full, rest = divmod(int(sequences), int(chunk))
    return [int(chunk)] * full + ([rest] if rest else [])


def batches(key: jax.Array, noise: Noise | str, sequences: int, n: int, d: int, chunk: int = CHUNK):
    """Yield float64 ``(Batch, Spectral)`` chunks; deterministic in ``(key, chunk)``."""
    noise = Noise.parse(noise)
    data.check_sizes(n, d, sequences)
    for i, b in enumerate(chunks(sequences, chunk)):
        batch = chunk_batch(key, noise, i, b, n, d, chunk)
        yield batch, spectral(batch.X, batch.y, batch.x_query)


#: The float64 chunks :func:`chunk_batch` has drawn, by key, noise, sizes and chunk index, up to
#: :data:`BATCH_CACHE_BYTES` (then emptied).  A sweep evaluates model after model on the same keys:
#: each stage of a cell on the same pool and held-out sequences, and the cells of one noise and
#: depth on the same tail-check sequences.  Drawing a float64 chunk costs more than evaluating a
#: deep model on it.
BATCH_CACHE: dict[tuple, Batch] = {}
BATCH_CACHE_BYTES = 2**32


#: From this size up, glibc serves an allocation by ``mmap`` and returns it to the system when it is
#: freed.
MMAP_THRESHOLD = 16 << 20


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes (``mallopt(M_MMAP_THRESHOLD)``, as the
    environment variable ``MALLOC_MMAP_THRESHOLD_`` does at start-up); returns whether it was set.

    By default glibc raises the threshold to the size of each mmapped block freed, up to 32 MiB.
    The chunks of :data:`BATCH_CACHE` (32 MB at ``n = 20, d = 10``) then come from the heap, and a
    sweep's churn of them fragments it until its resident memory is several times what it holds
    (docs/reproduce.md).  Does nothing off glibc, or when ``MALLOC_MMAP_THRESHOLD_`` is set: the
    user's choice stands."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return bool(getattr(libc, "mallopt", lambda *a: 0)(-3, int(threshold)))  # -3: M_MMAP_THRESHOLD


def key_id(key: jax.Array) -> tuple[int, ...]:
    return tuple(np.asarray(jax.random.key_data(key)).ravel().tolist())


def chunk_batch(key: jax.Array, noise: Noise, i: int, b: int, n: int, d: int, chunk: int) -> Batch:
    """Chunk ``i`` of :func:`batches` (float64; call under float64): a full chunk drawn from
    ``fold_in(key, i)`` (one compiled sampler per ``(chunk, n, d)``), of which the first ``b``
    sequences are kept; a chunk drawn before comes from :data:`BATCH_CACHE`."""
    k = (key_id(key), str(noise), int(n), int(d), int(chunk), int(i), int(b))
    if k not in BATCH_CACHE:
        batch = data.sample(jax.random.fold_in(key, i), noise, int(chunk), n, d, jnp.float64)
        batch = Batch(*(a[:b] for a in batch)) if b < int(chunk) else batch
        keep_within(BATCH_CACHE, BATCH_CACHE_BYTES, k, batch)
    return BATCH_CACHE[k]


def keep_within(cache: dict[tuple, Any], limit: int, key: tuple, value: Any) -> None:
    """``cache[key] = value``, emptying ``cache`` first where its arrays and ``value``'s would pass
    ``limit`` bytes."""
    if nbytes(value) + sum(nbytes(v) for v in cache.values()) > limit:
        cache.clear()
    cache[key] = value


def nbytes(tree: Any) -> int:
    return sum(int(a.nbytes) for a in jax.tree_util.tree_leaves(tree))


def evaluate(
    predict: PredictFn,
    noise: Noise | str,
    sequences: int,
    n: int,
    d: int,
    key: jax.Array,
    chunk: int = CHUNK,
    against: str | None = None,
    tails: bool = False,
) -> dict[str, dict]:
    """Adjusted loss ± SE of every prediction ``predict(batch, spectra)`` returns (call under
    float64).

    With ``against`` (one of the returned names) also the paired difference to that method; with
    ``tails`` also each method's :func:`tail_stats` (``"tail"``)."""
    acc = LossAccumulator(against=against, keep=tails)
    for batch, sp in batches(key, noise, sequences, n, d, chunk):
        acc.add(predict(batch, sp), batch.y_query, oracle_predict(sp, batch.sigma))
    return acc.result()
