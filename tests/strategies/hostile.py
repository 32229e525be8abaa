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
import json
import re
import struct
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

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
    "strong encryption flag": lambda a, k: patch(npz_bytes(a), k, flags=0x40),
    "no .npy suffix": lambda a, k: _renamed(a, k, k),
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
    "strong encryption flag": "is encrypted; lintf reads",
    "no .npy suffix": "is not an .npy array",
}


#: Odd archives that are valid: the command reads them as the plain one.
ACCEPTED: dict[str, Callable[[dict[str, np.ndarray]], bytes]] = {
    "deflate": lambda a: npz_bytes(a, zipfile.ZIP_DEFLATED),
    "bzip2": lambda a: npz_bytes(a, zipfile.ZIP_BZIP2),
    "lzma": lambda a: npz_bytes(a, zipfile.ZIP_LZMA),
    "zip64 entries": lambda a: _entries(a, zip64=True),
    ".npy format 2.0": lambda a: _entries(a, version=(2, 0)),
    ".npy format 3.0": lambda a: _entries(a, version=(3, 0)),
    "big-endian arrays": lambda a: _entries(a, cast=lambda v: v.astype(v.dtype.newbyteorder(">"))),
    # (NumPy's asfortranarray makes a 0-d array 1-d: the meta string stays as it is)
    "Fortran order": lambda a: _entries(a, cast=lambda v: np.asfortranarray(v) if v.ndim else v),
    "data-descriptor flag": lambda a: patch(npz_bytes(a), None, flags=0x8),
    "UTF-8 names flag": lambda a: patch(npz_bytes(a), None, flags=0x800),
    "bytes after the zip": lambda a: npz_bytes(a) + bytes(100),
}


def _entries(
    arrays: dict[str, np.ndarray],
    zip64: bool = False,
    version: tuple[int, int] | None = None,
    cast: Callable[[np.ndarray], np.ndarray] = lambda v: v,
) -> bytes:
    """The archive of ``arrays``, each ``.npy`` written in format ``version`` (NumPy's choice by
    default) from ``cast`` of the array, each zip entry with a zip64 extra field if ``zip64``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for k, v in arrays.items():
            entry = io.BytesIO()
            np.lib.format.write_array(entry, cast(np.asarray(v)), version=version)
            with z.open(f"{k}.npy", "w", force_zip64=zip64) as f:
                f.write(entry.getvalue())
    return buf.getvalue()


def _renamed(arrays: dict[str, np.ndarray], name: str, entry: str) -> bytes:
    """The archive of ``arrays`` with ``name``'s entry named ``entry`` instead of ``<name>.npy``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for k, v in arrays.items():
            one = io.BytesIO()
            np.lib.format.write_array(one, np.asarray(v))
            z.writestr(entry if k == name else f"{k}.npy", one.getvalue())
    return buf.getvalue()


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


# ------------------------------------------------------------------------------------------------
# A sweep's own files tampered with (numerics.reproduce.record, numerics.reproduce.sweep): a cell's
# record, a setting's baselines, the --out marker, a cell's model; and --out directories that are
# not a sweep's.  A drawn case is ``(label, content)``; content ``None`` puts a directory in the
# file's place.
# ------------------------------------------------------------------------------------------------

#: A token the tampered document holds where :func:`_dump` writes text no Python value dumps to.
_RAW = "\x00lintf-raw:"
#: Values of another JSON type, for a node of each type (a bool is not a number here, as in JSON).
_OTHER_TYPES: dict[str, list] = {
    "null": [0, "null", [], {}, False],
    "bool": [None, 1, 0, "true", []],
    "number": [None, True, "0.5", [], {}, [1.0]],
    "string": [None, 0, True, [], {}, ["text"]],
    "list": [None, 1, "[]", {}, True],
    "object": [None, 1, "{}", [], True, [{}]],
}
#: Numbers no float64 holds (text, as a careless tool writes them) and finite extremes.
NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"]
HUGE_NUMBERS = [1e308, -1.7976931348623157e308, 2**53 + 1, -(2**63), 10**400, 5e-324]


