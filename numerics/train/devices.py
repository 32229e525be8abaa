r"""One XLA device per core on a CPU host: how the ``lintf`` command uses every core.

XLA's CPU backend runs the training step's many small ``(d+1)×(d+1)`` batched products on one
thread.  Split into several host devices (``--xla_force_host_platform_device_count``), the batch is
sharded across them by :func:`numerics.train.objective.batch_sharding` and the cores work in
parallel.  ``lintf bench`` times the plain pass on one device and on the split host side by side,
which measures the gain on the machine at hand (``docs/experiments/throughput.md``).  The flag only
shapes the CPU platform; on a GPU machine the GPU stays the default device.

The console command calls :func:`configure` and :func:`full_precision` before JAX is imported.
Library code and tests are left alone: whoever imports JAX first decides.  ``LINTF_HOST_DEVICES=N``
chooses ``N`` (``1`` turns the split off), and an ``XLA_FLAGS`` that already sets the count wins
over both.  The count is part of a run's arithmetic (the batch is reduced in ``N`` parts), so a run
records it and the same command on the same machine repeats its numbers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

ENV = "LINTF_HOST_DEVICES"
PRECISION_ENV = "JAX_DEFAULT_MATMUL_PRECISION"
FLAG = "--xla_force_host_platform_device_count"
#: The most host devices ``LINTF_HOST_DEVICES`` may ask for: XLA sets up each one before any work.
MAX_COUNT = 64
#: at most this many host devices: the split helps while each device still holds a sizeable batch
MAX_DEVICES = 8
#: the flag :func:`configure` added to this process's ``XLA_FLAGS`` (``None``: it added none, or the
#: count was the user's); :func:`for_processes` takes it out again for processes that share the
#: cores
_added: str | None = None


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_count(n_cores: int | None = None) -> int:
    """The largest power of two not above ``min(cores, MAX_DEVICES)``: it divides the default batch
    2048."""
    limit = min(cores() if n_cores is None else n_cores, MAX_DEVICES)
    return 1 << (max(limit, 1).bit_length() - 1)


def configure(
    environ: MutableMapping[str, str] | None = None, jax_imported: bool | None = None
) -> int | None:
    """Add the host-device flag to ``XLA_FLAGS`` and return the count, or ``None`` where it is not
    ours to set (JAX already imported, or ``XLA_FLAGS`` names a count).  A bad
    ``LINTF_HOST_DEVICES`` is a one-line :class:`ValueError`."""
    environ = os.environ if environ is None else environ
    if jax_imported is None:
        jax_imported = "jax" in sys.modules
    flags = environ.get("XLA_FLAGS", "")
    if jax_imported or FLAG in flags:
        return None
    raw = environ.get(ENV)
    chosen = raw is not None and raw.strip() != ""
    if not chosen:
        n = default_count()
    else:
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if not 1 <= n <= MAX_COUNT:
            raise ValueError(
                f"{ENV} must be an integer in 1..{MAX_COUNT} (1 turns the split off), got {raw!r}"
            )
    if n > 1:
        environ["XLA_FLAGS"] = f"{flags} {FLAG}={n}".strip()
        if not chosen and environ is os.environ:
            global _added
            _added = f"{FLAG}={n}"  # the default's: the processes of --jobs get their share instead
    return n


def for_processes(
    jobs: int,
    environ: MutableMapping[str, str] | None = None,
    added: str | None = None,
    n_cores: int | None = None,
) -> dict[str, str]:
    """The environment of each of ``jobs`` processes that run side by side on this host: the cores
    are shared out, :func:`default_count` of ``cores // jobs`` host devices each (on 2 cores,
    ``--jobs 2`` gives each process one), instead of every process splitting every core.  A count
    the user chose (``LINTF_HOST_DEVICES``, or ``XLA_FLAGS`` naming one) is passed on as it is.
    ``added`` is the flag :func:`configure` put into ``environ`` (default: what it put into this
    process's environment)."""
    env = dict(os.environ if environ is None else environ)
    added = _added if added is None else added
    flags = env.get("XLA_FLAGS", "")
    ours = bool(added) and added in flags
    if (env.get(ENV) or "").strip() or (FLAG in flags and not ours):
        return env
    if ours:
        flags = " ".join(flags.replace(added, "").split())
        if flags:
            env["XLA_FLAGS"] = flags
        else:
            env.pop("XLA_FLAGS")
    env[ENV] = str(default_count((cores() if n_cores is None else n_cores) // max(1, int(jobs))))
    return env


def full_precision(
    environ: MutableMapping[str, str] | None = None, jax_imported: bool | None = None
) -> bool:
    """Ask JAX for float32 products at full precision on every device
    (``JAX_DEFAULT_MATMUL_PRECISION=highest``), before JAX is imported; returns whether it set it.
    A GPU otherwise multiplies float32 at reduced precision (TF32), so a model trained there would
    differ from the CPU's by more than rounding; a CPU computes float32 products at full precision
    either way.  A value the user set is left alone."""
    environ = os.environ if environ is None else environ
    if (jax_imported if jax_imported is not None else "jax" in sys.modules) or environ.get(
        PRECISION_ENV
    ):
        return False
    environ[PRECISION_ENV] = "highest"
    return True


def usable(devices: list, batch: int) -> list:
    """The longest prefix of ``devices`` whose length divides ``batch`` (a batch of 2049 trains on
    one device)."""
    k = len(devices)
    while batch % k:
        k -= 1
    return list(devices[:k])


#: The most bytes of compiled programs :func:`compile_cache` keeps (the least recently used go
#: first).
CACHE_BYTES = 1 << 30


def compile_cache(path: str | os.PathLike[str]) -> bool:
    """Keep every program XLA compiles in ``path`` (JAX's persistent compilation cache, at most
    :data:`CACHE_BYTES`), so that other processes given the same path load it instead of compiling
    it again; returns whether it set the cache.

    ``lintf reproduce`` keeps its programs under its ``--runs`` directory: the processes of
    ``--jobs`` train cells of the same models and depths, whose programs do not depend on the noise
    setting, and a resumed sweep meets the programs of the cells before.  A loaded program is the
    compiled program, so the numbers do not change.  The cache's file lock (the ``filelock``
    package) keeps one process from reading a program another is still writing; without the package,
    or where a cache directory is set already (``JAX_COMPILATION_CACHE_DIR``), nothing is set."""
    import jax  # lazy: start-up
    from jax.experimental.compilation_cache import compilation_cache  # lazy: start-up

    try:
        # JAX's cache locks with it once it has a size limit
        import filelock  # noqa: F401  # lazy: start-up
    except ImportError:
        return False
    if jax.config.jax_compilation_cache_dir:
        return False
    jax.config.update("jax_compilation_cache_dir", os.fspath(path))
    jax.config.update("jax_compilation_cache_max_size", CACHE_BYTES)
    # a sweep compiles hundreds of small ones
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    # a program compiled before this call has fixed the cache as unset
    compilation_cache.reset_cache()
    return True
