r"""GD++ cells taken from the spectral fit alone, without Adam, against the trained cells of two grids.

For GD++ the expected loss given ``Σ = XᵀX`` is a sum over ``Σ``'s eigenvalues of a derived per-eigenvalue loss, and
:func:`numerics.baselines.gdpp_fit.fit_gdpp` minimises it by Levenberg–Marquardt with continuation over depth, so one
fit of depth ``L`` holds the fits of every depth up to ``L`` (its ``path``).  This script fits each named noise
setting once, to the grid's deepest GD++ cell, and sets the fit of each depth, in float64 as the fit returns it,
beside the GD++ cells under ``--reference`` and ``--other`` on the sweep's 100 000 evaluation sequences, paired, as
``benchmarks/lean_stages.py compare`` does (*as good*: lower, or higher by at most 3 % of the reference cell or the
float32 floor).  From depth 4 on it runs the sweep's tail check on 10⁶ sequences, and at σ = 0 its spectral check,
so a fit that would fail a cell is marked so::

    python benchmarks/gdpp_fit_cells.py --reference results/paper --other results/lean --noise uniform:5 \
        --noise uniform:0 --noise uniform:1 --log benchmarks/logs/gdpp-fit-cells/a.json

The log is rewritten after each noise setting; a setting already in it is not fitted again
(``docs/experiments/gdpp-fit-cells.md``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.train import devices as hostdevices  # noqa: E402

hostdevices.configure()

import jax  # noqa: E402
import numpy as np  # noqa: E402

from numerics.baselines.gdpp_fit import fit_gdpp  # noqa: E402
from numerics.evaluate import losses as evaluation  # noqa: E402
from numerics.io import atomic_write_json, read_json  # noqa: E402
from numerics.models import universal  # noqa: E402
from numerics.reproduce.budgets import PARTS, TAIL_DEPTH, cells_for, get_budget  # noqa: E402
from numerics.reproduce.convergence import as_good, float32_floor, losses, paired  # noqa: E402
from numerics.reproduce.judge import eval_key, spectral_check, tail_key  # noqa: E402
from numerics.data import Noise  # noqa: E402


def row(cell, budget, P, Q, refs: dict[str, Path]) -> dict:
    """The fit of ``cell``'s depth against the cell under each of ``refs`` (paired, the evaluation sequences)."""
    new = evaluation.adjusted_per_sequence(P, Q, cell.noise, budget.n, budget.d, eval_key(), budget.eval_sequences)
    r = {"cell": cell.name, "loss": float(new.mean()), "se": float(new.std(ddof=1) / np.sqrt(new.size)),
         "max": float(new.max())}
    floor = float32_floor(cell, budget)
    for name, out in refs.items():
        old = losses(out / "models" / cell.name / "model.npz", cell, budget)
        diff, se = paired(old, new)
        r[name] = {"loss": float(old.mean()), "diff": diff, "diff_se": se, "relative": diff / float(old.mean()),
                   "as_good": as_good(diff, float(old.mean()), floor)}
    if cell.layers >= TAIL_DEPTH:
        r["tail_check"] = evaluation.tail_check(P, Q, cell.noise, budget.n, budget.d, tail_key())
        if Noise.parse(cell.noise).sigma_max == 0:
            r["spectral"] = spectral_check(P, Q, cell, budget)
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", default="lean", help="the budget whose evaluation sequences and cells are used")
    ap.add_argument("--reference", type=Path, required=True, help="a grid's OUT (its GD++ cells)")
    ap.add_argument("--other", type=Path, help="a second grid's OUT")
    ap.add_argument("--noise", action="append", required=True, help="a noise setting (repeatable)")
    ap.add_argument("--log", type=Path, required=True, help="JSON log, rewritten after each setting")
    a = ap.parse_args(argv)
    budget = get_budget(a.budget)
    refs = {"reference": a.reference} | ({"other": a.other} if a.other else {})
    log = read_json(a.log) if a.log.exists() else {"budget": budget.name, "reference": str(a.reference),
                                                   "other": str(a.other) if a.other else None, "settings": {}}
    for noise in (str(Noise.parse(nz)) for nz in a.noise):
        if noise in log["settings"]:
            continue
        cells = sorted((c for c in cells_for(budget, PARTS) if c.model == "gdpp" and c.noise == noise),
                       key=lambda c: c.layers)
        if not cells:
            raise SystemExit(f"--noise {noise}: no GD++ cell of budget {budget.name} has it")
        t0 = time.perf_counter()
        fit = fit_gdpp(cells[-1].layers, noise, budget.n, budget.d)
        rows = []
        for cell in cells:
            with jax.enable_x64(True):
                P, Q = universal(fit.path[cell.layers - 1][1], budget.d)
                rows.append(row(cell, budget, np.asarray(P, np.float64), np.asarray(Q, np.float64), refs))
            r = rows[-1]
            print(f"{cell.name}: fit {r['loss']:.5g} ± {r['se']:.2g} (max {r['max']:.3g})"
                  + "".join(f", {k} {v['loss']:.5g} ({v['relative']:+.1%}, {'as good' if v['as_good'] else 'worse'})"
                            for k in refs for v in (r[k],))
                  + (f", tail max {r['tail_check']['max']}" if "tail_check" in r else ""), flush=True)
        log["settings"][noise] = {"fit_seconds": fit.seconds, "seconds": time.perf_counter() - t0, "cells": rows}
        atomic_write_json(a.log, log)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
