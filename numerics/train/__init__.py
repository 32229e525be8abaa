"""Training FULL / DIAG / GD++ linear transformers: scanned, vmapped over seeds, sharded, resumable.

:mod:`numerics.train.config` (the configuration, JAX-free), :mod:`numerics.train.objective` (batches and the loss),
:mod:`numerics.train.step` (the compiled step and its guards), :mod:`numerics.train.loop` (:func:`train`),
:mod:`numerics.train.rundir` (run directories), :mod:`numerics.train.devices` (host devices) and
:mod:`numerics.train.scale_fit` (the scale fit of a trained model).  What each choice does and why:
docs/training.md.

The names below load on first use, so that ``numerics.train.config`` and ``numerics.train.devices`` import
without JAX (the command line builds its parser, and sets the host devices, before JAX loads).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "config": (
        "GDPP_XX",
        "HISTORY",
        "INITS",
        "MAX_SKIPS",
        "TRUST_FLOOR",
        "TRUST_REGROW",
        "TRUST_STRIDE",
        "WARMUP_MIN",
        "Y_STEPS",
        "TrainConfig",
        "config_dict",
        "default_warmup",
    ),
    "objective": (
        "Aux",
        "batch_mesh",
        "batch_sharding",
        "data_key",
        "diag_part",
        "draw",
        "effective_params",
        "huber",
        "loss_fn",
        "noise_values",
        "static_config",
    ),
    "step": (
        "CHUNK_CACHE",
        "TrainState",
        "chunk_fn",
        "lr_at",
        "make_chunk",
        "optimizer",
        "place",
        "project",
        "y_moment",
        "y_step",
    ),
    "loop": (
        "Result",
        "adjusted_losses",
        "clear_caches",
        "finite_adjusted",
        "init_state",
        "nanmean",
        "train",
        "training_devices",
        "warm_params",
    ),
    "rundir": ("run",),
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)

if TYPE_CHECKING:  # the static view of the same names (documentation tools, type checkers)
    from numerics.train.config import (
        GDPP_XX,
        HISTORY,
        INITS,
        MAX_SKIPS,
        TRUST_FLOOR,  # noqa: F401
        TRUST_REGROW,
        TRUST_STRIDE,
        WARMUP_MIN,
        Y_STEPS,
        TrainConfig,
        config_dict,
        default_warmup,
    )
    from numerics.train.loop import (
        Result,
        adjusted_losses,
        clear_caches,
        finite_adjusted,
        init_state,  # noqa: F401
        nanmean,
        train,
        training_devices,
        warm_params,
    )
    from numerics.train.objective import (
        Aux,
        batch_sharding,
        data_key,
        diag_part,
        draw,
        effective_params,  # noqa: F401
        huber,
        loss_fn,
        noise_values,
        static_config,
    )
    from numerics.train.rundir import run  # noqa: F401
    from numerics.train.step import (
        CHUNK_CACHE,
        TrainState,
        chunk_fn,
        lr_at,
        make_chunk,
        optimizer,  # noqa: F401
        project,
        y_moment,
        y_step,
    )


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"numerics.train.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'numerics.train' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
