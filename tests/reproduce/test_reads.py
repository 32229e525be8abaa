"""Which cells each claim reads (``numerics.reproduce.reads.READS``), and the verdicts "so far" of a grid under way.

``READS`` is written beside the claims, not derived from them, so it is checked against them: on a small complete
grid, taking away a cell that a claim reads changes that claim's evidence, and taking away any other cell leaves it
as it was.
"""

from __future__ import annotations

import pytest

from numerics.data import Noise
from numerics.reproduce.floor import claim_gdpp_floor
from numerics.reproduce.reads import READS, SERIES, judged_claims
from numerics.reproduce.report import claims_markdown
from numerics.reproduce.table import Entry

DEPTHS = (1, 2, 4, 5)
NOISES = ("uniform:0", "uniform:5", "categorical:1,3")
SIGMA = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0]


def _grid() -> tuple[dict, dict, dict]:
    """A complete grid whose every comparison is decided: the table, the final-layer profiles and GD++'s floors."""
    t, profiles = {}, {}
    for nz in NOISES:
        zero = Noise.parse(nz).sigma_max == 0
        for name, v in zip(("ConstRR", "AdaRR", "TunedRR", "Bayes"), (0.36, 0.07, 0.05, 0.04)):
            t[(name, 0, nz)] = Entry(0.0 if zero else v, 0.001)
        gd = (1.0, 0.3, 0.02, 5e-4) if zero else (0.9, 0.5, 0.4, 0.37)
        for L, g in zip(DEPTHS, gd):
            t[("gdpp", L, nz)] = Entry(g, g / 100)
        for k, m in enumerate(("diag", "full")):
            for L in DEPTHS:
                loss = 0.2 / L + 0.001 * k
                t[(m, L, nz)] = Entry(loss, 0.001)
                profiles[(m, L, nz)] = {"sigma": SIGMA, "loss": [loss * (1 + k + s) for s in SIGMA]}
    floors = {nz: Entry(0.0 if Noise.parse(nz).sigma_max == 0 else 0.3, 0.001) for nz in NOISES}
    return t, profiles, floors


def _evidence(t: dict, profiles: dict, floors: dict) -> dict[str, tuple[str, ...]]:
    return {
        c.key: c.evidence
        for c in judged_claims(t, DEPTHS, profiles, [claim_gdpp_floor(t, floors)], {})
    }


def test_every_claim_has_a_reads_rule_and_every_series_claim_is_a_claim():
    t, profiles, floors = _grid()
    keys = {c.key for c in judged_claims(t, DEPTHS, profiles, [claim_gdpp_floor(t, floors)], {})}
    assert set(READS) == keys and SERIES <= keys


@pytest.mark.parametrize("key", sorted(READS))
def test_a_claim_reads_exactly_the_cells_its_rule_names(key):
    t, profiles, floors = _grid()
    whole = _evidence(t, profiles, floors)[key]
    assert whole, f"{key} has no evidence on the complete grid"
    for cell in [k for k in t if k[1] > 0]:
        m, L, nz = cell
        less = {k: e for k, e in t.items() if k != cell}
        changed = _evidence(less, profiles, floors)[key] != whole
        assert changed == READS[key](m, L, Noise.parse(nz)), (
            key,
            cell,
            "changed" if changed else "unchanged",
        )


def test_a_grid_under_way_gives_verdicts_so_far_and_names_the_cells_to_come():
    t, profiles, floors = _grid()
    gone = {
        "gdpp-L5-uniform0": ("gdpp", 5, "uniform:0"),
        "diag-L4-uniform5": ("diag", 4, "uniform:5"),
    }
    less = {k: e for k, e in t.items() if k not in gone.values()}
    claims = {
        c.key: c
        for c in judged_claims(less, DEPTHS, profiles, [claim_gdpp_floor(less, floors)], gone)
    }

    superexp = claims["gdpp_superexponential"]  # its only series is incomplete: it waits
    assert superexp.verdict == "not evaluated" and superexp.status() == "not evaluated yet"
    assert superexp.waiting == ("gdpp-L5-uniform0",)
    assert superexp.evidence == (
        "not trained yet, of the cells this claim reads (1): gdpp-L5-uniform0; it is "
        "checked only on the series whose every depth is in",
    )

    adarr = claims["four_layers_beat_adarr"]  # FULL-4 is in: a verdict so far
    assert (
        adarr.verdict == "holds"
        and adarr.status() == "holds so far"
        and adarr.waiting == ("diag-L4-uniform5",)
    )
    assert (
        adarr.evidence[0] == "not trained yet, of the cells this claim reads (1): diag-L4-uniform5"
    )
    assert adarr.evidence[1].startswith("uniform:5: FULL-4")

    order = claims["baseline_order"]  # reads no model cell
    assert order.waiting == () and order.status() == "holds"

    md = claims_markdown(list(claims.values()), "cmd", {})
    assert "| 4-layer DIAG and FULL beat AdaRR for σ_max ≥ 4 | **holds so far** | `cmd` |" in md
    assert (
        "**At σ_max = 0 GD++'s loss falls super-exponentially with depth: not evaluated yet.**"
        in md
    )


def test_the_list_of_cells_to_come_is_cut_after_six_names():
    t, profiles, floors = _grid()
    gone = {
        f"diag-L{L}-{nz}": ("diag", L, nz)
        for L in DEPTHS
        for nz in ("uniform:5", "categorical:1,3")
    }
    less = {k: e for k, e in t.items() if k not in gone.values()}
    match = {
        c.key: c
        for c in judged_claims(less, DEPTHS, profiles, [claim_gdpp_floor(less, floors)], gone)
    }["diag_matches_full"]
    assert len(match.waiting) == 8 and match.evidence[0].endswith(" and 2 more")
    assert match.verdict == "holds" and all("uniform:0" in e for e in match.evidence[2:])
