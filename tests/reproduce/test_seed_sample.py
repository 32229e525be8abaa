"""``benchmarks/seed_sample.py`` draws the same sample of Table 1's cells for the same seed, a different one for
another, only cells of the depths asked for, each once; and refuses a depth or a count outside the grid in one line."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from numerics.reproduce.budgets import BUDGETS, cells_for

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "seed_sample.py"
_spec = importlib.util.spec_from_file_location("seed_sample", SCRIPT)
seed_sample = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(seed_sample)


def test_a_sample_is_its_seeds_and_holds_table1_cells_of_the_depths_once() -> None:
    a, b = seed_sample.sample([3, 5], 9, 7), seed_sample.sample([3, 5], 9, 8)
    assert a == seed_sample.sample([3, 5], 9, 7) and a != b
    table1 = {c.name: c for c in cells_for(BUDGETS["paper"], ["table1"]) if c.layers in (3, 5)}
    for s in (a, b):
        assert len(set(s)) == 9 and set(s) <= set(table1)
    # every one of the 60 cells can be drawn: the whole listing, in its order
    everything = seed_sample.sample([3, 5], 60, 0)
    assert set(everything) == set(table1) and everything.index("gdpp-L3-uniform0") == 0


def test_a_depth_or_count_outside_the_grid_is_one_line(capsys) -> None:
    assert seed_sample.main(["--depths", "3", "8", "--count", "2", "--seed", "0"]) == 2
    assert capsys.readouterr().err == "error: --depths must lie in [1, 7] (Table 1's), got 8\n"
    assert seed_sample.main(["--depths", "4", "--count", "31", "--seed", "0"]) == 2
    assert capsys.readouterr().err == "error: --count must lie in [1, 30] for depths [4], got 31\n"
    assert seed_sample.main(["--depths", "4", "--count", "2", "--seed", "0"]) == 0
    assert len(capsys.readouterr().out.split()) == 2
