r"""Adjusted evaluation loss with paired standard errors, per-variance profiles and per-layer read-outs.

The paper's metric (docs/model.md) is a method's loss minus the loss of ridge with the true
noise level (the *oracle*) on the same sequences:

.. math::

    \ell_\tau = \tfrac12 (y_{t,\tau} - \hat y_\tau)^2, \qquad
    \ell^{\rm or}_\tau = \tfrac12 \bigl(y_{t,\tau} - x_{t,\tau}^\top(\Sigma_\tau + \sigma_\tau^2 I)^{+}\alpha_\tau\bigr)^2,
    \qquad \text{adjusted} = \frac1N \sum_\tau (\ell_\tau - \ell^{\rm or}_\tau),

with standard error ``std(ℓ − ℓ^or)/√N`` of the *paired* difference (the oracle's own sampling
noise cancels). Sequences are drawn in chunks of ``chunk`` with key ``fold_in(key, i)`` for chunk
``i`` (a short chunk keeps the first sequences of a full draw, so a smaller run
evaluates a prefix of a larger one), so the data depend on
``(key, chunk)``, memory stays ``O(chunk · n · d)``, and the sampler compiles once per ``(chunk, n, d)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from numerics import data
from numerics.data import Batch, Noise
from numerics.baselines.spectral import Spectral, ridge_predict, spectral

#: Sequences per chunk: bounds memory (X is ``chunk·n·d`` floats) and fixes the data for a seed.
CHUNK = 20_000

PredictFn = Callable[[Batch, Spectral], Mapping[str, jax.Array]]

#: The float64 model passes run a chunk in slices of at most this many sequences (:func:`sliced`).
SLICE = 1000


def sliced(fn: Callable[..., jax.Array], *args: Any) -> jax.Array:
    """``fn(*args)`` on slices of at most :data:`SLICE` sequences (the leading axis of every array in ``args``; bind the
    parameters in ``fn``), joined on its output's last axis: the same numbers, each sequence's arithmetic being its own,
    sooner, a slice's intermediates staying in the CPU's cache (``python benchmarks/sliced_pass.py``)."""
    B = jax.tree_util.tree_leaves(args)[0].shape[0]
    return jnp.concatenate([fn(*jax.tree.map(lambda a: a[i:i + SLICE], args)) for i in range(0, B, SLICE)], -1)


def per_sequence_loss(pred: jax.Array, y_query: jax.Array) -> jax.Array:
    """``½ (y_t − ŷ)²``; ``pred`` may carry leading axes, e.g. ``(L+1, B)``."""
    return 0.5 * (y_query - pred) ** 2


@jax.jit
def oracle_predict(sp: Spectral, sigma: jax.Array) -> jax.Array:
    """Ridge with the true ``σ_τ``: ``x_tᵀ (Σ + σ_τ² I)⁺ α`` ``(B,)``."""
    return ridge_predict(sp, sigma**2)


@dataclass
class _Moments:
    """Running count, mean and centred sum of squares (Chan et al. merge), per leading index."""

    count: int = 0
    mean: np.ndarray | float = 0.0
    m2: np.ndarray | float = 0.0

    def add(self, x: np.ndarray) -> None:
        """Merge the values ``x (..., B)``.  A value near float64's largest (an exploding model's loss on one
        sequence) takes the centred sum of squares, hence the SE, to ``inf`` without a warning: that is the SE of
        such a sample, and :func:`tail_stats` gives the cell its reason to fail."""
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


#: A cell fails the paper's evaluation when one sequence's adjusted loss exceeds this (predicting ``ŷ = 0`` costs
#: ``½ y_t²``, a few hundred at most on 10⁶ sequences) ...
FAIL_MAX = 1e3
#: ... or when the standard error exceeds this fraction of the mean (a few sequences carry the mean) ...
FAIL_SE_REL = 0.1
#: ... and this absolute value: a tenth of the resolution of a table printed to four decimals.  The floor acts
#: only on a mean below ``SE_FLOOR / FAIL_SE_REL = 10⁻⁴``, a near-perfect model at σ = 0, whose mean of about
#: 10⁻⁶ is carried by rare ill-conditioned contexts at every sample size.  At 10⁵ sequences a single one above
#: about 1 still fails it.
SE_FLOOR = 1e-5
#: A sequence is in the tail when its adjusted loss exceeds this many times the median.
TAIL_FACTOR = 100.0


def se_settles(mean: float, se: float) -> bool:
    """The SE rule: a mean estimate counts when its SE is at most :data:`FAIL_SE_REL` of it or at most
    :data:`SE_FLOOR`."""
    return bool(se <= max(FAIL_SE_REL * abs(mean), SE_FLOOR))


def tail_stats(adj: np.ndarray) -> dict[str, Any]:
    """Mean ± SE, median, largest value and the count above :data:`TAIL_FACTOR` × median of per-sequence adjusted
    losses ``adj (..., B)`` (leading axes, e.g. read-outs, give arrays), and why the last read-out fails (``None``
    when it passes): a value above :data:`FAIL_MAX`, an SE above :data:`FAIL_SE_REL` of the mean and above
    :data:`SE_FLOOR`, or a non-finite
    value."""
    a = np.asarray(adj, np.float64)
    fin = np.all(np.isfinite(a), axis=-1)
    med = np.median(a, axis=-1)
    with np.errstate(invalid="ignore", over="ignore"):  # a non-finite sequence fails below, with its reason
        out = {"mean": _py(a.mean(-1)), "se": _py(a.std(-1, ddof=1) / np.sqrt(a.shape[-1])), "median": _py(med),
               "max": _py(a.max(-1)), "above_100x_median": _py((a > TAIL_FACTOR * np.abs(med)[..., None]).sum(-1)),
               "sequences": int(a.shape[-1])}
    last = {k: (float(np.ravel(v)[-1]) if isinstance(v, np.ndarray) else v) for k, v in out.items()}
    reason = None
    if not np.ravel(fin)[-1]:
        reason = "a non-finite per-sequence loss"
    elif last["max"] > FAIL_MAX:
        reason = f"largest per-sequence adjusted loss {last['max']:.3g} > {FAIL_MAX:g}"
    elif not se_settles(last["mean"], last["se"]):
        reason = f"SE {last['se']:.3g} > {FAIL_SE_REL:g} × mean {last['mean']:.3g} and > {SE_FLOOR:g}"
    return out | {"failed": reason}


@dataclass
class LossAccumulator:
    """Accumulates raw and oracle-adjusted losses of several methods over chunks; ``keep`` also keeps every
    per-sequence adjusted loss for :func:`tail_stats` (``"tail"`` in :meth:`result`)."""

    against: str | None = None  # optional second reference: also accumulate ℓ_m − ℓ_against, paired
    keep: bool = False
    raw: dict[str, _Moments] = field(default_factory=dict)
    adj: dict[str, _Moments] = field(default_factory=dict)
    rel: dict[str, _Moments] = field(default_factory=dict)
    kept: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def add(self, preds: Mapping[str, jax.Array], y_query: jax.Array, oracle_pred: jax.Array) -> None:
        lo = np.asarray(per_sequence_loss(oracle_pred, y_query))
        losses = {name: np.asarray(per_sequence_loss(p, y_query)) for name, p in preds.items()}
        for name, lm in losses.items():
            self.raw.setdefault(name, _Moments()).add(lm)
            self.adj.setdefault(name, _Moments()).add(lm - lo)
            if self.keep:
                self.kept.setdefault(name, []).append(np.asarray(lm - lo, np.float64))
            if self.against is not None:
                self.rel.setdefault(name, _Moments()).add(lm - losses[self.against])

    def result(self) -> dict[str, dict]:
        """``{name: {"loss", "se", "raw", "raw_se", "count"[, "minus_<against>", "minus_<against>_se"]}}``;
        arrays for multi-axis predictions."""
        out = {}
        for name in self.raw:
            a, r = self.adj[name], self.raw[name]
            out[name] = {"loss": _py(a.mean), "se": _py(a.se()), "raw": _py(r.mean), "raw_se": _py(r.se()),
                         "count": r.count}
            if self.against is not None:
                out[name] |= {f"minus_{self.against}": _py(self.rel[name].mean),
                              f"minus_{self.against}_se": _py(self.rel[name].se())}
            if self.keep:
                out[name]["tail"] = tail_stats(np.concatenate(self.kept[name], axis=-1))
        return out


def _py(x):  # noqa: ANN001, ANN202
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
#: :data:`BATCH_CACHE_BYTES` (then emptied).  A sweep evaluates model after model on the same keys: each stage of a
#: cell on the same pool and held-out sequences, and the cells of one noise and depth on the same tail-check
#: sequences.  Drawing a float64 chunk costs more than evaluating a deep model on it.
BATCH_CACHE: dict[tuple, Batch] = {}
BATCH_CACHE_BYTES = 2**32


#: From this size up, glibc serves an allocation by ``mmap`` and returns it to the system when it is freed.
MMAP_THRESHOLD = 16 << 20


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes (``mallopt(M_MMAP_THRESHOLD)``, as the environment variable
    ``MALLOC_MMAP_THRESHOLD_`` does at start-up); returns whether it was set.

    By default glibc raises the threshold to the size of each mmapped block freed, up to 32 MiB.  The chunks of
    :data:`BATCH_CACHE` (32 MB at ``n = 20, d = 10``) then come from the heap, and a sweep's churn of them fragments
    it until its resident memory is several times what it holds (docs/reproduce.md).  Does nothing off glibc, or
    when ``MALLOC_MMAP_THRESHOLD_`` is set: the user's choice stands."""
    import ctypes
    import os

    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return bool(getattr(libc, "mallopt", lambda *a: 0)(-3, int(threshold)))  # -3: M_MMAP_THRESHOLD


