"""How ``lintf reproduce --jobs N`` shares the cells left to train among its processes.

The cells come in chains (:func:`numerics.reproduce.budgets.chains`): a cell trains in the same process as every cell
it may start from or is checked against, so that it starts and is checked as in a serial sweep.  The chains wait in
one queue, the most layers to train first (:func:`chain_queue`); each process takes the next chain when it comes
free, so a chain that takes longer than its layers suggest delays only the process that holds it.
:func:`share_out` plays the queue through with known durations: by layers, the plan; by the seconds a finished grid
recorded, how one sweep of it would have run (``benchmarks/grid_schedule.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from numerics.reproduce.budgets import Budget, Cell, chains, train_layers


def chain_queue(budget: Budget, cells: Iterable[Cell]) -> list[list[Cell]]:
    """``cells`` in whole chains (the cells a cell starts from or is checked against,
    :func:`numerics.reproduce.budgets.chains`), the most layers to train first (:func:`train_layers`): the order in
    which the processes of ``lintf reproduce --jobs`` take them, each the next chain when it comes free."""
    return sorted(chains(budget, cells), key=lambda u: -sum(train_layers(c, budget) for c in u))


def share_out(budget: Budget, cells: Iterable[Cell], jobs: int,
              seconds: Callable[[Cell], float] | None = None) -> list[list[Cell]]:
    """The cells each of ``jobs`` processes trains when each takes the next chain of :func:`chain_queue` as it comes
    free, a chain lasting the sum of ``seconds(cell)`` over its cells (default: the layers each trains).  With the
    seconds a grid's cells took, how one sweep of it shares them out (``benchmarks/grid_schedule.py``)."""
    cost = seconds or (lambda c: float(train_layers(c, budget)))
    groups: list[tuple[float, list[Cell]]] = [(0.0, []) for _ in range(max(1, int(jobs)))]
    for unit in chain_queue(budget, cells):
        k = min(range(len(groups)), key=lambda i: groups[i][0])
        groups[k] = (groups[k][0] + sum(cost(c) for c in unit), groups[k][1] + unit)
    return [g for _, g in groups if g]


__all__ = ["chain_queue", "share_out"]
