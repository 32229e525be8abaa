"""Where FULL starts in the paper budget: from the random start (its DIAG phase first), or from the DIAG cell of its
depth.  docs/experiments/full-from-diag.md reports the runs.

    python benchmarks/full_start_probe.py diag-start categorical:1,3 --cells C --out DIR
    python benchmarks/full_start_probe.py longer categorical:1,3 --cells C --out DIR

``C`` is a ``models/`` folder of paper-budget cells (``results/paper/models`` of the commit that holds them).
``diag-start`` copies DIAG-3 of the setting from ``C`` into ``DIR/models`` and trains FULL-3 in the paper budget's
stages from it, as a budget that continues over depth does (with the paper budget's ``full_from_diag`` the sweep
now does the same).  ``longer`` copies FULL-3 of the setting, trained from the random start, and runs the
convergence check on it: every stage twice as long.  Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

from numerics.reproduce import convergence
from numerics.reproduce.budgets import BUDGETS, Cell, slug
from numerics.reproduce.experiments import run_cell


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("diag-start", "longer"))
    ap.add_argument("noise")
    ap.add_argument("--cells", type=Path, required=True, help="a models/ folder holding the paper budget's cells")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    paper, t0 = BUDGETS["paper"], time.time()
    src = "diag" if a.mode == "diag-start" else "full"
    name = f"{src}-L3-{slug(a.noise)}"
    shutil.copytree(a.cells / name, a.out / "models" / name, dirs_exist_ok=True)
    shutil.copytree(a.cells.parent / "baselines", a.out / "baselines", dirs_exist_ok=True)
    cell = Cell("full", 3, a.noise)
    if a.mode == "diag-start":
        m = run_cell(cell, replace(paper, continuation=True), a.out, a.out / "runs")
        res = {"loss": m["eval"]["loss"], "se": m["eval"]["se"], "max": m["eval"]["tail"]["max"],
               "failed": m["failed"], "start": Path(m["train"]["start"]).parent.name,
               "stages": [{"held_out": s["held_out"], "scale": s["scale"].get("scale")} for s in m["train"]["stages"]]}
    else:
        res = convergence.check(replace(paper, full_from_diag=False), a.out, a.out / "runs", cells=(cell,))["cells"][cell.name]
    print(json.dumps({"mode": a.mode, "noise": a.noise, **res, "seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()
