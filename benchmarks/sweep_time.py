r"""Where a reproduction sweep's time went: per model, depth and device of the cells finished under ``OUT/models/``,
the cells, their median training steps, their median cell time (training + evaluation) and training time, and their
machine time per layer trained (each cell's share of the machine time,
:func:`numerics.reproduce.timing.machine_shares` among the cells of its device, over
:func:`numerics.reproduce.budgets.train_layers`), then the cells and machine time of each device.

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
from numerics.reproduce.timing import by_device, machine_shares


def rows(budget_name: str, out: Path) -> list[dict]:
    """One row per (model, depth, device) of the finished cells (a cell with a ``metrics.json``)."""
    budget = get_budget(budget_name)
    named = {c.name: c for c in cells_for(budget, PARTS)}
    found = {p.parent.name: json.loads(p.read_text()) for p in sorted((out / "models").glob("*/metrics.json"))}
    found = {n: m for n, m in found.items() if n in named}
    device = {n: m.get("device", "cpu") for n, m in found.items()}
    shares = {}  # machines of different devices ran at the same time: each device's moments are its own
    for dev in set(device.values()):
        mine = [n for n in found if device[n] == dev]
        shares |= dict(zip(mine, machine_shares([found[n] for n in mine])))
    groups: dict[tuple[str, int, str], list[str]] = {}
    for n in found:
        groups.setdefault((named[n].model, named[n].layers, device[n]), []).append(n)
    out_rows = []
    for (model, depth, dev), names in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        ms = [found[n] for n in names]
        out_rows.append({
            "model": model, "depth": depth, "device": dev, "cells": len(names),
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
    print("| model | depth | device | cells | median steps | median cell time (s) | median training (s) "
          "| machine min / layer |")
    print("|---|--:|---|--:|--:|--:|--:|--:|")
    for r in table:
        print(f"| {r['model']} | {r['depth']} | {r['device']} | {r['cells']} | {r['steps']:.0f} | {r['cell_s']:.0f} | {r['train_s']:.0f} "
              f"| {r['machine_min_per_layer']:.2f} |")
    cells = [json.loads(p.read_text()) for p in sorted((args.out / "models").glob("*/metrics.json"))]
    print()
    for dev, (n, secs) in sorted(by_device(cells).items()):
        print(f"{dev}: {n} cells, {secs / 3600:.2f} h of machine time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
