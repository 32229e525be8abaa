r"""``lintf verify --printed FILE``: printed GD++ values against the ``λ = E σ²`` floor, as one more claim row.

The table format and the rule are in :mod:`numerics.reproduce.floor`; a value below the floor by more than
``Z_IMPOSSIBLE`` standard errors fails the row (the theorem behind it is ``proofs/gdpp_ridge_floor.py``).
"""

from __future__ import annotations

from pathlib import Path

from ._check import Claim, Report


def load(path: str | Path) -> Claim:
    """Parse and validate the table now (a one-line ``ValueError`` before any work); check it when run."""
    from numerics.reproduce import floor

    rows = floor.read_printed(path)

    def check(report: Report) -> None:
        results = floor.check_printed(rows)
        for _, _, flag, text in results:
            report.ok(text)
        bad = [text for _, _, flag, text in results if flag]
        report.require(not bad, f"{len(bad)} of {len(rows)} printed GD++ values are below the floor: " + "; ".join(bad))

    return Claim(f"printed GD++ values in {path} are at or above ridge at lambda = E sigma^2",
                 "printed table", ("printed values", "Monte Carlo floor (n=20, d=10)"), check, "proofs._printed")