def _type(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return {str: "string", list: "list", dict: "object"}[type(v)]


def json_paths(doc: object, at: tuple = ()) -> list[tuple]:
    """Every node of the parsed JSON ``doc`` below the top, as the keys and indices leading to it,
    parents before children."""
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    out = []
    for k, v in items:
        out.append((*at, k))
        out += json_paths(v, (*at, k))
    return out


def _dotted(path: tuple) -> str:
    return ".".join(str(k) for k in path) or "the top level"


def _replaced(doc: object, path: tuple, value: object) -> object:
    """A deep copy of ``doc`` with the node at ``path`` set to ``value`` (``KeyError``: removed)."""
    doc = json.loads(json.dumps(doc))
    node = doc
    for k in path[:-1]:
        node = node[k]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


def _dump(doc: object) -> bytes:
    """``doc`` as JSON text; a string ``_RAW + text`` is written as ``text`` itself (a number no
    Python float dumps to, or a nesting too deep to build as a Python value)."""
    text = json.dumps(doc, indent=1)
    return re.sub(
        re.escape(json.dumps(_RAW)[:-1]) + r'((?:[^"\\]|\\.)*)"',
        lambda m: json.loads(f'"{m.group(1)}"'),
        text,
    ).encode()


def _node_tamperings(doc: object, path: tuple, draw: Callable) -> tuple[str, bytes]:
    """One change to the node at ``path`` of ``doc``, drawn for its type."""
    node = doc
    for k in path:
        node = node[k]
    kind = _type(node)
    actions = ["remove", "wrong type", "nested"] + (["number"] if kind == "number" else [])
    action = draw(st.sampled_from(actions))
    at = _dotted(path)
    if action == "remove":
        return f"{at} removed", _dump(_replaced(doc, path, KeyError))
    if action == "wrong type":
        v = draw(st.sampled_from(_OTHER_TYPES[kind]))
        return f"{at} is {json.dumps(v)}", _dump(_replaced(doc, path, v))
    if action == "nested":
        depth, shape = draw(st.integers(1, 100_000)), draw(st.sampled_from(["object", "list"]))
        return f"{at} nested {depth} deep", _dump(
            _replaced(doc, path, _RAW + _nested(depth, shape))
        )
    v = draw(st.sampled_from(NON_FINITE + HUGE_NUMBERS))
    raw = _RAW + v if isinstance(v, str) else v
    return f"{at} is {v}", _dump(_replaced(doc, path, raw))


def tampered_json(
    doc: dict, specials: dict[str, list] | None = None, focus: list[tuple] | None = None
) -> st.SearchStrategy[tuple[str, bytes | None]]:
    """The JSON file of ``doc`` (a sweep's record, baselines or marker) tampered with in one place:
    a node removed, of another type, non-finite or past float64 (``NaN``, ``1e999``, ``10**400``),
    nested up to 100 000 deep; a top-level key given one of its ``specials`` (another ``format``,
    another cell's name); or the whole file replaced (not JSON, cut short, empty, not UTF-8, the
    wrong top-level type, a directory in its place).  Labels name the change: ``"<dotted path>
    removed"``, ``"<dotted path> is <value>"``, ``"<dotted path> nested <n> deep"`` for a node,
    ``"<key> set to <value>"`` for a special, ``"file: <what>"`` for the whole file.  Half the node
    changes are at the ``focus`` nodes (paths as :func:`json_paths` gives them; default the
    top-level keys), the parts a reader needs."""
    paths = json_paths(doc)
    # half the changes where each node is a part a reader needs, half anywhere
    needed = focus or [p for p in paths if len(p) == 1]
    anywhere = st.one_of(st.sampled_from(needed), st.sampled_from(paths))

    @st.composite
    def node(draw: Callable) -> tuple[str, bytes]:
        return _node_tamperings(doc, draw(anywhere), draw)

    whole_text = _dump(doc)
    whole = st.one_of(
        hostile_json("object"),
        st.integers(1, len(whole_text) - 1).map(
            lambda n: (f"cut short after {n} bytes", whole_text[:n])
        ),
        st.just(("a directory in its place", None)),
        st.just(("not UTF-8", b"\xff" + whole_text)),
    )
    strategies = [node(), whole.map(lambda c: (f"file: {c[0]}", c[1]))]
    if specials:
        strategies.append(
            st.sampled_from(  # a special equal to the document's own value is no change
                [(k, v) for k, vs in specials.items() for v in vs if v != doc.get(k)]
            ).map(lambda c: (f"{c[0]} set to {c[1]!r}", _dump(_replaced(doc, (c[0],), c[1]))))
        )
    return st.one_of(*strategies)


def tampered_model(
    arrays: dict[str, np.ndarray], others: dict[str, bytes]
) -> st.SearchStrategy[tuple[str, bytes | None]]:
    """A cell's ``model.npz`` (the archive of ``arrays``) cut short at a drawn byte, swapped for one of
    ``others`` (another kind's file: label ``"swapped for <its key>"``), bytes that are no zip at all,
    a directory in its place, or a variant of :data:`REFUSED` applied to one of its arrays (label
    ``"<variant> (<array>)"``)."""
    raw = npz_bytes(arrays)
    return st.one_of(
        st.integers(0, len(raw) - 1).map(lambda n: (f"cut short after {n} bytes", raw[:n])),
        st.sampled_from(sorted(others)).map(lambda k: (f"swapped for {k}", others[k])),
        st.binary(max_size=64).map(lambda b: (f"bytes {b[:8]!r}", b)),
        st.just(("a directory in its place", None)),
        refused_archives(arrays, tuple(arrays)),
    )


#: Where a drawn ``--out`` stands: ``make(root) -> the --out path``, building what it needs under
#: ``root`` (a ``user/`` folder of the user's files beside it).
FOREIGN_OUT = (
    "a folder of the user's",
    "a file",
    "a link to a folder of the user's",
    "a link to an empty folder",
    "a link to nowhere",
    "a link to itself",
    "a read-only empty folder",
    "under a file",
)


def user_files() -> st.SearchStrategy[dict[str, bytes]]:
    """A small folder of the user's: 1-4 files, up to two levels deep, with names a sweep writes
    itself among them (``report.md``, ``table1.md``, a record, a baselines file, a marker one level
    down), of 0-200 bytes each."""
    names = st.sampled_from(
        [
            "report.md",
            "table1.md",
            "notes.txt",
            ".hidden",
            "models/diag-L1-uniform0/metrics.json",
            "baselines/uniform0.json",
            "old/lintf-sweep.json",
            "data/x.npz",
        ]
    )
    return st.dictionaries(names, st.binary(max_size=200), min_size=1, max_size=4)


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def foreign_out() -> st.SearchStrategy[tuple[str, Callable[[Path], Path]]]:
    """An ``--out`` that is not a sweep's (:data:`FOREIGN_OUT`) with the user's files drawn by
    :func:`user_files`: ``(label, make)``, ``make(root)`` building it under ``root`` and returning the
    path to give as ``--out``."""

    def make(case: str, files: dict[str, bytes]) -> Callable[[Path], Path]:
        def build(root: Path) -> Path:
            user, out = root / "user", root / "out"
            _write_tree(user, files)
            (root / "empty").mkdir()
            if case == "a folder of the user's":
                return user
            if case == "a file":
                return next(p for p in sorted(user.rglob("*")) if p.is_file())
            if case == "under a file":
                return next(p for p in sorted(user.rglob("*")) if p.is_file()) / "sub"
            if case == "a read-only empty folder":
                (root / "empty").chmod(0o555)
                return root / "empty"
            target = {
                "a link to a folder of the user's": user,
                "a link to an empty folder": root / "empty",
                "a link to nowhere": root / "nowhere",
                "a link to itself": out,
            }[case]
            out.symlink_to(target)
            return out

        return build

    return st.tuples(st.sampled_from(FOREIGN_OUT), user_files()).map(lambda c: (c[0], make(*c)))


# ------------------------------------------------------------------------------------------------
# A table of printed GD++ values (lintf verify --printed): a valid table with one row's field of a
# type or value no reader may take, or a CSV that Python's reader refuses.
# ------------------------------------------------------------------------------------------------

#: Values each field of a printed row may not take, as JSON text (a number past float64, a 400-digit
#: integer, a boolean that would read as 1, another type).
BAD_PRINTED = {
    "noise": ["5", "null", "[]", '{"a": 1}', '"bogus"', '"fixed:1e999999999"', '"uniform:-1"'],
    "depth": ["true", "false", "null", "[2]", '"abc"', "0", "-3", "2.5", "1e999", "9" * 400],
    "value": ["true", "null", "[0.3]", '"abc"', "NaN", "Infinity", "1e999", "9" * 400, "9" * 5000],
    "se": ["true", "-1", "NaN", "[0]", '"abc"', "1e999", "9" * 400],
}
_PRINTED_ROW = {"noise": '"uniform:5"', "depth": "2", "value": "0.36", "se": "0.005"}


def _printed_json(rows: int, bad_row: int, field: str, value: str, extra: bool) -> bytes:
    out = []
    for i in range(rows):
        row = dict(_PRINTED_ROW) | ({field: value} if i == bad_row else {})
        if extra and i == bad_row:
            row["sigma"] = "1"  # a field a printed row does not have
        out.append("{" + ", ".join(f'"{k}": {v}' for k, v in row.items()) + "}")
    return ("[" + ",\n ".join(out) + "]").encode()


def _printed_csv(kind: str, rows: int) -> bytes:
    head, row = "noise,depth,value,se\r\n", "uniform:5,2,0.36,0.005\r\n"
    bad = {
        "a field past the CSV reader's limit": "u" * 200_000 + ",2,0.36,0.005\r\n",
        "more fields than the header": "categorical:1,3,2,0.36,0.005\r\n",
        "a depth of 5000 digits": "uniform:5," + "9" * 5000 + ",0.36,0\r\n",
        "no value": "uniform:5,2,,0.005\r\n",
        "a value that is text": "uniform:5,2,abc,0.005\r\n",
    }
    if kind == "no value column":
        return b"noise,depth,se\r\nuniform:5,2,0.005\r\n"
    return (head + row * rows + bad[kind]).encode()


def hostile_printed() -> st.SearchStrategy[tuple[str, str, bytes]]:
    """``(label, suffix, bytes)``: a printed table of 1-5 rows, JSON (``.json``) with one row's field
    set to a value of :data:`BAD_PRINTED` or given an unknown field, or CSV (``.csv``) with one bad
    line after 0-4 good ones, or no ``value`` column.  Every one must be refused, before any floor is
    evaluated."""

    @st.composite
    def json_rows(draw: Callable) -> tuple[str, str, bytes]:
        rows = draw(st.integers(1, 5))
        at = draw(st.integers(0, rows - 1))
        field, value = draw(
            st.sampled_from([(f, v) for f, vs in BAD_PRINTED.items() for v in vs] + [("sigma", "")])
        )
        label = f"row {at + 1} {field} = {value[:20]}" if value else f"row {at + 1} has sigma"
        raw = _printed_json(rows, at, *((field, value) if value else ("se", "0.005")), not value)
        return label, ".json", raw

    csv_kinds = [
        "a field past the CSV reader's limit",
        "more fields than the header",
        "a depth of 5000 digits",
        "no value",
        "a value that is text",
        "no value column",
    ]
    csv_rows = st.tuples(st.sampled_from(csv_kinds), st.integers(0, 4)).map(
        lambda c: (f"CSV: {c[0]} after {c[1]} rows", ".csv", _printed_csv(*c))
    )
    return st.one_of(json_rows(), csv_rows)


# ------------------------------------------------------------------------------------------------
# Numbers past float64 for an option (a hang where an option expands them exactly), and the
# host-device count of XLA_FLAGS.
# ------------------------------------------------------------------------------------------------


def huge_number_texts() -> st.SearchStrategy[str]:
    """Text of a number whose exact value no float holds: a mantissa with a decimal exponent of 10**6
    to 10**9 (either sign), thousands of digits, or a fraction ``A/B`` of such parts; the exact
    expansion of any of them holds the interpreter for minutes to hours."""
    mantissa = st.sampled_from(["1", "-1", "9.99", "0.5", "+7", "1."])
    exponent = st.integers(10**6, 10**9).flatmap(lambda e: st.sampled_from([str(e), f"-{e}"]))
    scientific = st.tuples(mantissa, st.sampled_from(["e", "E"]), exponent).map("".join)
    digits = st.tuples(st.sampled_from("123456789"), st.integers(4_400, 20_000)).map(
        lambda c: c[0] * c[1]
    )
    part = st.one_of(scientific, digits, st.sampled_from(["1", "3", "0.25"]))
    fraction = (
        st.tuples(part, part)
        .filter(lambda c: len(c[0] + c[1]) > 4_000 or "e" in "".join(c).lower())
        .map("/".join)
    )
    return st.one_of(scientific, digits, fraction)


def bad_xla_flags(flag: str, most: int) -> st.SearchStrategy[tuple[str, str]]:
    """``(label, XLA_FLAGS)`` whose host-device count ``flag`` is not one integer in ``1..most``:
    out of range, not a decimal integer, without a value, or given twice; among other flags."""
    bad_value = st.one_of(
        st.integers(max_value=0).map(str),
        st.integers(min_value=most + 1).map(str),
        st.sampled_from(["", "abc", "4.0", "1e1", "+4", "0x4", "4,5", "٣", "４", '4"', "inf"]),
        st.text(alphabet="abc.,-+e ", min_size=1, max_size=6).filter(lambda t: " " not in t),
    )
    one = bad_value.map(lambda v: (f"value {v!r}", f"{flag}={v}"))
    bare = st.just(("no value", flag))
    twice = st.tuples(st.integers(1, most), st.integers(1, most)).map(
        lambda c: (f"given twice ({c[0]}, {c[1]})", f"{flag}={c[0]} {flag}={c[1]}")
    )
    others = st.lists(
        st.sampled_from(["--xla_cpu_use_thunk_runtime=false", "--xla_dump_to=/tmp/x"]), max_size=2
    )
    return st.tuples(st.one_of(one, bare, twice), others).map(
        lambda c: (c[0][0], " ".join([*c[1], c[0][1]]))
    )
