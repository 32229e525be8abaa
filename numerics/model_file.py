r"""The universal model file.

A saved model is an ``.npz`` that always holds ``P`` and ``Q`` of shape ``(L, H, d+1, d+1)``:
they define the model exactly under the layer rule of docs/model.md.  Native parameters may be
stored beside them under other names, plus a JSON string ``meta``.  :func:`save_model` writes one
atomically (:func:`numerics.io.atomic_savez`); :func:`load_model` reads one through
:func:`numerics.archive.read_npz` and refuses ``P, Q`` that are not real or hold NaN/±inf.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from .archive import read_npz
from .errors import LintfError
from .io import atomic_savez, check_real_finite, parse_json


def save_model(
    path: str | os.PathLike[str],
    P: Any,
    Q: Any,
    meta: dict[str, Any] | None = None,
    exclusive: bool = False,
    **native: Any,
) -> None:
    """Save a model in the universal format (``P``, ``Q`` float64) with optional native
    parameters."""
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    if not (np.all(np.isfinite(P)) and np.all(np.isfinite(Q))):
        raise LintfError("refusing to save a model with non-finite P or Q")
    from lintf_theory import check_parameters  # lazy: start-up

    check_parameters(P, Q)
    atomic_savez(path, exclusive, P=P, Q=Q, meta=np.asarray(json.dumps(meta or {})), **native)


def _kind_named(z: Any) -> str | None:
    """The ``meta["kind"]`` of an open ``.npz`` without ``P, Q`` (a family member's file), else
    ``None``."""
    try:
        meta = parse_json(str(z["meta"]), "meta") if "meta" in z else None
    except LintfError:
        return None
    kind = meta.get("kind") if isinstance(meta, dict) else None
    return kind if isinstance(kind, str) and kind.isprintable() and len(kind) <= 40 else None


def load_model(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Load ``(P, Q, meta)`` from a universal ``.npz`` through :func:`read_npz` (only those three
    arrays); a one-line :class:`LintfError` if it is not one, ``meta`` included (a JSON object,
    :func:`~numerics.io.parse_json`)."""
    what = f"model file {str(path)!r}"
    z = read_npz(path, what, ("P", "Q", "meta"))
    if "P" not in z or "Q" not in z:
        kind = _kind_named(z)
        raise LintfError(
            f"{what} must hold arrays 'P' and 'Q'"
            + (
                f" (it is a {kind} model, which has no universal form: "
                "numerics.models.family_io.load_member reads it)"
                if kind
                else ""
            )
        )
    meta: Any = {}
    if "meta" in z:
        if z["meta"].dtype.kind not in "US" or z["meta"].ndim != 0:
            m = z["meta"]
            raise LintfError(
                f"{what}: meta must be a JSON string, got {m.dtype} of shape {m.shape}"
            )
        meta = parse_json(str(z["meta"]), f"{what}: meta")
        if not isinstance(meta, dict):
            raise LintfError(f"{what}: meta must be a JSON object, got {type(meta).__name__}")
    P = check_real_finite(f"{what}: P", z["P"])
    Q = check_real_finite(f"{what}: Q", z["Q"])
    from lintf_theory import check_parameters  # lazy: start-up

    try:
        check_parameters(P, Q)
    except ValueError as exc:  # its message names P or Q, not the file
        raise LintfError(f"{what}: {exc}") from None
    return P, Q, meta
