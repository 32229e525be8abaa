r"""A random sample of Table 1's cells, drawn the same way every time: the cells to train again with another master seed
(``benchmarks/cell_seeds.py``) to measure how far a budget's cells move with their seed.

The cells of the given depths are listed depth by depth, each depth's noise settings in the paper's order
(:data:`numerics.data.PAPER_NOISES`), each setting's models as GD++, DIAG, FULL; ``numpy.random.default_rng(SEED)``
picks ``COUNT`` of them without replacement.  Prints their names in that listing's order, one per line::

    python benchmarks/seed_sample.py --depths 3 4 5 --count 12 --seed 2026
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from numerics.data import PAPER_NOISES
from numerics.reproduce.budgets import MODELS, Cell


def sample(depths: list[int], count: int, seed: int) -> list[str]:
    """``count`` of the Table 1 cells at ``depths``, drawn by ``default_rng(seed)`` (module docstring)."""
    cells = [Cell(m, L, nz).name for L in depths for nz in PAPER_NOISES for m in MODELS]
    if not 1 <= count <= len(cells):
        raise ValueError(f"--count must lie in [1, {len(cells)}] for depths {depths}, got {count}")
    return [cells[i] for i in sorted(np.random.default_rng(seed).choice(len(cells), count, replace=False))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="+", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    a = ap.parse_args(argv)
    bad = [L for L in a.depths if not 1 <= L <= 7]
    if bad:
        print(f"error: --depths must lie in [1, 7] (Table 1's), got {bad[0]}", file=sys.stderr)
        return 2
    try:
        names = sample(a.depths, a.count, a.seed)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
