r"""``lintf verify --printed FILE``: printed GD++ values against the ``λ = E σ²`` floor, as one more claim row.

The table format and the rule are in :mod:`numerics.reproduce.floor`; a value below the floor by more than
``Z_IMPOSSIBLE`` standard errors fails the row (the theorem behind it is ``proofs/gdpp_ridge_floor.py``).
"""

from __future__ import annotations

import codecs
import tempfile
from pathlib import Path

from ._check import Claim, Report


def read_printed(path: str | Path) -> list:
    """:func:`numerics.reproduce.floor.read_printed`, after the checks of :mod:`numerics.io` on a file lintf did not
    write: its size, UTF-8, and for JSON its nesting depth (before it is parsed).  A byte-order mark, as spreadsheets
    write one, is dropped: the table is then parsed from a copy without it, and messages name ``path``."""
    from numerics.errors import LintfError
    from numerics.io import JSON_DEPTH_MAX, json_depth, read_text
    from numerics.reproduce import floor

    if not Path(path).is_file():
        return floor.read_printed(path)  # its own one-line error: no such file, not a regular file
    try:
        text = read_text(path, f"--printed {path}")
    except LintfError as exc:
        raise ValueError(str(exc)) from None
    if Path(path).suffix.lower() == ".json" and (depth := json_depth(text)) > JSON_DEPTH_MAX:
        raise ValueError(f"--printed {path}: JSON nested {depth} levels deep, more than the {JSON_DEPTH_MAX} a table "
                         "of printed values needs (a list of objects)")
    with open(path, "rb") as f:
        if f.read(3) != codecs.BOM_UTF8:
            return floor.read_printed(path)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / Path(path).name
        copy.write_text(text, encoding="utf-8")
        try:
            return floor.read_printed(copy)
        except ValueError as exc:
            raise ValueError(str(exc).replace(str(copy), str(path))) from None


def load(path: str | Path) -> Claim:
    """Parse and validate the table now (a one-line ``ValueError`` before any work); check it when run."""
    from numerics.reproduce import floor

    rows = read_printed(path)

    def check(report: Report) -> None:
        results = floor.check_printed(rows)
        for _, _, flag, text in results:
            report.ok(text)
        bad = [text for _, _, flag, text in results if flag]
        report.require(not bad, f"{len(bad)} of {len(rows)} printed GD++ values are below the floor: " + "; ".join(bad))

    return Claim(f"printed GD++ values in {path} are at or above ridge at lambda = E sigma^2",
                 "printed table", ("printed values", "Monte Carlo floor (n=20, d=10)"), check, "proofs._printed")
