"""Memory estimates of the dominant arrays of the commands' computations, in bytes, and :func:`memory`, which compares
one with the memory available (:func:`available_memory`) before any work starts."""

from __future__ import annotations

from numerics.archive import memory_available
from numerics.errors import LintfError


def itemsize(dtype: str) -> int:
    """Bytes of one number of a training ``--dtype``."""
    return 8 if dtype == "float64" else 4


def train_bytes(
    seeds: int,
    batch: int,
    layers: int,
    heads: int,
    n: int,
    d: int,
    itemsize: int,
    eval_chunk: int = 8192,
) -> float:
    r"""Training's dominant arrays, bytes: ``2 · itemsize · K · (max(B, C) · L · a + L · H · p)`` with ``K`` seeds,
    ``B`` the batch, ``C`` the evaluation chunk, per sequence and layer ``a = 2(d+1)² + 2(n+1)(d+1)`` (the Gram
    matrix ``E``, its product ``G`` and the tokens ``Z``, ``C`` kept for the backward pass), per head
    ``p = 16 (d+1)²`` (``P, Q``, gradients, two Adam moments, times the rolled-back copies), and a factor 2
    for XLA's work space."""
    D = float(d) + 1
    act = max(batch, eval_chunk) * layers * (2 * D * D + 2 * (float(n) + 1) * D)
    return 2.0 * itemsize * seeds * (act + layers * heads * 16 * D * D)


def baselines_bytes(
    n: int, d: int, sequences: int, tune_sequences: int, chunk: int, nodes: int
) -> float:
    r"""Baselines' dominant float64 arrays, bytes: ``2 · 8 · (c · (n d + 3 d² + N d) + T · 4 d)`` with
    ``c = min(chunk, max(sequences, T))`` sequences at once (data, Gram matrix, its eigenvectors, ``N`` Bayes
    nodes) and the spectra of all ``T`` tuning sequences kept together."""
    c, d, T = float(min(chunk, max(sequences, tune_sequences))), float(d), float(tune_sequences)
    return 16.0 * (c * (float(n) * d + 3 * d * d + float(nodes) * d) + T * 4 * d)


def model_bytes(B: int, n: int, layers: int, d: int) -> float:
    r"""A saved model on ``B`` sequences (``predict``, ``inspect``), float64, bytes:
    ``2 · 8 · B · ((L + 3) · 2 (d+1)² + (n+1)(d+1))`` (per layer the state ``M`` and the Gram products)."""
    D = float(d) + 1
    return 16.0 * B * ((layers + 3) * 2 * D * D + (float(n) + 1) * D)


def available_memory() -> int:
    """Bytes this process may still allocate: :func:`numerics.archive.memory_available` (``MemAvailable``, the
    cgroup's remaining limit), and an accelerator's ``bytes_limit`` if JAX runs on one."""
    avail = [memory_available()]
    try:
        import jax  # lazy: start-up

        dev = jax.devices()[0]
        if dev.platform != "cpu":
            avail.append(int((dev.memory_stats() or {})["bytes_limit"]))
    except Exception:  # noqa: BLE001 - no accelerator, or one without memory statistics
        pass
    return max(min(avail), 0)


def _fmt(nbytes: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes / 2**10:.3g} KiB"


def memory(nbytes: float, what: str, lower: str) -> None:
    """Refuse a run whose estimate ``nbytes`` exceeds :func:`available_memory`; ``lower`` names the arguments."""
    avail = available_memory()
    if nbytes > avail:
        raise LintfError(
            f"{what} needs about {_fmt(nbytes)} of memory, more than the {_fmt(avail)} available; "
            f"lower {lower}"
        )
