"""``lintf reproduce --jobs N`` splits the cells left between processes: a cell trains in the process of the cell it
starts from, so that every cell starts as in a serial sweep, and the processes get about as many layers each."""

from __future__ import annotations

from pathlib import Path

from numerics.reproduce import experiments as ex
from numerics.reproduce.budgets import PARTS, chains, parse_cells, recipe_start, train_layers


def group_of(groups: list[tuple[str, ...]]) -> dict[str, int]:
    return {name: i for i, g in enumerate(groups) for name in g}


def test_every_cell_trains_with_the_cells_it_may_start_from(tmp_path: Path) -> None:
    """In the quick budget (continuation over depth) and the paper budget (FULL from DIAG), every choice of start of
    every cell (:func:`recipe_start`) that the grid holds is in the cell's process and trains before it."""
    for name in ("quick", "paper", "test"):  # (the test budget's beyond cells are of a setting outside its grid)
        budget = ex.get_budget(name)
        groups = ex.split_cells(budget, PARTS, tmp_path / name, 2)
        where = group_of(groups)
        cells = ex.cells_for(budget, PARTS)
        assert sorted(where) == sorted(c.name for c in cells) and len(groups) == 2
        for g in groups:  # what each process is given, as its --cell arguments
            assert parse_cells(budget, g) == g
        for c in cells:
            asked: list = []
            recipe_start(c, budget, lambda s: asked.append(s) or None)
            for s in (s for s in asked if s.name in where):  # the grid's (quick has no depth 3 or 6)
                assert where[s.name] == where[c.name], (name, c.name, s.name)
                g = groups[where[c.name]]
                assert g.index(s.name) < g.index(c.name)


def test_the_chains_are_as_small_as_the_starts_allow() -> None:
    """Where the budget continues over depth (the test budget), a cell goes with the cell one layer shallower and
    FULL-L with DIAG-L; where it does not (quick), only FULL-L goes with DIAG-L, every other cell alone.  With the
    floor (paper), a cell also goes with the cell one layer shallower: one chain per model family and setting."""
    test = ex.get_budget("test")
    units = {tuple(c.name for c in u) for u in chains(test, ex.cells_for(test, PARTS))}
    assert units == {("diag-L1-uniform1", "diag-L2-uniform1"),
                     tuple(f"{m}-L{L}-uniform5" for L in (1, 2, 3) for m in ("diag", "full")),
                     (*(f"{m}-L{L}-categorical1_3" for L in (1, 2, 3) for m in ("diag", "full")),
                      "full-L4-categorical1_3")}  # FULL-4 (Fig. 4) may start from FULL-3: no DIAG-4 in the grid
    quick = ex.get_budget("quick")
    cells = ex.cells_for(quick, ("table1",))
    units = chains(quick, cells)
    assert sorted(len(u) for u in units) == [1] * (len(cells) // 3) + [2] * (len(cells) // 3)
    assert all({c.model for c in u} == {"diag", "full"} and len({c.layers for c in u}) == 1 for u in units
               if len(u) == 2)
    paper = ex.get_budget("paper")
    units = chains(paper, ex.cells_for(paper, ("table1",)))
    assert sorted((u[0].noise, tuple(sorted({c.model for c in u})), len(u)) for u in units) == sorted(
        (nz, family, 7 * len(family)) for nz in paper.noises for family in (("gdpp",), ("diag", "full")))


def test_the_processes_get_about_as_many_layers(tmp_path: Path) -> None:
    """The paper grid's 230 cells split into two groups within one chain's layers of each other, not by noise setting
    (which leaves the quick budget's three settings two against one)."""
    for name in ("quick", "paper", "test"):  # (the test budget's beyond cells are of a setting outside its grid)
        budget = ex.get_budget(name)
        groups = ex.split_cells(budget, PARTS, tmp_path / name, 2)
        cells = {c.name: c for c in ex.cells_for(budget, PARTS)}
        load = [sum(train_layers(cells[n], budget) for n in g) for g in groups]
        biggest = max(sum(train_layers(c, budget) for c in u) for u in chains(budget, cells.values()))
        assert abs(load[0] - load[1]) <= biggest, (name, load)
