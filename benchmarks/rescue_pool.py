r"""Would a larger rescue pool have saved a failed cell?  Judge a stored model as its budget does, then run the
rescue (:func:`numerics.reproduce.judge.rescue`) with a pool of the given size and print what it found.

    python benchmarks/rescue_pool.py --budget quick --cell full-L4-uniform5 --pool 4194304 \
        --model /tmp/qj/runs/quick/full-L4-uniform5/attempt3/stage1/model.npz
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from numerics.io import load_model
from numerics.reproduce import judge
from numerics.reproduce.budgets import cells_for, get_budget, PARTS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", default="quick")
    ap.add_argument("--cell", required=True, help="the cell's name, e.g. full-L4-uniform5")
    ap.add_argument("--model", required=True, help="the model.npz to judge (a stage's, from the run directory)")
    ap.add_argument("--pool", type=int, required=True, help="rescue pool size (sequences)")
    args = ap.parse_args()
    budget = get_budget(args.budget)
    cell = {c.name: c for c in cells_for(budget, PARTS)}[args.cell]
    budget = replace(budget, rescue_pool=args.pool)
    P, Q, _ = load_model(args.model)
    t = time.perf_counter()
    m = judge.assess(P, Q, cell, budget) | {"train": {"dropped_final": 0}}
    m["failed"] = judge.failure(m)
    print(f"judged in {time.perf_counter() - t:.0f} s: {m['failed'] or 'passes'}")
    t = time.perf_counter()
    _, rec = judge.rescue(P, Q, cell, budget, m)
    print(f"rescue on {args.pool} sequences in {time.perf_counter() - t:.0f} s: largest in the pool "
          f"{rec['fit'].get('pool_max', float('nan')):.3g}, scale {float(rec['scale']):.4g}; tried "
          + ", ".join(f"c = {float(x['scale']):.4g}: {x.get('failed') or 'passes'}" for x in rec["tried"]))


if __name__ == "__main__":
    main()
