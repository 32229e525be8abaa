r"""Summarise ``benchmarks/smoke_sweep.py`` logs: per model and depth, cells, cells that rolled
back,
rollbacks, rejected steps and failed cells; with ``--against`` a second set of logs, the geometric
mean of the cell-by-cell ratio of adjusted losses (this set over the other) on the cells both hold.

    python benchmarks/grid_summary.py benchmarks/logs/h100-grid/*.txt
    python benchmarks/grid_summary.py benchmarks/logs/h100-grid/lr2.5e-3/*.txt \
        --against benchmarks/logs/h100-grid/*.txt
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

MODELS = ("full", "diag", "gdpp")


def load(paths: list[str]) -> dict[tuple[str, int, str], dict[str, float]]:
    """``(model, L, noise) → {rollbacks, rejected, adjusted}`` from logs with or without the
    ``rejected`` column."""
    cells: dict[tuple[str, int, str], dict[str, float]] = {}
    for path in paths:
        columns: list[str] = []
        for line in Path(path).read_text().splitlines():
            parts = line.replace("train loss", "train_loss").split()
            if parts[:1] == ["model"]:
                columns = parts
            elif parts[:1] and parts[0] in MODELS and columns and parts[3].lstrip("-").isdigit():
                row = dict(zip(columns, parts))
                cells[(parts[0], int(parts[1]), parts[2])] = {
                    "rollbacks": int(row["rollbacks"]),
                    "rejected": int(row.get("rejected", 0)),
                    "adjusted": float(row["adjusted"]),
                }
    return cells


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument(
        "--against", nargs="+", default=None, help="logs to compare adjusted losses with"
    )
    args = ap.parse_args()
    cells = load(args.logs)
    other = load(args.against) if args.against else {}
    rows: dict[tuple[str, int], list] = defaultdict(list)
    for (m, L, noise), c in cells.items():
        rows[(m, L)].append((noise, c))
    print(
        f"{'model':5s} {'L':>3s} {'cells':>5s} {'rolled back':>11s} {'rollbacks':>9s} "
        f"{'rejected':>8s} {'failed':>6s}" + (f" {'ratio (geo-mean)':>16s}" if other else "")
    )
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for m, L in sorted(rows, key=lambda k: (MODELS.index(k[0]), k[1])):
        cs = rows[(m, L)]
        back = sum(c["rollbacks"] > 0 for _, c in cs)
        failed = sum(
            c["rollbacks"] < 0 for _, c in cs
        )  # the sweep prints -1 for a cell that raised
        rb = sum(max(c["rollbacks"], 0) for _, c in cs)
        rej = sum(max(c["rejected"], 0) for _, c in cs)
        for i, v in enumerate((len(cs), back, rb, rej, failed)):
            totals[m][i] += v
        line = f"{m:5s} {L:3d} {len(cs):5d} {back:11d} {rb:9d} {rej:8d} {failed:6d}"
        if other:
            r = [
                c["adjusted"] / other[(m, L, n)]["adjusted"]
                for n, c in cs
                if (m, L, n) in other and c["adjusted"] > 0 and other[(m, L, n)]["adjusted"] > 0
            ]
            line += f" {math.exp(sum(map(math.log, r)) / len(r)):16.3f}" if r else f" {'-':>16s}"
        print(line)
    for m, (n, back, rb, rej, failed) in totals.items():
        print(
            f"{m}: {n} cells, {back} rolled back ({rb} rollbacks), {rej} rejected steps, "
            f"{failed} failed"
        )
    print("reproduce: python benchmarks/grid_summary.py " + " ".join(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