def _key_id(key: jax.Array) -> tuple[int, ...]:
    return tuple(np.asarray(jax.random.key_data(key)).ravel().tolist())


def chunk_batch(key: jax.Array, noise: Noise, i: int, b: int, n: int, d: int, chunk: int) -> Batch:
    """Chunk ``i`` of :func:`batches` (float64; call under float64): a full chunk drawn from ``fold_in(key, i)``
    (one compiled sampler per ``(chunk, n, d)``), of which the first ``b`` sequences are kept; a chunk drawn before
    comes from :data:`BATCH_CACHE`."""
    k = (_key_id(key), str(noise), int(n), int(d), int(chunk), int(i), int(b))
    if k not in BATCH_CACHE:
        batch = data.sample(jax.random.fold_in(key, i), noise, int(chunk), n, d, jnp.float64)
        batch = Batch(*(a[:b] for a in batch)) if b < int(chunk) else batch
        _keep(BATCH_CACHE, BATCH_CACHE_BYTES, k, batch)
    return BATCH_CACHE[k]


def _keep(cache: dict[tuple, Any], limit: int, key: tuple, value: Any) -> None:
    """``cache[key] = value``, emptying ``cache`` first where its arrays and ``value``'s would pass ``limit`` bytes."""
    if _nbytes(value) + sum(_nbytes(v) for v in cache.values()) > limit:
        cache.clear()
    cache[key] = value


