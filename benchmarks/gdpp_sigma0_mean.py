"""GD++ at σ = 0: how well do sequences, and spectra, pin the mean adjusted loss?

For each committed quick-budget GD++ model at ``uniform:0`` (and any model files given), four estimates of the
same mean: the evaluation's 10⁵ sequences (stored in its ``metrics.json``), the tail check's 10⁶ sequences,
``spectral_check``'s 2²¹ Wishart spectra (exact given Σ; the paper budget's setting), and the same on 2²⁰ spectra
drawn by importance sampling towards rare spectra (``numerics.baselines.gdpp_fit.sample_spectra``), which weighs
the contexts no sample of fresh sequences meets (``null`` where the estimate overflows float64).

    python benchmarks/gdpp_sigma0_mean.py > benchmarks/logs/gdpp-sigma0-mean.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from numerics.baselines import gdpp_fit
from numerics.evaluate import losses as evaluation
from numerics.io import load_model
from numerics.models.kinds import GDPP
from numerics.reproduce import experiments as ex

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    paper = ex.get_budget("paper")
    rows = []
    for d in sorted((ROOT / "results" / "models").glob("gdpp-L*-uniform0")):
        m = json.loads((d / "metrics.json").read_text())
        if m["layers"] < ex.TAIL_DEPTH:
            continue
        P, Q, _ = load_model(d / "model.npz")
        cell = ex.Cell("gdpp", m["layers"], "uniform:0")
        t = time.perf_counter()
        with jax.enable_x64(True):
            tc = evaluation.tail_check(P, Q, cell.noise, paper.n, paper.d, ex.tail_key(), evaluation.TAIL_SEQUENCES)
        spec = ex.spectral_check(P, Q, cell, paper)
        g = GDPP.from_universal(np.asarray(P, np.float64), np.asarray(Q, np.float64), atol=1e-12)
        with np.errstate(over="ignore", invalid="ignore"):  # a polynomial of degree (3^L - 1)/2 can overflow
            imp = gdpp_fit.estimate(g, gdpp_fit.sample_spectra(ex.SPECTRAL_SEED, 2**20, paper.n, paper.d, cell.noise))
        imp = tuple(float(x) if np.isfinite(x) else None for x in imp)  # None: overflowed float64
        rows.append({"cell": f"results/models/{d.name}", "layers": m["layers"],
                     "eval": {"sequences": m["eval"]["sequences"], "mean": m["eval"]["loss"], "se": m["eval"]["se"]},
                     "tail_check": {k: tc[k] for k in ("sequences", "mean", "se", "max")},
                     "spectral": spec, "importance": {"spectra": 2**20, "mean": imp[0], "se": imp[1]},
                     "seconds": round(time.perf_counter() - t, 1)})
        print(json.dumps(rows[-1]), file=sys.stderr)
    print(json.dumps({"command": "python benchmarks/gdpp_sigma0_mean.py", "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
