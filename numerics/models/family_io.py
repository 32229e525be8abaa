r"""The saved-model format of the family's members, beside the universal one (docs/saved-models.md).

A member model is an ``.npz`` holding its native arrays under their field names (``W_V``, ``W_Q``,
``W_K``, ``gamma_logit``, ``w_alpha``, ``b_alpha``, ``W_alpha``, ``w_beta``, ``b_beta``:
:mod:`numerics.models.family`) and a JSON string ``meta`` whose ``"kind"`` names the member.  It
holds no ``P`` or ``Q``: a member has no universal form, so no reader of universal files can take it
for a FULL model.  A universal file (FULL, DIAG, GD++) is read exactly as before by
:func:`numerics.model_file.load_model`; :func:`load_any` reads either.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from numerics.archive import npz_directory, read_npz
from numerics.errors import LintfError
from numerics.io import atomic_savez, check_real_finite, parse_json
from numerics.model_file import load_model
from numerics.models.family import MEMBER_OBJECTS, MemberKind
from numerics.models.kinds import Full, Kind, kind_of


class Saved(NamedTuple):
    """A model file's kind, native parameters (FULL's ``P, Q`` for a universal file) and
    ``meta``."""

    kind: Kind
    params: Any
    meta: dict[str, Any]


def save_member(
    path: str | os.PathLike[str],
    params: Any,
    meta: dict[str, Any] | None = None,
    exclusive: bool = False,
) -> None:
    """Save a member's native parameters (float64) with ``meta["kind"]`` set to its name,
    atomically."""
    kind = kind_of(params)
    if not isinstance(kind, MemberKind):
        raise LintfError(
            f"save_member saves family members; a {kind.name} model goes through "
            "numerics.model_file.save_model"
        )
    arrays = {k: np.asarray(v, np.float64) for k, v in params._asdict().items()}
    for k, a in arrays.items():
        if not np.all(np.isfinite(a)):
            raise LintfError(f"refusing to save a {kind.name} model with non-finite {k}")
    atomic_savez(
        path, exclusive, meta=np.asarray(json.dumps((meta or {}) | {"kind": kind.name})), **arrays
    )


def _member_meta(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``meta`` of a member file at ``path``; ``None`` for a file without a member's
    ``meta["kind"]`` (no ``.npz`` archive, one with ``P``, or a ``meta`` that is no JSON object).
    An archive that breaks a check of :func:`numerics.archive.npz_directory` is a one-line error."""
    try:
        if not Path(path).is_file():  # never opened: a FIFO would block
            return None
        with open(path, "rb") as f:
            if f.read(2) != b"PK":
                return None
    except OSError:  # unreadable: the reader of universal files names it
        return None
    what = f"model file {str(path)!r}"
    names = npz_directory(path, what)
    if "P" in names or "meta" not in names:
        return None
    raw = read_npz(path, what, ("meta",))["meta"]
    if raw.dtype.kind not in "US" or raw.ndim != 0:
        return None
    try:
        meta = parse_json(str(raw), f"{what}: meta")
    except LintfError:
        return None
    return meta if isinstance(meta, dict) and meta.get("kind") in MEMBER_OBJECTS else None


def expected_shapes(kind: MemberKind, L: int, H: int, D: int, r: int) -> dict[str, tuple[int, ...]]:
    """Each native array's shape for ``L`` layers of ``H`` heads, tokens of size ``D = d+1`` and key
    dimension ``r`` (``D`` for the members whose keys are the tokens)."""
    r = r if kind.keys else D
    shapes = {
        "W_V": (D, D),
        "W_K": (r, D),
        "W_Q": (r, D),
        "gamma_logit": (),
        "w_alpha": (D,),
        "b_alpha": (),
        "W_alpha": (r, D),
        "w_beta": (D,),
        "b_beta": (),
    }
    if kind.vector_gate:
        shapes["b_alpha"] = (r,)
    return {f: (L, H, *shapes[f]) for f in kind.params_type._fields}


def is_member_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a family member's model file (an ``.npz`` without ``P`` whose
    ``meta["kind"]`` is a member)."""
    return _member_meta(path) is not None


def load_member(path: str | os.PathLike[str]) -> Saved:
    """A member model file: its kind, native parameters (float64 JAX arrays) and ``meta``; one-line
    errors for a missing, misshapen or non-finite array."""
    meta = _member_meta(path)
    if meta is None:
        raise LintfError(
            f"model file {str(path)!r} is not a family member's file (no meta kind among "
            f"{', '.join(MEMBER_OBJECTS)})"
        )
    kind = MEMBER_OBJECTS[meta["kind"]]
    fields = kind.params_type._fields
    z = read_npz(path, f"model file {str(path)!r}", fields)
    missing = [f for f in fields if f not in z]
    if missing:
        raise LintfError(
            f"model file {str(path)!r} ({kind.name}) lacks arrays {', '.join(missing)}"
        )
    arrays = {f: check_real_finite(f"model file {str(path)!r}: {f}", z[f]) for f in fields}
    L, H, D = arrays["W_V"].shape[:3] if arrays["W_V"].ndim == 4 else (0, 0, 0)
    r = arrays["W_Q"].shape[2] if arrays["W_Q"].ndim == 4 else 0
    for f, shape in expected_shapes(kind, L, H, D, r).items():
        if min(L, H, D, r) < 1 or arrays[f].shape != shape:
            raise LintfError(
                f"model file {str(path)!r} ({kind.name}): {f} has shape {arrays[f].shape}, "
                f"expected {shape}"
            )
    return Saved(kind, kind.params_type(**{f: jnp.asarray(a) for f, a in arrays.items()}), meta)


def load_any(path: str | os.PathLike[str]) -> Saved:
    """A member file (:func:`load_member`) or a universal one
    (:func:`numerics.model_file.load_model`, as FULL's ``P, Q``)."""
    if _member_meta(path) is not None:
        return load_member(path)
    P, Q, meta = load_model(path)
    return Saved(kind_of("full"), Full(jnp.asarray(P), jnp.asarray(Q)), meta)
