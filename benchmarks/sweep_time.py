r"""Where a reproduction sweep's time went: per model and depth of the cells finished under ``OUT/models/``, the
cells, their median training steps, their median cell time (training + evaluation) and training time, and their
machine time per layer trained (each cell's share of the machine time,
:func:`numerics.reproduce.report.machine_shares`, over :func:`numerics.reproduce.budgets.train_layers`).

    python benchmarks/sweep_time.py --budget paper --out results/paper
    python benchmarks/sweep_time.py --budget quick --out results
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from numerics.reproduce.budgets import PARTS, cells_for, get_budget, train_layers
from numerics.reproduce.report import machine_seconds, machine_shares


def rows(budget_name: str, out: Path) -> list[dict]:
    """One row per (model, depth) of the finished cells (a cell with a ``metrics.json``)."""
    budget = get_budget(budget_name)
    named = {c.name: c for c in cells_for(budget, PARTS)}
    found = {p.parent.name: json.loads(p.read_text()) for p in sorted((out / "models").glob("*/metrics.json"))}
    found = {n: m for n, m in found.items() if n in named}
    shares = dict(zip(found, machine_shares(found.values())))
    groups: dict[tuple[str, int], list[str]] = {}
    for n in found:
        groups.setdefault((named[n].model, named[n].layers), []).append(n)
    out_rows = []
    for (model, depth), names in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ms = [found[n] for n in names]
        out_rows.append({
            "model": model, "depth": depth, "cells": len(names),
            "steps": statistics.median(m["train"]["steps"] for m in ms),
            "cell_s": statistics.median(m["seconds"] for m in ms),
            "train_s": statistics.median(m["train"]["seconds"] for m in ms),
            "machine_min_per_layer": sum(shares[n] for n in names)
            / sum(train_layers(named[n], budget) for n in names) / 60})
    return out_rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", required=True, help="the budget the cells were made with (quick, paper, test)")
    ap.add_argument("--out", required=True, type=Path, help="the sweep's --out directory")
    args = ap.parse_args()
    try:
        table = rows(args.budget, args.out)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not table:
        print(f"error: --out {args.out} holds no finished cell (no models/*/metrics.json)", file=sys.stderr)
        return 2
    print("| model | depth | cells | median steps | median cell time (s) | median training (s) | machine min / layer |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for r in table:
        print(f"| {r['model']} | {r['depth']} | {r['cells']} | {r['steps']:.0f} | {r['cell_s']:.0f} | {r['train_s']:.0f} "
              f"| {r['machine_min_per_layer']:.2f} |")
    cells = [json.loads(p.read_text()) for p in sorted((args.out / "models").glob("*/metrics.json"))]
    print(f"\n{len(cells)} cells, {machine_seconds(cells) / 3600:.2f} h of machine time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
