"""The report's claim that no GD++ cell lies below the floor (:mod:`numerics.reproduce.floor`).

Independent route: synthetic entries placed above, within noise of and far below the floor.
"""

from __future__ import annotations

from numerics.reproduce import floor
from numerics.reproduce.table import Entry

U5 = "uniform:5"

FLOORS = {U5: Entry(0.3627, 0.0054, 0.3242, 0.0050)}


def test_report_flags_a_synthetic_gdpp_entry_below_the_floor() -> None:
    fine = {
        ("gdpp", 7, U5): Entry(0.3630, 0.0157, 0.3234, 0.0149),
        ("gdpp", 2, U5): Entry(0.38, 0.016, 0.34, 0.015),
        ("diag", 7, U5): Entry(0.09, 0.008, 0.05, 0.005),
    }  # DIAG may go below: not checked
    c = floor.claim_gdpp_floor(fine, FLOORS)
    assert (
        c.verdict == "holds" and len(c.evidence) == 2 and "IMPOSSIBLE" not in " ".join(c.evidence)
    )
    # 0.03 below within noise (SE of the paired gaps ≈ 0.0157): not flagged
    assert (
        floor.claim_gdpp_floor(
            fine | {("gdpp", 4, U5): Entry(0.333, 0.0157, 0.294, 0.0149)}, FLOORS
        ).verdict
        == "holds"
    )
    bad = fine | {("gdpp", 4, U5): Entry(0.2, 0.0100, 0.16, 0.0090)}  # 0.16 below, ~16 SE
    c = floor.claim_gdpp_floor(bad, FLOORS)
    assert c.verdict == "does not hold"
    flagged = [e for e in c.evidence if "IMPOSSIBLE" in e]
    assert len(flagged) == 1 and "GD++-4" in flagged[0]
    assert floor.claim_gdpp_floor(bad, {}).verdict == "not evaluated"


def test_report_writes_the_floor_claim(tmp_path) -> None:  # noqa: ANN001
    from dataclasses import replace

    from numerics.reproduce.grid import Cell, slug
    from numerics.reproduce.report import write_outputs
    from numerics.reproduce.sweep import Sweep
    from tests.fakes import TINY, fake_baselines, fake_record

    # the floor evaluated on 4000 sequences, as the command's and the printed tables' checks
    # evaluate it: the same compiled programs
    budget = replace(TINY, models=("gdpp",), eval_sequences=4000)
    nz = budget.noises[0]
    fl = floor.floor_entries(tmp_path, budget, [nz])[nz]
    assert (tmp_path / "baselines" / f"floor-{slug(nz)}.json").exists()
    assert floor.floor_entries(tmp_path, budget, [nz])[nz] == fl  # read back from the cache

    def cell(L: int, loss: float):  # noqa: ANN202
        rec = fake_record(Cell("gdpp", L, nz), budget)
        return replace(
            rec,
            eval=rec.eval
            | {"loss": loss, "se": 0.001, "minus_Bayes": loss - 0.001, "minus_Bayes_se": 0.001},
        )

    cells = {
        "a": cell(budget.depths[0], fl.loss + 0.01),
        "b": cell(budget.depths[-1], fl.loss - 0.05),
    }
    sw = Sweep(cells, {nz: fake_baselines(nz, budget)})
    res = write_outputs(sw, budget, (), tmp_path)
    c = next(c for c in res["claims"] if c.key == "gdpp_above_floor")
    assert c.verdict == "does not hold" and sum("IMPOSSIBLE" in e for e in c.evidence) == 1
    assert "IMPOSSIBLE" in (tmp_path / "report.md").read_text()
