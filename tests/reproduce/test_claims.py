"""The claims' checks on given tables: what "match" and "beats" decide, and what a claim says when
the budget has none of the cells it needs."""

from __future__ import annotations

from numerics.reproduce.claims import TEXTS, beats, check_claims, claim_diag_matches_full
from numerics.reproduce.table import Entry


def test_a_table_without_the_cells_a_claim_needs_leaves_it_not_evaluated_and_says_why() -> None:
    claims = check_claims({}, {})
    assert [c.key for c in claims] == list(TEXTS) and all(c.text == TEXTS[c.key] for c in claims)
    assert {c.verdict for c in claims} == {"not evaluated"}
    superexp = next(c for c in claims if c.key == "gdpp_superexponential")
    assert superexp.evidence == ("no σ_max = 0 GD++ cells",)
    others = [c.evidence for c in claims if c is not superexp]
    assert others == [("the budget has no cells this check needs",)] * 6


def test_match_is_decided_on_the_paired_gap_and_names_the_failing_cells() -> None:
    def table(full: float) -> dict:
        return {
            ("diag", 4, "uniform:5"): Entry(0.10, 0.01, 0.05, 0.001),
            ("full", 4, "uniform:5"): Entry(full, 0.01, full - 0.05, 0.001),
        }

    assert claim_diag_matches_full(table(0.105)).verdict == "holds"
    differ = claim_diag_matches_full(table(0.2))
    assert differ.verdict == "does not hold" and "→ differ" in differ.evidence[0]
    assert differ.failing == (("diag", 4, "uniform:5"), ("full", 4, "uniform:5"))


def test_beats_needs_more_than_two_paired_se() -> None:
    base = Entry(0.05, 0.01, 0.03, 0.001)
    assert beats(Entry(0.04, 0.01, 0.02, 0.001), base) is True
    assert beats(Entry(0.0499, 0.01, 0.0299, 0.001), base) is None
    assert beats(Entry(0.06, 0.01, 0.04, 0.001), base) is False
