"""Table 1: entries from the records (a failed cell never is one), the lookups every output
shares, and the table as CSV and Markdown."""

from __future__ import annotations

import pytest

from numerics.reproduce.grid import Cell
from numerics.reproduce.table import (
    Entry,
    build_table,
    by_key,
    depths_of,
    noises_of,
    table_csv,
    table_markdown,
)
from tests.fakes import TINY, fake_baselines, fake_record


def test_a_failed_cell_is_never_a_table_entry() -> None:
    ok, bad = Cell("diag", 1, "uniform:1"), Cell("diag", 2, "uniform:1")
    cells = {
        ok.name: fake_record(ok, TINY),
        bad.name: fake_record(bad, TINY, failed="tail check: 1 of 10"),
    }
    table = build_table(cells, {"uniform:1": fake_baselines("uniform:1", TINY)})
    assert ("diag", 1, "uniform:1") in table and ("diag", 2, "uniform:1") not in table
    assert "DIAG,2," not in table_csv(table)
    assert set(by_key(cells)) == {("diag", 1, "uniform:1"), ("diag", 2, "uniform:1")}


def test_settings_run_by_kind_and_level_and_depths_ascend() -> None:
    t = {
        (m, L, nz): Entry(0.1)
        for m, L, nz in [
            ("diag", 4, "uniform:5"),
            ("diag", 1, "uniform:5"),
            ("full", 2, "uniform:5"),
            ("diag", 2, "categorical:1,3"),
            ("diag", 7, "uniform:0"),
        ]
    }
    assert noises_of(t) == ["categorical:1,3", "uniform:0", "uniform:5"]
    assert depths_of(t, "diag", "uniform:5") == [1, 4]


def test_the_csv_lists_models_by_depth_then_baselines_and_leaves_unknown_gaps_empty() -> None:
    t = {
        ("TunedRR", 0, "uniform:5"): Entry(0.05, 0.001, 0.01, 0.0005),
        ("full", 2, "uniform:5"): Entry(0.2, 0.002),
        ("diag", 7, "uniform:5"): Entry(0.0853, 0.0076, 0.045, 0.0065),
    }
    assert table_csv(t).splitlines() == [
        "method,layers,noise,adjusted_loss,se,minus_bayes,minus_bayes_se",
        "DIAG,7,uniform:5,0.0853,0.0076,0.045,0.0065",
        "FULL,2,uniform:5,0.2,0.002,,",
        "TunedRR,,uniform:5,0.05,0.001,0.01,0.0005",
    ]
    md = table_markdown(t, gap=True).splitlines()
    assert md[2:] == [
        "| DIAG-7 | 0.0450 ± 0.0065 |",
        "| FULL-2 | – |",
        "| TunedRR | 0.0100 ± 0.0005 |",
    ]
    assert table_markdown(t).splitlines()[2] == "| DIAG-7 | 0.0853 ± 0.0076 |"


def test_an_entry_needs_a_finite_loss() -> None:
    with pytest.raises(ValueError, match="finite loss and se >= 0"):
        Entry(float("nan"))
