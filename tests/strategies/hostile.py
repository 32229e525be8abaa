"""Hostile files as Hypothesis strategies: odd but valid archives, tampered zip directories and JSON that a careless
user or a strange tool makes.  Each strategy draws ``(label, bytes)``; the label names the variant in a failure.

Archives start from a plain ``numpy.savez`` of the arrays a command needs and change one thing: what precedes the
zip, a flag or the compression method in the zip directory, a declared size, an ``.npy`` header, an extra entry.
JSON variants nest deeper than :data:`numerics.io.JSON_DEPTH_MAX`, hold non-finite numbers, have the wrong type at
the top, or are not UTF-8.  Sizes stay small on disk (a few KB) whatever they declare.
"""

from __future__ import annotations

import codecs
import io
import struct
import warnings
import zipfile
from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from numerics.io import JSON_DEPTH_MAX

#: Bytes an entry declares that it holds where a variant makes an array "huge": 2 GiB.
HUGE = 2**31


def npz_bytes(arrays: dict[str, np.ndarray], compression: int = zipfile.ZIP_STORED) -> bytes:
    """The bytes of ``numpy.savez`` of ``arrays``, each entry stored with ``compression``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for k, v in arrays.items():
            entry = io.BytesIO()
            np.lib.format.write_array(entry, np.asanyarray(v), allow_pickle=True)
            z.writestr(f"{k}.npy", entry.getvalue())
    return buf.getvalue()


def _records(raw: bytes) -> list[tuple[int, int, str]]:
    """``(central record offset, local header offset, name)`` of every entry of the zip ``raw``."""
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        at, out = z.start_dir, []
        for info in z.infolist():
            assert raw[at : at + 4] == b"PK\x01\x02"
            n, x, c = struct.unpack("<HHH", raw[at + 28 : at + 34])
            out.append((at, info.header_offset, info.filename))
            at += 46 + n + x + c
    return out


def patch(
    raw: bytes,
    name: str | None,
    *,
    flags: int | None = None,
    method: int | None = None,
    size: int | None = None,
) -> bytes:
    """``raw`` with the entry ``name`` (``None``: every entry) given general-purpose ``flags`` (or-ed in), the
    compression ``method`` or the declared uncompressed ``size``, in its local header and central record alike."""
    out = bytearray(raw)
    for central, local, fname in _records(raw):
        if name is not None and fname != f"{name}.npy":
            continue
        for base, flag_at, method_at, size_at in ((central, 8, 10, 24), (local, 6, 8, 22)):
            if flags is not None:
                out[base + flag_at : base + flag_at + 2] = struct.pack(
                    "<H", struct.unpack("<H", raw[base + flag_at : base + flag_at + 2])[0] | flags
                )
            if method is not None:
                out[base + method_at : base + method_at + 2] = struct.pack("<H", method)
            if size is not None:
                out[base + size_at : base + size_at + 4] = struct.pack("<I", size)
    return bytes(out)


def _huge_entry(arrays: dict[str, np.ndarray], name: str) -> bytes:
    """The archive of ``arrays`` plus ``name``: an ``.npy`` whose header and zip entry declare :data:`HUGE` bytes of
    float64, of which the entry holds a few hundred (never read to its end, it costs nothing on disk)."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        head, {"descr": "<f8", "fortran_order": False, "shape": (HUGE // 8,)}
    )
    buf = io.BytesIO(npz_bytes(arrays))
    with zipfile.ZipFile(buf, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{name}.npy", head.getvalue() + bytes(256))
    return patch(buf.getvalue(), name, size=HUGE)


def _duplicate(arrays: dict[str, np.ndarray], name: str) -> bytes:
    buf = io.BytesIO(npz_bytes(arrays))
    entry = io.BytesIO()
    np.lib.format.write_array(entry, np.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", UserWarning
        )  # zipfile's "Duplicate name": the point of this variant
        with zipfile.ZipFile(buf, "a") as z:
            z.writestr(f"{name}.npy", entry.getvalue())
    return buf.getvalue()


def _header_lies(arrays: dict[str, np.ndarray], name: str) -> bytes:
    """``name``'s ``.npy`` header declares 1000 times the rows its data holds."""
    a = np.asarray(arrays[name])
    entry = io.BytesIO()
    shape = (a.shape[0] * 1000, *a.shape[1:]) if a.ndim else (1000,)
    np.lib.format.write_array_header_1_0(
        entry, {"descr": a.dtype.str, "fortran_order": False, "shape": shape}
    )
    entry.write(a.tobytes())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for k, v in arrays.items():
            if k == name:
                z.writestr(f"{k}.npy", entry.getvalue())
            else:
                one = io.BytesIO()
                np.lib.format.write_array(one, np.asarray(v))
                z.writestr(f"{k}.npy", one.getvalue())
    return buf.getvalue()


def _crc(arrays: dict[str, np.ndarray], name: str) -> bytes:
    """One byte of ``name``'s data flipped (the zip directory intact): its CRC fails once read to its end."""
    raw = bytearray(npz_bytes(arrays))
    local = next(loc for _, loc, f in _records(bytes(raw)) if f == f"{name}.npy")
    n, x = struct.unpack("<HH", raw[local + 26 : local + 30])
    raw[local + 30 + n + x + 128 + min(8, np.asarray(arrays[name]).nbytes - 1)] ^= 0xFF
    return bytes(raw)


#: Archive variants that must be refused, whichever array they touch: ``(label, make(arrays, name))``.
REFUSED: dict[str, Callable[[dict[str, np.ndarray], str], bytes]] = {
    "npy then zip": lambda a, k: _npy(a[k]) + npz_bytes(a),
    "encrypted flag": lambda a, k: patch(npz_bytes(a), k, flags=0x1),
    "deflate64": lambda a, k: patch(npz_bytes(a, zipfile.ZIP_DEFLATED), k, method=9),
    "unknown method": lambda a, k: patch(npz_bytes(a), k, method=99),
    "declared size huge": lambda a, k: patch(npz_bytes(a), k, size=HUGE),
    "header lies": _header_lies,
    "duplicate entry": _duplicate,
    "object array": lambda a, k: npz_bytes({**a, k: np.array([None, 1], dtype=object)}),
    "crc": _crc,
    "truncated": lambda a, k: npz_bytes(a)[: len(npz_bytes(a)) // 2],
    "junk before zip": lambda a, k: b"#!junk\n" + npz_bytes(a),
}

#: Words of the message of the check that refuses each variant of :data:`REFUSED` (not a catch-all's).
REFUSED_WORDS = {
    "npy then zip": "begins with one .npy array",
    "encrypted flag": "is encrypted; lintf reads",
    "deflate64": "compression method 9",
    "unknown method": "compression method 99",
    "declared size huge": "memory",
    "header lies": "but its entry holds",
    "duplicate entry": "two entries named",
    "object array": "holds Python objects",
    "crc": "Bad CRC-32",
    "truncated": "is not a readable .npz",
    "junk before zip": "is not an .npz archive",
}


#: Odd archives that are valid: the command reads them as the plain one.
ACCEPTED: dict[str, Callable[[dict[str, np.ndarray]], bytes]] = {
    "deflate": lambda a: npz_bytes(a, zipfile.ZIP_DEFLATED),
    "bzip2": lambda a: npz_bytes(a, zipfile.ZIP_BZIP2),
    "lzma": lambda a: npz_bytes(a, zipfile.ZIP_LZMA),
}


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(a))
    return buf.getvalue()


def refused_archives(
    arrays: dict[str, np.ndarray], names: tuple[str, ...]
) -> st.SearchStrategy[tuple[str, bytes]]:
    """A variant of :data:`REFUSED` applied to one of ``names`` (the arrays a command reads) of ``arrays``."""
    return st.tuples(st.sampled_from(sorted(REFUSED)), st.sampled_from(names)).map(
        lambda c: (f"{c[0]} ({c[1]})", REFUSED[c[0]](arrays, c[1]))
    )


def unused_huge(arrays: dict[str, np.ndarray]) -> bytes:
    """``arrays`` beside an array ``unused`` that declares 2 GiB: a command that never reads it must not load it."""
    return _huge_entry(arrays, "unused")


def _nested(depth: int, kind: str) -> str:
    return (
        ('{"a": ' * depth + "1" + "}" * depth)
        if kind == "object"
        else ("[" * depth + "1" + "]" * depth)
    )


def hostile_json(top: str = "object") -> st.SearchStrategy[tuple[str, bytes]]:
    """JSON text no lintf reader may take as valid for a ``top``-level ``"object"`` or ``"list"``: nested past the
    limit (up to 100 000 deep, which overflows Python's recursion), non-finite numbers, the wrong top-level type,
    not UTF-8."""
    wrap = (lambda v: '{"v": ' + v + "}") if top == "object" else (lambda v: "[" + v + "]")
    deep = st.tuples(
        st.integers(JSON_DEPTH_MAX + 1, 100_000), st.sampled_from(["object", "list"])
    ).map(lambda c: (f"nested {c[0]} deep", wrap(_nested(c[0], c[1])).encode()))
    constants = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e400"]).map(
        lambda v: (f"non-finite {v}", wrap(v).encode())
    )
    wrong = st.sampled_from(
        ["[1, 2]", '"text"', "3", "null", "true"] if top == "object" else ['{"a": 1}', '"x"', "3"]
    ).map(lambda v: (f"top-level {v}", v.encode()))
    broken = st.sampled_from(
        [b"\xff\xfe{}", wrap("1").encode()[:-1], b"", codecs.BOM_UTF16 + b"{}"]
    ).map(lambda v: (f"malformed {v[:8]!r}", v))
    return st.one_of(deep, constants, wrong, broken)
