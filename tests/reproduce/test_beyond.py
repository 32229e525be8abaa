"""Beyond the paper: the gap to Bayes against depth, read from the table (a failed cell is no
entry, so no row)."""

from __future__ import annotations

import math

import pytest

from numerics.reproduce.beyond import depth_gap
from numerics.reproduce.table import Entry


def test_the_depth_gap_is_the_fraction_of_the_reference_depths_gap_that_deeper_models_close():
    nz = "uniform:5"
    t = {("diag", L, nz): Entry(g + 0.04, 0.001, g, 0.0005) for L, g in ((7, 0.02), (9, 0.015))}
    t |= {("full", 7, nz): Entry(0.07, 0.001, 0.03, 0.0005), ("AdaRR", 0, nz): Entry(0.07)}
    rows = depth_gap(t, "diag", nz, 7)
    assert [(L, g, s) for L, g, s, _ in rows] == [(7, 0.02, 0.0005), (9, 0.015, 0.0005)]
    assert rows[0][3] == 0.0 and rows[1][3] == pytest.approx(0.25)
    assert [r[0] for r in depth_gap(t, "full", nz, 7)] == [7]
    assert math.isnan(depth_gap(t, "diag", nz, 4)[0][3])  # no reference depth: nothing closed
