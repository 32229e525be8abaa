r"""One cell of a sweep trained again with other master seeds, as the sweep trains it (same start, same stages):
how far apart its runs land.  Attempt ``k`` of the cell's runner (:func:`numerics.reproduce.experiments.run_cell`)
trains with master seed ``k − 1`` from the finished cells under ``--starts``; each run is evaluated and judged as the
sweep judges the cell, into ``OUT/attempt<k>/models/<cell>/`` (run directories under ``RUNS/attempt<k>/``).
``--factor F`` makes every stage ``F`` times longer, as the convergence check does.  Prints one line per seed: master
seed, loss ± SE on the evaluation sequences, steps, stages, kept stage, verdict, seconds.

    python benchmarks/cell_seeds.py --budget paper --cell full-L3-categorical1_3_5 --attempts 2 3 \
        --starts results/paper --out /tmp/seeds --runs /tmp/seeds-runs
    python benchmarks/cell_seeds.py --budget brisk --cell diag-L7-uniform2 --attempts 2 --factor 2 \
        --starts results/brisk --out /tmp/seeds-x2 --runs /tmp/seeds-x2-runs
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from numerics.reproduce.budgets import PARTS, cells_for, get_budget
from numerics.reproduce.experiments import run_cell


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", default="paper")
    ap.add_argument("--cell", required=True, help="a cell of the budget, named as under OUT/models/")
    ap.add_argument("--attempts", type=int, nargs="+", required=True, help="attempt numbers k >= 2 (seed k - 1)")
    ap.add_argument("--starts", type=Path, required=True, help="the sweep's --out whose finished cells start the cell")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--factor", type=int, default=1, help="every stage this many times longer (default 1)")
    a = ap.parse_args(argv)
    try:
        budget = get_budget(a.budget)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.factor < 1:
        print(f"error: --factor must be >= 1, got {a.factor}", file=sys.stderr)
        return 2
    budget = replace(budget, stages=budget.stages.scaled(a.factor))
    grid = {c.name: c for c in cells_for(budget, PARTS)}
    if a.cell not in grid:
        print(f"error: --cell must name a cell of budget {a.budget}, got {a.cell!r}", file=sys.stderr)
        return 2
    if any(k < 2 or k > budget.attempts for k in a.attempts):
        print(f"error: --attempts must lie in [2, {budget.attempts}], got {a.attempts}", file=sys.stderr)
        return 2
    for k in a.attempts:
        # the budget's last attempt at k: a run that fails is reported, not trained again with the next seed
        m = run_cell(grid[a.cell], replace(budget, attempts=k), a.out / f"attempt{k}", a.runs / f"attempt{k}",
                     starts=a.starts, first=k)
        t = m["train"]
        print(f"seed {m.get('seed', 0)}: {m['eval']['loss']:.5g} ± {m['eval']['se']:.2g}, {t['steps']} steps in "
              f"{len(t['stages'])} stages, kept stage {t['chosen_stage']}, "
              f"{'passes' if m['failed'] is None else 'fails: ' + m['failed']}, {m['seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
