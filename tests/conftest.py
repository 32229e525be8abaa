"""Test configuration: float64, Hypothesis profiles, the trained models of the test run.

Profiles (select with ``HYPOTHESIS_PROFILE=dev|ci|slow``; ``ci`` is the default when ``CI`` is
set, else ``dev``).  ``deadline=None`` because JAX compiles on the first example.  ``ci`` is
derandomised so a CI run is reproducible; ``--hypothesis-seed=N`` fixes the seed for any profile.
Shared strategies, data and checks live in :mod:`tests.strategies`; heavy imports stay inside the
fixtures so that collecting a single light test module stays fast.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

# The suite is compile-bound: most of its time is XLA compiling many small programs once each.  Its
# processes (and the command-line subprocesses they start, which inherit the environment) compile
# with LLVM's optimisation off; XLA's own graph passes still run, and LLVM without fast-math flags
# keeps IEEE arithmetic: the numbers agree with an optimised build's to rounding, not bit for bit
# (LLVM's optimiser contracts and vectorises).  The one check of bytes the product computes,
# ``tests/test_model_digest.py``, runs them in a process of the product's own flags
# (:func:`product_env`).  A third less compile time (``tests/train/test_step.py``: 57 s → 38 s on
# one process).  XLA's older fusion code generator (``use_fusion_emitters=false``) compiles the
# suite's small programs in about a quarter less CPU time again (four compile-bound files, one
# process: 110–121 s → 82–92 s of user time).  Set before JAX creates its backend.
_FAST_COMPILE = (
    "--xla_backend_optimization_level=0",
    "--xla_llvm_disable_expensive_passes=true",
    "--xla_cpu_use_fusion_emitters=false",
)
# The flags the user's environment gave, kept where the test processes and subprocesses this one
# starts find them (they inherit the fast-compile flags with the rest of the environment).
os.environ.setdefault("LINTF_TESTS_PRODUCT_XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
_PRODUCT_XLA_FLAGS = os.environ["LINTF_TESTS_PRODUCT_XLA_FLAGS"]
os.environ["XLA_FLAGS"] = " ".join(
    [_PRODUCT_XLA_FLAGS, *(f for f in _FAST_COMPILE if f.split("=")[0] not in _PRODUCT_XLA_FLAGS)]
).strip()

import jax  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

if TYPE_CHECKING:
    from tests.strategies import TrainedModel

# Verification runs in float64; training code states float32 explicitly where it wants it.
jax.config.update("jax_enable_x64", True)

# One JAX compilation cache for the whole test run: many tests compile the same small programs (a tiny sweep, a
# tiny training run) in new closures, and most of their time is compilation.  The directory is made by the first
# process (the xdist controller) and removed when it exits; the workers and the CLI subprocesses the tests start
# inherit it through JAX's own environment variables.  A cache hit is the same executable, so numbers do not change.
_CACHE_ENV = {
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
}
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="lintf-test-jax-cache-")
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache
for _k, _v in _CACHE_ENV.items():
    os.environ.setdefault(_k, _v)
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update(
    "jax_persistent_cache_min_compile_time_secs",
    float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]),
)
jax.config.update(
    "jax_persistent_cache_min_entry_size_bytes",
    int(os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"]),
)

_common = dict(deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=25, **_common)
settings.register_profile("ci", max_examples=25, derandomize=True, **_common)
settings.register_profile("slow", max_examples=200, **_common)
# For checking that a deliberately broken build fails: report the first failure without shrinking.
settings.register_profile(
    "noshrink", max_examples=25, phases=[Phase.explicit, Phase.reuse, Phase.generate], **_common
)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)

TRAINED = Path(__file__).parent / "data" / "trained"

# The test files that take longest (``pytest --durations=0``), started first.  ``make test`` splits the
# collection between its two processes in two halves, and a process that has run out of tests takes
# the last ones still waiting for the other (``--dist worksteal``); collected alphabetically, the
# longest files came last (``tests/train/``), where they were the ones left to share at the end.
# Started first, they leave the short files to balance the two processes.  Only the order changes.
START_FIRST = (
    "tests/testing/test_family.py",
    "tests/baselines/test_ridge.py",
    "tests/train/test_step.py",
    "tests/train/test_devices.py",
    "tests/cli/test_family_cli.py",
    "tests/reproduce/test_cell.py",
    "tests/testing/test_theorem.py",
    "tests/baselines/test_gdpp_fit.py",
    "tests/baselines/test_bayes.py",
    "tests/models/test_family.py",
    "tests/test_model_digest.py",
    "tests/cli/test_interrupts.py",
    "tests/evaluate/test_losses.py",
    "tests/reproduce/test_executor.py",
    "tests/train/test_objective.py",
    "tests/cli/test_own_data.py",
    "tests/cli/test_hostile_files.py",
    "tests/train/test_loop.py",
    "tests/theory/test_gdpp_floor.py",
    "tests/baselines/test_gdpp_floor.py",
    "tests/reproduce/test_floor.py",
    "tests/train/test_scale_fit.py",
    "tests/train/test_schedule.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).parents[1]
    gone = [f for f in START_FIRST if not (root / f).is_file()]
    if gone:
        raise pytest.UsageError(f"tests/conftest.py START_FIRST names files that are gone: {gone}")
    rank = {f: i for i, f in enumerate(START_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable


def _trained_now(kind: str) -> TrainedModel:
    import jax.numpy as jnp
    import numpy as np

    from numerics import models
    from numerics.train.config import TrainConfig
    from numerics.train.loop import train
    from tests.strategies import TRAINED_D, TRAINED_N, TrainedModel

    cfg = TrainConfig(
        model=kind,
        layers=3,
        noise="uniform:1",
        steps=100,
        batch=256,
        n=TRAINED_N,
        d=TRAINED_D,
        seeds=1,
        chunk=100,
        dtype="float64",
        select_sequences=256,
        eval_sequences=256,
    )
    # host arrays, as a loaded model's: the trained state lives on the training mesh, and every
    # operation on an array of another sharding compiles anew
    params = jax.tree_util.tree_map(
        lambda a: jnp.asarray(np.asarray(a[0])), train(cfg).state.params
    )
    return TrainedModel(kind, *models.universal(params, TRAINED_D), params)


@pytest.fixture(scope="session")
def product_env() -> dict[str, str]:
    """The environment of a subprocess that compiles as the product does: the suite's own, with
    ``XLA_FLAGS`` as it was before this file added the fast-compile flags."""
    return dict(os.environ) | {"XLA_FLAGS": _PRODUCT_XLA_FLAGS}


@pytest.fixture(scope="session")
def committed() -> dict[str, TrainedModel]:
    """``committed-{full,diag,gdpp}-3``: ``tests/data/trained/*.npz`` (universal ``P, Q``, ``d = 3``, three
    layers, ``uniform:1``), made by ``bash tests/data/trained/make.sh``; native parameters converted by
    ``models.from_universal``."""
    import jax.numpy as jnp

    from numerics import model_file, models
    from tests.strategies import TrainedModel

    out: dict[str, TrainedModel] = {}
    for path in sorted(TRAINED.glob("*.npz")):
        P, Q, meta = model_file.load_model(path)
        assert meta["kind"] in models.KINDS
        P, Q = jnp.asarray(P), jnp.asarray(Q)
        out[f"committed-{path.stem}"] = TrainedModel(
            meta["kind"], P, Q, models.from_universal(meta["kind"], P, Q)
        )
    assert {"committed-full-3", "committed-diag-3", "committed-gdpp-3"} <= set(out), (
        "committed models missing"
    )
    return out


@pytest.fixture(scope="session")
def trained(committed: dict[str, TrainedModel]) -> dict[str, TrainedModel]:
    """``name -> TrainedModel``: the ``committed`` models and ``run-{diag,gdpp}-3``, a short
    ``numerics.train.loop.train`` run (``d = 3``, ``n = 8``, three layers, ``uniform:1``), once per test
    run that asks for it; native parameters as trained."""
    return committed | {f"run-{kind}-3": _trained_now(kind) for kind in ("diag", "gdpp")}
