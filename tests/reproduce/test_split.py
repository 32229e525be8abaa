"""``lintf reproduce --jobs N`` queues the cells left in chains, which its processes take in turn: a cell trains in the
process of the cell it starts from, so that every cell starts as in a serial sweep; the chains with the most layers go
first, and a process that comes free takes the next, so a chain that runs long delays only its own process."""

from __future__ import annotations

from pathlib import Path

from numerics.reproduce import experiments as ex
from numerics.reproduce.budgets import PARTS, chains, parse_cells, recipe_start, train_layers
from numerics.reproduce.schedule import chain_queue, share_out


def group_of(groups: list[tuple[str, ...]]) -> dict[str, int]:
    return {name: i for i, g in enumerate(groups) for name in g}


def test_every_cell_trains_with_the_cells_it_may_start_from(tmp_path: Path) -> None:
    """In the quick budget (continuation over depth) and the paper budget (FULL from DIAG), every choice of start of
    every cell (:func:`recipe_start`) that the grid holds is in the cell's chain and trains before it."""
    for name in ("quick", "paper", "test"):  # (the test budget's beyond cells are of a setting outside its grid)
        budget = ex.get_budget(name)
        groups = ex.queue_cells(budget, PARTS, tmp_path / name)
        where = group_of(groups)
        cells = ex.cells_for(budget, PARTS)
        assert sorted(where) == sorted(c.name for c in cells) and len(groups) > 2
        for g in groups:  # what each process is given, as its --cell arguments: nothing it starts from is missing
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


def test_the_chains_with_the_most_layers_go_first(tmp_path: Path) -> None:
    """The queue holds every chain once, in order of the layers its cells train, the most first, each chain's cells
    in training order (a sweep's order)."""
    for name in ("quick", "paper", "test"):
        budget = ex.get_budget(name)
        cells = ex.cells_for(budget, PARTS)
        queue = chain_queue(budget, cells)
        layers = [sum(train_layers(c, budget) for c in u) for u in queue]
        assert layers == sorted(layers, reverse=True) and len(set(layers)) > 1, (name, layers)
        assert sorted(map(tuple, queue)) == sorted(map(tuple, chains(budget, cells)))
        assert ex.queue_cells(budget, PARTS, tmp_path / name) == [tuple(c.name for c in u) for u in queue]


def test_the_processes_get_about_as_many_layers(tmp_path: Path) -> None:
    """Played through by layers, the paper grid's 230 cells split into two groups within one chain's layers of each
    other, not by noise setting (which leaves the quick budget's three settings two against one)."""
    for name in ("quick", "paper", "test"):  # (the test budget's beyond cells are of a setting outside its grid)
        budget = ex.get_budget(name)
        cells = {c.name: c for c in ex.cells_for(budget, PARTS)}
        groups = share_out(budget, cells.values(), 2)
        load = [sum(train_layers(c, budget) for c in g) for g in groups]
        biggest = max(sum(train_layers(c, budget) for c in u) for u in chains(budget, cells.values()))
        assert abs(load[0] - load[1]) <= biggest, (name, load)


def test_a_chain_that_runs_long_delays_only_its_own_process() -> None:
    """With the seconds the cells took, the process that holds a chain running ten times its layers' share takes no
    other chain after it while the rest are left: the other process trains every other chain."""
    budget = ex.get_budget("paper")
    cells = ex.cells_for(budget, PARTS)
    queue = chain_queue(budget, cells)
    slow = {c.name for c in queue[1]}  # the second chain: the first process to come free takes the third
    total = sum(train_layers(c, budget) for c in cells)
    groups = share_out(budget, cells, 2, lambda c: float(train_layers(c, budget)) * (total if c.name in slow else 1))
    assert sorted(len(g) for g in groups) == [len(slow), len(cells) - len(slow)]
    assert {c.name for c in min(groups, key=len)} == slow
    by_layers = share_out(budget, cells, 2)  # the plan by layers alone shares the rest out between the two
    assert min(len(g) for g in by_layers) > len(slow)