def _nbytes(tree: Any) -> int:
    return sum(int(a.nbytes) for a in jax.tree_util.tree_leaves(tree))


def evaluate(predict: PredictFn, noise: Noise | str, sequences: int, n: int, d: int, key: jax.Array,
             chunk: int = CHUNK, against: str | None = None, tails: bool = False) -> dict[str, dict]:
    """Adjusted loss ± SE of every prediction ``predict(batch, spectra)`` returns (call under float64).

    With ``against`` (one of the returned names) also the paired difference to that method; with ``tails`` also
    each method's :func:`tail_stats` (``"tail"``)."""
    acc = LossAccumulator(against=against, keep=tails)
    for batch, sp in batches(key, noise, sequences, n, d, chunk):
        acc.add(predict(batch, sp), batch.y_query, oracle_predict(sp, batch.sigma))
    return acc.result()


def sigma_grid(noise: Noise | str, points: int = 17, beyond: float = 1.0) -> np.ndarray:
    """``σ`` grid ``[0, σ_max + beyond]`` for per-variance profiles (past the training range, as Fig. 2)."""
    noise = Noise.parse(noise)
    if int(points) < 2:
        raise ValueError(f"points must be >= 2, got {points}")
    if not np.isfinite(beyond) or beyond < 0:
        raise ValueError(f"beyond must be finite and >= 0, got {beyond}")
    return np.linspace(0.0, noise.sigma_max + beyond, int(points))


def profile(predict: PredictFn, sigmas, n: int, d: int, sequences: int, key: jax.Array,
            chunk: int = CHUNK) -> dict[str, dict]:
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
    return {name: {k: np.stack([np.asarray(p[name][k]) for p in per], -1) for k in keys} | {"sigma": sig}
            for name in per[0]}


#: The chunks of :func:`profile` drawn so far, each with its spectral statistics and the oracle's predictions, by key,
#: point, σ, sizes and chunk index, up to :data:`PROFILE_CACHE_BYTES` (then emptied).  A sweep profiles every cell of
#: a noise setting on the same sequences, and a chunk costs more to draw than a model costs to evaluate on it.
PROFILE_CACHE: dict[tuple, tuple[Batch, Spectral, jax.Array]] = {}
PROFILE_CACHE_BYTES = 2**30


def sigma_chunk(key: jax.Array, j: int, s: float, i: int, b: int, n: int, d: int,
                chunk: int) -> tuple[Batch, Spectral, jax.Array]:
    """Chunk ``i`` of :func:`profile`'s point ``j`` (noise ``σ = s``), its spectral statistics and the oracle's
    predictions (call under float64): a full chunk drawn from ``fold_in(fold_in(key, j), i)``, of which the first
    ``b`` sequences are kept; a chunk drawn before comes from :data:`PROFILE_CACHE`."""
    k = (_key_id(key), int(j), float(s), int(n), int(d), int(chunk), int(i), int(b))
    if k not in PROFILE_CACHE:
        # the inputs' distribution passed as :func:`numerics.data.sample` passes it: jit keys its cache on how the
        # arguments are given, and a default left out would compile the sampler a second time
        batch = data.sample_with_sigma(jax.random.fold_in(jax.random.fold_in(key, j), i),
                                       jnp.full((chunk,), s, jnp.float64), n, d, jnp.float64, data.NORMAL_X)
        batch = Batch(*(a[:b] for a in batch)) if b < chunk else batch
        sp = spectral(batch.X, batch.y, batch.x_query)
        _keep(PROFILE_CACHE, PROFILE_CACHE_BYTES, k, (batch, sp, oracle_predict(sp, batch.sigma)))
    return PROFILE_CACHE[k]


