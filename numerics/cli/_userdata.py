r"""Reading user data files for ``lintf predict`` and ``lintf inspect`` (one-line errors, never a traceback).

A data file is an ``.npz`` holding

=============  ===========  =====================================================
array          shape        meaning (docs/model.md)
=============  ===========  =====================================================
``X``          ``(B,n,d)``  context inputs ``x_i``
``y``          ``(B,n)``    context targets ``y_i``
``x_query``    ``(B,d)``    query ``x_t``
``y_query``    ``(B,)``     optional: target ``y_t`` (then the loss is reported)
``sigma``      ``(B,)``     optional: noise level ``σ_τ`` (ridge reference of ``inspect``)
=============  ===========  =====================================================

and nothing else: another array is refused (:func:`numerics.cli.npzfiles.data_file`), since a misspelt
``y_query`` would go unused.
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from numerics.archive import read_npz
from numerics.cli.ranges import SIGMA_MAX
from numerics.errors import LintfError
from numerics.io import atomic_write_bytes, check_real_finite

REQUIRED = ("X", "y", "x_query")
OPTIONAL = ("y_query", "sigma")


def load_data(path: str, d: int | None = None) -> dict[str, np.ndarray]:
    """Load and validate a data file; ``d`` is the model's input dimension (checked if given)."""
    name = repr(str(path))
    raw = read_npz(path, f"data file {name}", (*REQUIRED, *OPTIONAL))
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise LintfError(
            f"data file {name} must hold arrays X (B,n,d), y (B,n), x_query (B,d); "
            f"missing: {', '.join(missing)}"
        )
    data: dict[str, np.ndarray] = {}
    for k, v in raw.items():
        data[k] = check_real_finite(f"data file {name}: array {k}", v)
    X = data["X"]
    if X.ndim != 3 or min(X.shape) < 1:
        raise LintfError(
            f"data file {name}: X must have shape (B, n, d) with B, n, d >= 1, got {X.shape}"
        )
    B, n, dx = X.shape
    want = {"y": (B, n), "x_query": (B, dx), "y_query": (B,), "sigma": (B,)}
    for k, shape in want.items():
        if k in data and data[k].shape != shape:
            raise LintfError(
                f"data file {name}: {k} must have shape {shape} to match X {X.shape}, "
                f"got {data[k].shape}"
            )
    if "sigma" in data and not np.all((data["sigma"] >= 0) & (data["sigma"] <= SIGMA_MAX)):
        raise LintfError(f"data file {name}: sigma must be >= 0 and <= {SIGMA_MAX:g}")
    if d is not None and dx != d:
        raise LintfError(
            f"model has input dimension d={d} (P is (L, H, {d + 1}, {d + 1})) "
            f"but data file {name} has d={dx} (X is {X.shape})"
        )
    return data


def save_array(path: str, arr: Any) -> None:
    """``np.save`` to exactly ``path``, atomically and never over a file (:func:`save_bytes`)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr))
    save_bytes(path, buf.getvalue())


def save_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to the new file ``path`` atomically, never over a file (:func:`numerics.io.atomic_write_bytes`,
    ``exclusive``); one-line error if it cannot."""
    if os.path.isdir(path):
        raise LintfError(f"output path {str(path)!r} is a directory; give a file name")
    try:
        atomic_write_bytes(path, data, exclusive=True)
    except OSError as exc:
        raise LintfError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
