r"""Atomic file writes, and the reading of files lintf did not write.

Every file lintf writes goes through a temporary file beside it (:func:`atomic_write_bytes`), so
a killed run never leaves half a file.  A file it reads may come from anywhere: :func:`read_text`
and :func:`read_json` read only regular files under a size limit, JSON without NaN and at most
:data:`JSON_DEPTH_MAX` levels deep, each failure one :class:`~numerics.errors.LintfError` line;
:func:`check_real_finite` does the same for an array.  The model file format built on them is
:mod:`numerics.model_file`.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

import numpy as np

from .errors import LintfError


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` via a temporary file beside it (never a half-written file).  ``exclusive``: never
    replace a file at ``path``, even one created after the caller checked that there was none (a hard link, which
    fails if ``path`` exists, where the file system has them): a one-line error instead.

    The temporary file is named before it is created, so an interrupt (Ctrl-C) at any moment removes it: the
    folder holds the old file or the new one.  It has the usual permissions (``0o666`` less the umask)."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LintfError(f"cannot write to {str(parent)!r}: {exc.strerror}") from None
    tmp = ""
    try:
        for _ in range(100):
            tmp = os.path.join(parent, f".{path.name}.{secrets.token_hex(8)}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                break
            except FileExistsError:  # another write's: not this one's to remove
                tmp = ""
            except OSError as exc:
                tmp = ""  # not created: nothing to remove
                raise LintfError(f"cannot write to {str(parent)!r}: {exc.strerror}") from None
        else:  # every name taken by another write (``tmp`` is "" again)
            raise LintfError(f"cannot write to {str(parent)!r}: no free temporary name")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if exclusive:
            _link_new(tmp, path)
        else:
            try:
                os.replace(tmp, path)
            except (
                OSError
            ) as exc:  # a folder in its place, say: name the file, not the temporary one
                raise LintfError(f"cannot write {str(path)!r}: {exc.strerror}") from None
    except BaseException:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def _link_new(tmp: str, path: Path) -> None:
    """Give the finished temporary file ``tmp`` the name ``path`` unless a file holds that name; remove ``tmp``."""
    taken = LintfError(
        f"{str(path)!r} appeared while this command ran; it is left as it is (nothing is overwritten)"
    )
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
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


#: ``read_json`` refuses a file above this size (bytes) or nested deeper than this (objects and lists): the
#: files lintf reads are a few KB and a few levels deep; a deeper or larger one is not one of them.
JSON_BYTES_MAX = 64 * 2**20
JSON_DEPTH_MAX = 64
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (JSON holds finite numbers only)")


def _finite(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"the number {text[:20]} is outside float64's range")
    return v


def json_depth(text: str) -> int:
    """How deeply objects and lists nest in the JSON ``text`` (0 for a scalar), counted without parsing it."""
    bare = _STRING.sub("", text).encode()
    steps = np.frombuffer(bare, dtype=np.uint8)
    steps = np.isin(steps, (91, 123)).astype(np.int64) - np.isin(steps, (93, 125))
    return int(np.max(np.cumsum(steps), initial=0))


def _parse(text: str, nonfinite: bool = False) -> Any:
    if (depth := json_depth(text)) > JSON_DEPTH_MAX:
        raise ValueError(f"nested {depth} levels deep, more than the {JSON_DEPTH_MAX} lintf reads")
    strict = {} if nonfinite else {"parse_constant": _refuse_constant, "parse_float": _finite}
    try:
        return json.loads(text, **strict)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as exc:
        raise ValueError((str(exc).splitlines() or [type(exc).__name__])[0][:200]) from None


class _Unreadable(ValueError):
    """The file could not be opened or read (not a matter of its content)."""


def _text(path: str | os.PathLike[str], max_bytes: int) -> str:
    try:
        # before opening: opening a named pipe waits for a writer, for ever
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ValueError("not a regular file")
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # replaced since
                raise ValueError("not a regular file")
            raw = f.read(max_bytes + 1)
    except OSError as exc:
        raise _Unreadable(f"cannot be read: {exc.strerror or type(exc).__name__}") from None
    if len(raw) > max_bytes:
        raise ValueError(f"larger than the {max_bytes} bytes lintf reads from such a file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text at byte {exc.start}") from None


def parse_json(text: str, what: str, nonfinite: bool = False) -> Any:
    """The JSON ``text`` (from ``what``, a name for messages): strict JSON with finite numbers, nested at most
    :data:`JSON_DEPTH_MAX` deep (checked before parsing); otherwise a one-line :class:`LintfError` naming ``what``.
    ``nonfinite``: ``NaN`` and ``±Infinity`` are read as floats (Python's ``json.dumps`` writes them, as a
    checkpoint's loss curve may hold them)."""
    try:
        return _parse(text, nonfinite)
    except ValueError as exc:
        raise LintfError(f"{what} is not valid JSON ({exc})") from None


def json_file(path: str | os.PathLike[str], nonfinite: bool = False) -> Any:
    """The JSON file at ``path`` (at most :data:`JSON_BYTES_MAX` bytes of UTF-8, nested at most
    :data:`JSON_DEPTH_MAX` deep, finite numbers unless ``nonfinite``), or a :class:`ValueError` whose one-line
    message says what is wrong with it (the caller names the file and what to do: :func:`read_json`)."""
    return _parse(_text(path, JSON_BYTES_MAX), nonfinite)


def read_text(path: str | os.PathLike[str], what: str, max_bytes: int | None = None) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``max_bytes`` long, a leading byte-order mark dropped
    (spreadsheets write one); otherwise a one-line :class:`LintfError` naming ``what``.  ``max_bytes``: default
    :data:`JSON_BYTES_MAX`."""
    try:
        return _text(path, JSON_BYTES_MAX if max_bytes is None else max_bytes)
    except ValueError as exc:
        raise LintfError(f"{what}: {exc}") from None


def read_json(path: str | os.PathLike[str], what: str | None = None) -> Any:
    """The JSON file at ``path`` (:func:`read_text`, :func:`parse_json`); a corrupt, oversized or too deeply nested
    one is a one-line error that names it, and ``what`` it holds when given (such as ``"cell diag-L4-uniform5"``;
    the files lintf reads back are its own, made again when deleted)."""
    name = f"{str(path)!r}" + (f" ({what})" if what else "")
    try:
        return json_file(path)
    except _Unreadable as exc:
        raise LintfError(f"{name} {exc}") from None
    except ValueError as exc:
        raise LintfError(
            f"{name} is corrupt ({exc}); delete it and rerun to make it again"
        ) from None


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as strict JSON (:func:`strict_json`), atomically."""
    atomic_write_text(path, strict_json(obj, indent=2, sort_keys=True) + "\n")


def atomic_savez(path: str | os.PathLike[str], exclusive: bool = False, **arrays: Any) -> None:
    """``np.savez_compressed`` to ``path`` atomically (:func:`atomic_write_bytes`): a DIAG or GD++ model's ``P`` and
    ``Q`` are mostly zeros."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    atomic_write_bytes(path, buf.getvalue(), exclusive)


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
