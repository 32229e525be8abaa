"""The claims on a grid still under way: which cells each claim reads (:data:`READS`), which claims
are judged on complete series only (:data:`SERIES`), and :func:`judged_claims`, every claim with the
cells it waits for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from numerics.data import Noise
from numerics.reproduce.claims import Claim, check_claims
from numerics.reproduce.table import Key, Table, depths_of

#: The model cells each claim reads, as ``reads(model, L, noise) -> bool`` (``noise`` parsed): a
#: cell of the grid that is not trained yet and that a claim reads makes the claim's verdict one "so
#: far" (:func:`judged_claims`).  ``tests/reproduce/test_reads.py`` checks each against its
#: claim: taking away a cell it reads changes the claim's evidence, and taking away any other cell
#: does not.
READS: dict[str, Callable[[str, int, Noise], bool]] = {
    "diag_matches_full": lambda m, L, nz: m in ("diag", "full"),
    "gdpp_near_constrr": lambda m, L, nz: m == "gdpp" and nz.sigma_max > 0,
    "four_layers_beat_adarr": lambda m, L, nz: (
        m in ("diag", "full") and L == 4 and nz.kind == "uniform" and nz.sigma_max >= 4
    ),
    "five_plus_match_tunedrr": lambda m, L, nz: (
        m in ("diag", "full") and L >= 5 and nz.sigma_max > 0
    ),
    "gdpp_superexponential": lambda m, L, nz: m == "gdpp" and nz.sigma_max == 0,
    "diag_extrapolates": lambda m, L, nz: m in ("diag", "full") and nz.kind == "categorical",
    "baseline_order": lambda m, L, nz: False,
    "gdpp_above_floor": lambda m, L, nz: m == "gdpp",
}
#: The claims about the deepest model of a series, or about how the loss falls with depth: on a grid
#: still under way they are checked only on the ``(model, noise)`` series whose every depth is in
#: (:func:`complete_series`); the others compare cell by cell, on every finished cell.
SERIES = frozenset({"gdpp_near_constrr", "gdpp_superexponential", "diag_extrapolates"})


def complete_series(t: Table, depths: tuple[int, ...]) -> Table:
    """The table without the model entries of a ``(model, noise)`` whose series over ``depths`` is
    incomplete (a sweep still under way): a claim about the deepest model, or about how the loss
    falls with depth, is then checked only where every depth is in.  Baselines are kept."""
    return {k: e for k, e in t.items() if k[1] == 0 or set(depths) <= set(depths_of(t, k[0], k[2]))}


#: At most this many names of the cells a claim waits for are listed (then how many more).
WAITING_NAMED = 6


def judged_claims(
    table: Table,
    depths: tuple[int, ...],
    profiles: dict,
    extra: list[Claim],
    missing: dict[str, Key],
    from_diag: frozenset[Key] = frozenset(),
) -> list[Claim]:
    """Every claim of :func:`check_claims`, then the ``extra`` claims (GD++ against ridge at λ = E
    σ², :func:`numerics.reproduce.floor.claim_gdpp_floor`), each with the cells not trained yet that
    it reads (``missing``: cell name → ``(model, L, noise)``; :data:`READS`).  A claim about the
    deepest model or the trend over depth (:data:`SERIES`) is checked on the complete series only
    (:func:`complete_series`); the others compare cell by cell on every finished cell.  A claim with
    cells to come says which: its verdict is the one so far."""
    series = {c.key: c for c in check_claims(complete_series(table, depths), profiles, from_diag)}
    out = []
    for c in [*check_claims(table, profiles, from_diag), *extra]:
        c = series[c.key] if c.key in SERIES else c
        waiting = tuple(
            sorted(n for n, (m, L, nz) in missing.items() if READS[c.key](m, L, Noise.parse(nz)))
        )
        if waiting:
            more = len(waiting) - WAITING_NAMED
            named = ", ".join(waiting[:WAITING_NAMED]) + (f" and {more} more" if more > 0 else "")
            note = f"not trained yet, of the cells this claim reads ({len(waiting)}): {named}" + (
                "; it is checked only on the series whose every depth is in"
                if c.key in SERIES
                else ""
            )
            found = () if c.verdict == "not evaluated" else c.evidence
            c = replace(c, evidence=(note, *found), waiting=waiting)
        out.append(c)
    return out
