"""``lintf verify``: run every proof-check script (the paper's claims) and print a table.

The options are defined here; :mod:`proofs` is imported only when the command runs, so that building the
command line (and importing :mod:`numerics`) never imports :mod:`proofs`.
"""

from __future__ import annotations

import argparse
import codecs
import tempfile
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the results as a JSON list")
    parser.add_argument(
        "--only", metavar="NAMES", help="comma-separated module names or paper refs to run"
    )
    parser.add_argument(
        "--latex", metavar="FILE", help="also write every derived statement as LaTeX/Markdown"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print what each claim checked"
    )
    parser.add_argument(
        "--printed",
        metavar="FILE",
        help="also check printed GD++ values (CSV or JSON with noise, depth, value and optionally se) "
        "against ridge at lambda = E sigma^2; the format is in numerics/reproduce/floor.py",
    )


def run(args: argparse.Namespace) -> int:
    import proofs  # lazy: start-up

    # bad input fails here, before any work
    printed = printed_claim(args.printed) if args.printed else None
    return proofs.run(args, [printed] if printed else [])


def printed_claim(path: str):  # noqa: ANN201  (a proofs.Claim; proofs is imported when run)
    r"""``--printed FILE``: the printed GD++ values against the ``λ = E σ²`` floor, as one more
    claim row.

    The table is parsed and validated now (a one-line ``ValueError`` before any work) and checked
    when the claim runs; the format and the rule are in :mod:`numerics.reproduce.floor`, the
    theorem behind it in ``proofs/gdpp_ridge_floor.py``."""
    import proofs  # lazy: start-up
    from numerics.reproduce import floor  # lazy: start-up

    rows = read_printed(path)

    def check(report: proofs.Report) -> None:
        results = floor.check_printed(rows)
        for _, _, _, text in results:
            report.ok(text)
        bad = [text for _, _, flag, text in results if flag]
        below = f"{len(bad)} of {len(rows)} printed GD++ values are below the floor: "
        report.require(not bad, below + "; ".join(bad))

    text = f"printed GD++ values in {path} are at or above ridge at lambda = E sigma^2"
    routes = ("printed values", "Monte Carlo floor (n=20, d=10)")
    return proofs.Claim(text, "printed table", routes, check, "numerics.cli.verify")


def read_printed(path: str | Path) -> list:
    """:func:`numerics.reproduce.floor.read_printed`, after the checks of :mod:`numerics.io` on a file lintf did not
    write: its size, UTF-8, and for JSON its nesting depth (before it is parsed), strict JSON (finite numbers,
    integers Python reads) and the types of each row's numbers (:func:`_json_rows`); a CSV that Python's reader
    refuses (a field past its size limit) is one line too.  A byte-order mark, as spreadsheets write one, is dropped:
    the table is then parsed from a copy without it, and messages name ``path``."""
    from numerics.errors import LintfError  # lazy: start-up
    from numerics.io import JSON_DEPTH_MAX, json_depth, parse_json, read_text  # lazy: start-up

    if not Path(path).is_file():
        return _read_printed(path)  # its own one-line error: no such file, not a regular file
    try:
        text = read_text(path, f"--printed {path}")
    except LintfError as exc:
        raise ValueError(str(exc)) from None
    if Path(path).suffix.lower() == ".json":
        if (depth := json_depth(text)) > JSON_DEPTH_MAX:
            raise ValueError(
                f"--printed {path}: JSON nested {depth} levels deep, more than the {JSON_DEPTH_MAX} a "
                "table of printed values needs (a list of objects)"
            )
        try:
            _json_rows(parse_json(text, f"--printed {path}"), path)
        except LintfError as exc:
            raise ValueError(str(exc)) from None
    with open(path, "rb") as f:
        if f.read(3) != codecs.BOM_UTF8:
            return _read_printed(path)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / Path(path).name
        copy.write_text(text, encoding="utf-8")
        try:
            return _read_printed(copy)
        except ValueError as exc:
            raise ValueError(str(exc).replace(str(copy), str(path))) from None


#: Largest integer a printed row's number may be (float64 holds every integer up to it).
INT_MAX = 2**53


def _json_rows(rows: object, path: str | Path) -> None:
    """The numbers of a printed table's JSON rows are numbers, not booleans (``true`` would read as 1), and
    integers among them at most :data:`INT_MAX`; a one-line :class:`ValueError` naming ``path`` and the row."""
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        for k in ("depth", "value", "se"):
            v = row.get(k) if isinstance(row, dict) else None
            if isinstance(v, bool):
                raise ValueError(
                    f"--printed {path}: row {i + 1}: {k} is {str(v).lower()}, not a number"
                )
            if isinstance(v, int) and abs(v) > INT_MAX:
                raise ValueError(
                    f"--printed {path}: row {i + 1}: {k} is an integer of {len(str(abs(v)))} digits, "
                    f"more than {INT_MAX} = 2**53"
                )


def _read_printed(path: str | Path) -> list:
    """:func:`numerics.reproduce.floor.read_printed`, a CSV its reader refuses one line naming ``path``."""
    import csv  # lazy: start-up

    from numerics.reproduce import floor  # lazy: start-up

    try:
        return floor.read_printed(path)
    except csv.Error as exc:
        raise ValueError(f"--printed {path}: not a CSV table ({exc})") from None