def layer_losses(reads: jax.Array, batch: Batch) -> dict[str, np.ndarray]:
    """Adjusted loss ± SE of per-layer read-outs ``reads (L+1, B)`` (``models.predict(..., all_layers=True)``)."""
    if reads.ndim != 2 or reads.shape[1] != batch.y_query.shape[0]:
        raise ValueError(f"reads must have shape (L+1, B) with B={batch.y_query.shape[0]}, got {tuple(reads.shape)}")
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
    return model_losses(P, Q, batch) - per_sequence_loss(oracle_predict(sp, batch.sigma), batch.y_query)


def model_losses(P: jax.Array, Q: jax.Array, batch: Batch) -> jax.Array:
    """Per-sequence losses ``½(y_t − ŷ)²`` ``(B,)`` of the universal model ``P, Q`` (call under float64)."""
    from numerics.models.forward import predict_fast
    from numerics.models import Full

    return per_sequence_loss(predict_fast(Full(P, Q), batch.X, batch.y, batch.x_query), batch.y_query)


_model_losses = jax.jit(model_losses)  # one program per chunk shape, for every model of that depth

#: The oracle's per-sequence losses of every chunk :func:`adjusted_chunks` has drawn, by key, noise, sizes and chunk
#: index.  They do not depend on the model, and a sweep evaluates model after model on the same keys (the stages'
#: pool, the held-out sequences, the tail check): the eigendecompositions are a third of an evaluation.
#: 8 bytes a sequence; cleared when it passes :data:`ORACLE_CACHE_MAX` sequences.
ORACLE_CACHE: dict[tuple, np.ndarray] = {}
ORACLE_CACHE_MAX = 2**26


def adjusted_chunks(P: Any, Q: Any, noise: Noise | str, n: int, d: int, key: jax.Array, sequences: int,
                    chunk: int = CHUNK):
    """Yield ``(Batch, adjusted losses)`` of the universal model ``P, Q`` chunk by chunk, on the float64 sequences
    of :func:`batches`; the same numbers as :func:`adjusted_full` on each chunk, with the oracle's part cached
    (:data:`ORACLE_CACHE`)."""
    noise = Noise.parse(noise)
    data.check_sizes(n, d, sequences)
    base = (_key_id(key), str(noise), int(n), int(d), int(chunk))
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
                ORACLE_CACHE[k] = np.asarray(per_sequence_loss(oracle_predict(sp, batch.sigma), batch.y_query))
            a = np.asarray(sliced(lambda part: _model_losses(P, Q, part), batch)) - ORACLE_CACHE[k]
        yield batch, a


def adjusted_per_sequence(P: Any, Q: Any, noise: Noise | str, n: int, d: int, key: jax.Array, sequences: int,
                          chunk: int = CHUNK) -> np.ndarray:
    """Per-sequence adjusted losses ``(sequences,)`` of the universal model ``P, Q`` on fresh float64 sequences
    drawn chunk by chunk from ``key`` (:func:`batches`)."""
    return np.concatenate([a for _, a in adjusted_chunks(P, Q, noise, n, d, key, sequences, chunk)])


def tail_check(P: Any, Q: Any, noise: Noise | str, n: int, d: int, key: jax.Array,
               sequences: int = TAIL_SEQUENCES, chunk: int = CHUNK) -> dict[str, Any]:
    """The largest per-sequence adjusted loss of the universal model ``P, Q`` on ``sequences`` fresh float64
    sequences (chunked, so memory stays ``O(chunk · n · d)``), the count above :data:`TAIL_MAX`, whether it
    passes (every value finite and at most :data:`TAIL_MAX`), and the mean ± SE on those sequences (``None``
    where a value is not finite)."""
    a = adjusted_per_sequence(P, Q, noise, n, d, key, sequences, chunk)
    finite = bool(np.all(np.isfinite(a)))
    worst, above = float(np.max(a)) if finite else None, int(np.sum(~(a <= TAIL_MAX)))
    mean, se = (float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size))) if finite else (None, None)
    return {"sequences": int(sequences), "max": worst, "above": above, "mean": mean, "se": se,
            "limit": TAIL_MAX, "passed": finite and above == 0}
