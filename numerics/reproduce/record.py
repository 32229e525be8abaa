r"""A finished cell's :class:`Record` (``OUT/models/<cell>/metrics.json``) and a setting's baselines
(``OUT/baselines/<noise>.json``), each with its one reader.

A record is a frozen, versioned dataclass (:data:`FORMAT`).  :func:`read_record` and
:func:`read_baselines` check a file's format, structure and types (a ``null`` or a list where an
object is expected, a missing key, a string where a number is expected, an integer too large for a
float) and the finiteness of every number that reaches a table or a figure (losses, SEs, gaps to
Bayes, per-layer arrays, profiles); each failure is one line naming the file and the cell:
``'...metrics.json' (cell diag-L4-uniform5) is corrupt (eval.loss is NaN); delete it and rerun``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from numerics.errors import LintfError
from numerics.io import read_json, strict_json
from numerics.reproduce.grid import STARTS

#: Version of the record format; a record of another version is refused.
FORMAT = 2
#: The starts a record may name: a plan's (:data:`numerics.reproduce.grid.STARTS`) and two of
#: earlier recipes.
RECORD_STARTS = (*STARTS, "diag", "shallower")
#: Largest integer accepted where a count or an index is expected.
INT_MAX = 2**53

# The schema language: a type tag, ("list", item), ("opt", spec), or a dict of key -> spec ("*":
# other keys allowed).
NUM, FIN, INT, STR, BOOL, ANY = "num", "finite", "int", "str", "bool", "any"


def _opt(spec: Any) -> tuple:
    return ("opt", spec)


def _list(spec: Any) -> tuple:
    return ("list", spec)


_LAYERS = {k: _list(FIN) for k in ("loss", "se", "minus_Bayes", "minus_Bayes_se")} | {"*": ANY}
_EVAL = {
    "loss": FIN,
    "se": FIN,
    "minus_Bayes": FIN,
    "minus_Bayes_se": FIN,
    "Bayes": FIN,
    "sequences": INT,
    "layers": _LAYERS,
    "tail": {"*": ANY},
    "*": ANY,
}
_PROFILE = {"sigma": _list(FIN), "loss": _list(_list(FIN)), "se": _list(_list(FIN))}
_REPLICAS = {
    "seed": _list(INT),
    "loss": _list(_list(FIN)),
    "se": _list(_list(FIN)),
    "failed": _list(_opt(STR)),
    "*": ANY,
}
_TRAINING = {
    "steps": INT,
    "converged": BOOL,
    "chosen_stage": INT,
    "stages": _list({"*": ANY}),
    "*": ANY,
}
_FIELDS = {
    "format": INT,
    "cell": STR,
    "model": STR,
    "layers": INT,
    "noise": STR,
    "budget": STR,
    "start": STR,
    "plan": {"*": ANY},
    "failed": _opt(STR),
    "eval": _EVAL,
    "profile": _PROFILE,
    "tail_check": _opt({"*": ANY}),
    "spectral": _opt({"*": ANY}),
    "replicas": _opt(_REPLICAS),
    "training": _TRAINING,
    "provenance": {"notes": _list(STR), "seconds": _opt(NUM), "*": ANY},
}
#: A failed cell's numbers reach no table: only their types are checked (``null`` allowed).
_LOOSE = {FIN: NUM}


class Corrupt(ValueError):
    """Where a file breaks its schema (a dotted path and what is wrong there)."""


def check(value: Any, spec: Any, at: str, loose: bool = False) -> None:
    """``value`` follows ``spec`` (the schema language above), else :class:`Corrupt` naming the path
    ``at``."""
    where = at or "the top level"
    if _optional(spec):
        if value is not None:
            check(value, spec[1], at, loose)
        return
    if isinstance(spec, tuple):  # a list
        if not isinstance(value, list):
            raise Corrupt(f"{where} is {_kind(value)}, not a list")
        for i, v in enumerate(value):
            check(v, spec[1], f"{at}[{i}]", loose)
        return
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise Corrupt(f"{where} is {_kind(value)}, not an object")
        missing = [k for k in spec if k != "*" and k not in value and not _optional(spec[k])]
        if missing:
            raise Corrupt(f"{where} lacks {missing[0]!r}")
        extra = [k for k in value if k not in spec and k != "null_reasons"]
        if extra and "*" not in spec:
            raise Corrupt(f"{where} has an unknown key {extra[0]!r}")
        for k, s in spec.items():
            if k != "*" and k in value:
                check(value[k], s, f"{at}.{k}" if at else k, loose)
        return
    if loose and value is None and spec in _LOOSE:
        return
    _scalar(value, _LOOSE.get(spec, spec) if loose else spec, where)


def _optional(spec: Any) -> bool:
    return isinstance(spec, tuple) and spec[0] == "opt"


def _kind(v: Any) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    return "null" if v is None else kinds.get(type(v), f"a {type(v).__name__}")


def _scalar(v: Any, spec: str, where: str) -> None:
    if spec == ANY:
        return
    if spec == STR and not isinstance(v, str) or spec == BOOL and not isinstance(v, bool):
        raise Corrupt(f"{where} is {_kind(v)}, not a {'string' if spec == STR else 'boolean'}")
    if spec in (NUM, FIN, INT):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise Corrupt(f"{where} is {_kind(v)}, not a number")
        if isinstance(v, int) and abs(v) > INT_MAX:
            raise Corrupt(f"{where} is an integer of {len(str(abs(v)))} digits")
        if spec == INT and not isinstance(v, int):
            raise Corrupt(f"{where} is {v!r}, not an integer")
        if spec == FIN and not math.isfinite(v):
            raise Corrupt(f"{where} is {v}")


@dataclass(frozen=True)
class Record:
    """A finished cell: what it is (``cell``, ``model``, ``layers``, ``noise``), how it was made
    (``budget``, ``start``, ``plan``: :func:`numerics.reproduce.grid.plan_of`; ``training``: its
    stages; ``provenance``: device, seconds and notes on how it was trained), and its verdict
    (``failed``: why it fails, or ``None``; ``eval``, ``profile``, ``tail_check``, ``spectral``,
    ``replicas``: :mod:`numerics.reproduce.verdict`)."""

    cell: str
    model: str
    layers: int
    noise: str
    budget: str
    start: str
    plan: dict
    failed: str | None
    eval: dict
    profile: dict
    training: dict
    provenance: dict
    tail_check: dict | None = None
    spectral: dict | None = None
    replicas: dict | None = None
    format: int = FORMAT

    def to_json(self) -> bytes:
        """The record as strict JSON bytes (``metrics.json``)."""
        return (strict_json(asdict(self), indent=2, sort_keys=True) + "\n").encode()


def parse_record(data: Any, cell: str | None = None) -> Record:
    """The :class:`Record` of parsed JSON ``data`` (of the cell ``cell``, if given);
    :class:`Corrupt` otherwise."""
    if isinstance(data, dict) and data.get("format") != FORMAT:
        raise Corrupt(f"format is {data.get('format')!r}, this lintf reads format {FORMAT}")
    if isinstance(data, dict) and "failed" not in data:  # null when it passes, never absent
        raise Corrupt("the top level lacks 'failed'")
    check(data, _FIELDS | {"eval": {"*": ANY}, "profile": {"*": ANY}}, "")
    for k, spec in (("eval", _EVAL), ("profile", _PROFILE)):
        check(data[k], spec, k, loose=data["failed"] is not None)
    if cell is not None and data["cell"] != cell:
        raise Corrupt(f"it is the record of cell {data['cell']!r}")
    if data["start"] not in RECORD_STARTS:
        raise Corrupt(f"start is {data['start']!r}, not one of {', '.join(RECORD_STARTS)}")
    return Record(**{k: v for k, v in data.items() if k != "null_reasons"})


def _read(path: str | Path, what: str, parse: Callable[[Any], Any]) -> Any:
    """``parse`` of the JSON file ``path`` (which holds ``what``); a one-line :class:`LintfError`
    naming the file and ``what`` where it is not JSON or ``parse`` finds it :class:`Corrupt`."""
    data = read_json(path, what)
    try:
        return parse(data)
    except Corrupt as exc:
        why = f"{str(path)!r} ({what}) is corrupt ({exc}); delete it and rerun"
        raise LintfError(why) from None


def _checked(spec: Any) -> Callable[[Any], Any]:
    """A ``parse`` for :func:`_read`: the data itself, once it follows ``spec``."""

    def parse(data: Any) -> Any:
        check(data, spec, "")
        return data

    return parse


def read_record(path: str | Path, cell: str) -> Record:
    """The record at ``path`` of cell ``cell``; a one-line :class:`LintfError` naming the file and
    the cell."""
    return _read(path, f"cell {cell}", lambda data: parse_record(data, cell))


_METHOD = {"loss": FIN, "se": FIN, "minus_Bayes": FIN, "minus_Bayes_se": FIN, "*": ANY}
_CURVE = {"loss": _list(FIN), "se": _list(FIN)}


def read_baselines(path: str | Path, methods: tuple[str, ...]) -> dict[str, Any]:
    """A setting's baselines file: ``noise``, its sizes, ``methods`` (each ``method``'s loss, SE and
    paired gap to Bayes, finite) and ``profile`` (``sigma`` and each method's curve, finite);
    one-line error otherwise."""
    spec = {
        "noise": STR,
        "eval_sequences": INT,
        "tune_sequences": INT,
        "profile_sequences": INT,
        "profile_points": INT,
        "methods": {m: _METHOD for m in methods} | {"*": ANY},
        "profile": {"sigma": _list(FIN)} | {m: _CURVE for m in methods},
    }
    return _read(path, f"baselines of {Path(path).stem}", _checked(spec))


#: A setting's cached GD++ floor (``OUT/baselines/floor-<noise>.json``,
#: :func:`numerics.reproduce.floor.floor_entries`): what it was evaluated on, and its numbers.
_FLOOR = {
    "noise": STR,
    "eval_sequences": INT,
    "n": INT,
    "d": INT,
    "loss": FIN,
    "se": FIN,
    "minus_Bayes": FIN,
    "minus_Bayes_se": FIN,
    "*": ANY,
}


def read_floor(path: str | Path) -> dict[str, Any]:
    """A setting's cached GD++ floor: ``noise``, the sizes it was evaluated at (``eval_sequences``,
    ``n``, ``d``) and its finite ``loss``, ``se``, ``minus_Bayes``, ``minus_Bayes_se``; a one-line
    error naming the file otherwise (the caller evaluates it again where its sizes are not the
    budget's)."""
    return _read(path, f"GD++ floor of {Path(path).stem.removeprefix('floor-')}", _checked(_FLOOR))


#: An entry of the convergence check, as ``lintf reproduce --convergence`` prints it (a longer run
#: that failed may have no loss).
_CONVERGENCE_ENTRY = {
    "loss": NUM,
    "loss_longer": _opt(NUM),
    "relative": _opt(NUM),
    "holds": BOOL,
    "*": ANY,
}


def read_convergence(path: str | Path, budget: str) -> dict[str, Any]:
    """The entries of the convergence check (``OUT/convergence.json``,
    :func:`numerics.reproduce.convergence.check`) of budget ``budget``: ``{}`` where there is no
    file or it is another budget's; a one-line error naming the file where it is not an object with
    ``budget`` and an object of ``cells``, each entry with its numbers ``loss``, ``loss_longer``,
    ``relative`` (the last two ``null`` where the longer run has none) and ``holds``."""
    if not Path(path).exists():
        return {}

    def parse(data: Any) -> Any:
        check(data, {"budget": STR, "cells": {"*": ANY}, "*": ANY}, "")
        for name, entry in data["cells"].items():
            check(entry, _CONVERGENCE_ENTRY, f"cells.{name}")
        return data

    data = _read(path, "the convergence check", parse)
    return data["cells"] if data["budget"] == budget else {}


__all__ = [
    "FORMAT",
    "Corrupt",
    "Record",
    "check",
    "parse_record",
    "read_baselines",
    "read_convergence",
    "read_floor",
    "read_record",
]
