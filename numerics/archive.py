r"""Reading an ``.npz`` that lintf did not write itself: the zip directory first, then only the arrays asked for.

Before any array is loaded, :func:`read_npz` checks the archive's directory (a zip, not one ``.npy``; each entry
named once, not encrypted, compressed by a method :mod:`zipfile` reads), each wanted array's ``.npy`` header (no
Python objects; the data its shape declares fits the entry's declared size) and the declared sizes against the
memory available.  Every failure is one :class:`numerics.errors.LintfError` line that names the file;
:func:`numerics.model_file.load_model` and the ``lintf`` commands read user files through it.
"""

from __future__ import annotations

import lzma
import math
import os
import stat
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .errors import LintfError

#: Compression methods whose entries :mod:`zipfile` reads (NumPy writes the first two); Deflate64 (9) and the
#: rest are refused from the archive's directory.
ZIP_METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}
_ZIP_READ_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    OSError,
    ValueError,
    EOFError,
    TypeError,
    NotImplementedError,
    RuntimeError,
    struct.error,
)


def memory_available() -> int:
    """Bytes this process may still allocate on the host: ``MemAvailable`` of ``/proc/meminfo``, or the cgroup's
    remaining limit if lower (``2**62`` where neither is known)."""
    avail = []
    try:
        with open("/proc/meminfo") as f:
            avail += [int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        try:
            avail.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            avail.append(int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return max(min(avail), 0) if avail else 2**62


def _directory(zf: zipfile.ZipFile, what: str) -> dict[str, zipfile.ZipInfo]:
    """``{array name: entry}``, every entry's name, encryption flag and compression method checked."""
    out: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        if name in out:
            raise LintfError(
                f"{what} holds two entries named {info.filename!r}; an .npz holds each array once"
            )
        if info.flag_bits & 0x41:  # bit 0: encrypted; bit 6: strong encryption
            raise LintfError(
                f"{what}: entry {info.filename!r} is encrypted; lintf reads unencrypted .npz files "
                "(numpy.savez)"
            )
        if info.compress_type not in ZIP_METHODS:
            raise LintfError(
                f"{what}: entry {info.filename!r} uses zip compression method {info.compress_type}, "
                f"which lintf does not read (it reads {', '.join(ZIP_METHODS.values())}; numpy.savez)"
            )
        out[name] = info
    return out


def _header(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, what: str
) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype of the ``.npy`` entry ``info``; its data must fit the entry's declared size."""
    if not info.filename.endswith(".npy"):
        raise LintfError(f"{what}: entry {info.filename!r} is not an .npy array")
    try:
        with zf.open(info) as f:
            version = np.lib.format.read_magic(f)
            read = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read(f)
    except _ZIP_READ_ERRORS as exc:
        raise LintfError(
            f"{what} is not a readable .npz (array {info.filename[:-4]!r}: {_first(exc)})"
        ) from None
    if dtype.hasobject:
        raise LintfError(
            f"{what}: array {info.filename[:-4]!r} holds Python objects (dtype {dtype}); lintf reads "
            "numbers and strings only"
        )
    if math.prod(shape) * dtype.itemsize > info.file_size:
        raise LintfError(
            f"{what}: array {info.filename[:-4]!r} declares shape {shape} of {dtype}, "
            f"{math.prod(shape) * dtype.itemsize} bytes, but its entry holds {info.file_size}"
        )
    return tuple(int(k) for k in shape), dtype


def _first(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def _open_npz(path: str | os.PathLike[str], what: str) -> zipfile.ZipFile:
    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise LintfError(f"{what} is not a regular file")
            head = f.read(6)
        if head == b"\x93NUMPY":
            raise LintfError(
                f"{what} begins with one .npy array (numpy.save), not an .npz archive (numpy.savez)"
            )
        if not head.startswith(b"PK"):
            raise LintfError(f"{what} is not an .npz archive (write it with numpy.savez)")
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise LintfError(f"{what} does not exist") from None
    except _ZIP_READ_ERRORS as exc:
        raise LintfError(f"{what} is not a readable .npz ({_first(exc)})") from None


def npz_directory(
    path: str | os.PathLike[str], what: str
) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{name: (shape, dtype)}`` of every array of the ``.npz`` at ``path``, from its zip directory and the arrays'
    headers only (nothing is loaded); a one-line :class:`LintfError` naming ``what`` if it is not a plain one."""
    with _open_npz(path, what) as zf:
        return {k: _header(zf, info, what) for k, info in _directory(zf, what).items()}


def read_npz(
    path: str | os.PathLike[str], what: str, names: tuple[str, ...], max_bytes: int | None = None
) -> dict[str, np.ndarray]:
    """The arrays ``names`` (those present) of the ``.npz`` at ``path``, and no other.  Its directory is checked
    first (:func:`npz_directory`), then the arrays' declared sizes against ``max_bytes`` (default
    :func:`memory_available`); every failure is a one-line :class:`LintfError` naming ``what``."""
    with _open_npz(path, what) as zf:
        entries = {k: v for k, v in _directory(zf, what).items() if k in names}
        heads = {k: _header(zf, info, what) for k, info in entries.items()}
        total = sum(info.file_size for info in entries.values())
        limit = memory_available() if max_bytes is None else max_bytes
        if total > limit:
            raise LintfError(
                f"{what}: its arrays {', '.join(entries)} take {total} bytes, more than the {limit} "
                "bytes of memory available"
            )
        out = {}
        for k, info in entries.items():
            try:
                with zf.open(info) as f:
                    out[k] = np.lib.format.read_array(f, allow_pickle=False)
            except _ZIP_READ_ERRORS as exc:
                raise LintfError(
                    f"{what} is not a readable .npz (array {k!r}: {_first(exc)})"
                ) from None
            if out[k].shape != heads[k][0]:
                raise LintfError(f"{what}: array {k!r} is truncated")
        return out
