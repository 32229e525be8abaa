r"""Atomic file writes and the universal model format.

A saved model is an ``.npz`` that always holds ``P`` and ``Q`` of shape ``(L, H, d+1, d+1)``:
they define the model exactly under the layer rule of docs/model.md.  Native parameters may be
stored beside them under other names, plus a JSON string ``meta``.  :func:`load_model` refuses
``P, Q`` that are not real or hold NaN/±inf.
"""

from __future__ import annotations

import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .errors import LintfError


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` via a temporary file beside it (never a half-written file).  ``exclusive``: never
    replace a file at ``path``, even one created after the caller checked that there was none (a hard link, which
    fails if ``path`` exists, where the file system has them): a one-line error instead."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise LintfError(f"cannot write to {str(parent)!r}: {exc.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; give the usual permissions
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if exclusive:
            _link_new(tmp, path)
        else:
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _link_new(tmp: str, path: Path) -> None:
    """Give the finished temporary file ``tmp`` the name ``path`` unless a file holds that name; remove ``tmp``."""
    taken = LintfError(f"{str(path)!r} appeared while this command ran; it is left as it is (nothing is overwritten)")
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise taken from None
    except OSError:  # no hard links on this file system: check, then rename
        if os.path.lexists(path):
            raise taken from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def set_aside(path: str | os.PathLike[str]) -> Path | None:
    """Rename the file or folder ``path`` to the first free ``<name>.replaced<k>`` beside it, so that nothing in it is
    lost and its place is free; returns the new path, ``None`` where ``path`` does not exist."""
    path = Path(path)
    if not path.exists():
        return None
    k = 1
    while path.with_name(f"{path.name}.replaced{k}").exists():
        k += 1
    return path.rename(path.with_name(f"{path.name}.replaced{k}"))


def atomic_write_text(path: str | os.PathLike[str], text: str, exclusive: bool = False) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode(), exclusive)


def strict_json(obj: Any, **kw: Any) -> str:
    """``json.dumps`` that writes strict JSON: a ``NaN`` or ``±inf`` float becomes ``null``, and a top-level object
    gains ``"null_reasons": {"path.to[3]": "nan" | "inf" | "-inf"}`` naming each one."""
    reasons: dict[str, str] = {}

    def clean(v: Any, at: str) -> Any:
        if isinstance(v, (float, np.floating)):
            if math.isfinite(v):
                return float(v)
            reasons[at] = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
            return None
        if isinstance(v, dict):
            return {k: clean(x, f"{at}.{k}" if at else str(k)) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x, f"{at}[{i}]") for i, x in enumerate(v)]
        return v

    out = clean(obj, "")
    if reasons and isinstance(out, dict):
        out["null_reasons"] = reasons
    return json.dumps(out, allow_nan=False, **kw)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The hex SHA-256 of a file's bytes: what a record keeps of a model file it was made from."""
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON file at ``path``; a corrupt one is a one-line error that names it (the files lintf reads back are
    its own, made again when deleted)."""
    try:
        return json.loads(Path(path).read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LintfError(f"{str(path)!r} is corrupt ({reason}); delete it and rerun to make it again") from None


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as strict JSON (:func:`strict_json`), atomically."""
    atomic_write_text(path, strict_json(obj, indent=2, sort_keys=True) + "\n")


def atomic_savez(path: str | os.PathLike[str], exclusive: bool = False, **arrays: Any) -> None:
    """``np.savez_compressed`` to ``path`` atomically (:func:`atomic_write_bytes`): a DIAG or GD++ model's ``P`` and
    ``Q`` are mostly zeros."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    atomic_write_bytes(path, buf.getvalue(), exclusive)


def save_model(path: str | os.PathLike[str], P: Any, Q: Any, meta: dict[str, Any] | None = None,
               exclusive: bool = False, **native: Any) -> None:
    """Save a model in the universal format (``P``, ``Q`` float64) with optional native parameters."""
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    if not (np.all(np.isfinite(P)) and np.all(np.isfinite(Q))):
        raise LintfError("refusing to save a model with non-finite P or Q")
    from lintf_theory import check_parameters

    check_parameters(P, Q)
    atomic_savez(path, exclusive, P=P, Q=Q, meta=np.asarray(json.dumps(meta or {})), **native)


def check_real_finite(name: str, arr: Any) -> np.ndarray:
    """``arr`` as float64; a one-line error naming ``name`` if it is not real (e.g. complex) or holds NaN/±inf."""
    a = np.asarray(arr)
    if a.dtype.kind not in "fiu":
        raise LintfError(f"{name} must hold real numbers (integer or float), got dtype {a.dtype}")
    a = a.astype(np.float64)
    bad = int(a.size - np.count_nonzero(np.isfinite(a)))
    if bad:
        raise LintfError(f"{name} must be finite, but {bad} of its {a.size} entries are NaN or inf")
    return a


def _kind_named(z: Any) -> str | None:
    """The ``meta["kind"]`` of an open ``.npz`` without ``P, Q`` (a family member's file), else ``None``."""
    try:
        kind = json.loads(str(z["meta"])).get("kind") if "meta" in z else None
    except (ValueError, AttributeError):
        return None
    return kind if isinstance(kind, str) and kind.isprintable() and len(kind) <= 40 else None


def load_model(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Load ``(P, Q, meta)`` from a universal ``.npz``; a clear error if it is not one."""
    import zipfile

    if Path(path).exists() and not zipfile.is_zipfile(path):
        raise LintfError(f"model file {str(path)!r} is not an .npz archive")
    try:
        with np.load(path, allow_pickle=False) as z:
            if "P" not in z or "Q" not in z:
                kind = _kind_named(z)
                raise LintfError(f"model file {str(path)!r} must hold arrays 'P' and 'Q'" + (
                    f" (it is a {kind} model, which has no universal form: numerics.models.family_io.load_member "
                    "reads it)" if kind else ""))
            P, Q = np.array(z["P"]), np.array(z["Q"])
            meta = json.loads(str(z["meta"])) if "meta" in z else {}
    except FileNotFoundError:
        raise LintfError(f"model file {str(path)!r} does not exist") from None
    except (OSError, ValueError) as exc:
        raise LintfError(f"model file {str(path)!r} is not a readable .npz: {exc}") from None
    P = check_real_finite(f"model file {str(path)!r}: P", P)
    Q = check_real_finite(f"model file {str(path)!r}: Q", Q)
    from lintf_theory import check_parameters

    check_parameters(P, Q)
    return P, Q, meta
