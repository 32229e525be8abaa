r"""What removes the one-in-10⁵ exploding context of a trained deep model: the training loss, or the scale fit.

Trains one cell's first stage (1000 steps of batch 1024, one seed: ``STAGES``, the paper budget's when it continued
over depth) from the small random start with the default Huber loss and with the plain squared loss, then fits each model's scale
(:func:`numerics.train.scale_fit.fit_scale`).  Every model is evaluated on the sweep's 10⁵ evaluation sequences
(mean, median, largest per-sequence adjusted loss, and whether the tail rules fail it); the scaled models also
on the 10⁶-sequence tail check.  Writes one JSON object.

    python benchmarks/tail_recipes.py --noise uniform:0 --layers 3 --out benchmarks/logs/tail-recipes.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.train import devices as hostdevices  # noqa: E402

hostdevices.configure()  # as the lintf command: one host device per core, before JAX loads

from numerics.evaluate import losses as evaluation  # noqa: E402
from numerics.reproduce import experiments  # noqa: E402
from numerics.train import rundir  # noqa: E402
from numerics.train.continuation import Stages, fit_scale, stage_config  # noqa: E402
from numerics.io import atomic_write_json, load_model  # noqa: E402


def evaluated(P, Q, noise: str, tail: bool) -> dict:
    a = evaluation.adjusted_per_sequence(P, Q, noise, 20, 10, experiments.eval_key(), 100_000)
    t = evaluation.tail_stats(a)
    out = {k: t[k] for k in ("mean", "se", "median", "max", "failed")}
    if tail:
        out["tail_check"] = evaluation.tail_check(P, Q, noise, 20, 10, experiments.tail_key(), 1_000_000)
    return out


#: The stages measured: the paper budget's when it continued over depth (docs/experiments/continuation-basin.md).
STAGES = Stages(steps=1000, most=4, batch=1024, seeds=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--noise", default="uniform:0")
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--runs", default="runs/tail-recipes")
    ap.add_argument("--out", default="benchmarks/logs/tail-recipes.json")
    a = ap.parse_args()
    budget = experiments.get_budget("paper")
    base = stage_config(experiments.train_config(experiments.Cell("diag", a.layers, a.noise), budget), STAGES, 1, None)
    result = {"command": " ".join(sys.argv), "cell": f"diag-L{a.layers}-{a.noise}", "steps": base.steps,
              "batch": base.batch, "recipes": {}}
    for name, cfg in (("huber", base), ("squared", replace(base, huber=0.0))):
        t0 = time.perf_counter()
        run = Path(a.runs) / name
        rundir.run(cfg, run, progress=False, baselines=False)
        P, Q, _ = load_model(run / "model.npz")
        c, info = fit_scale(P, Q, a.noise, 20, 10)
        result["recipes"][name] = {"trained": evaluated(P, Q, a.noise, False), "scale": info,
                                   "scaled": evaluated(P, c * Q, a.noise, True), "seconds": time.perf_counter() - t0}
        print(name, json.dumps(result["recipes"][name]), flush=True)
    atomic_write_json(a.out, result)


if __name__ == "__main__":
    main()
