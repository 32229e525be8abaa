"""Train one cell with ``lintf train``'s recipe, from the random start or warm-started from a shallower model.

The question (docs/experiments/continuation-basin.md): does continuation over depth, the paper budget's former
start, reach the loss that the same cell reaches from the random start?

    python benchmarks/continuation_probe.py diag 4 categorical:1,3                       # from the random start
    python benchmarks/continuation_probe.py diag 4 categorical:1,3 --start M.npz         # from a 3-layer model
    python benchmarks/continuation_probe.py diag 7 categorical:1,3 --seeds 2 --steps 3000 --batch 2048

Prints one JSON line: the cell, the recipe, the adjusted loss on 100 000 fresh sequences (best seed, chosen on
the selection sequences), every seed's loss, and the seconds it took.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace

import jax

from numerics.train import rundir
from numerics.train.config import TrainConfig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("layers", type=int)
    ap.add_argument("noise")
    ap.add_argument("--start", default=None, help="model file of a shallower model to warm-start from")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--seeds", type=int, default=1)
    a = ap.parse_args()
    cfg = TrainConfig(model=a.model, layers=a.layers, noise=a.noise, steps=a.steps, batch=a.batch, seeds=a.seeds,
                      warm_start=a.start, eval_sequences=100_000)
    if a.start and cfg.kind.diag_phase:
        cfg = replace(cfg, diag_steps=0)  # the start is already trained
    t0 = time.time()
    with tempfile.TemporaryDirectory() as run:
        m = rundir.run(cfg, run, progress=False, baselines=False)
    print(json.dumps({"model": a.model, "layers": a.layers, "noise": a.noise, "start": a.start, "steps": a.steps,
                      "batch": a.batch, "seeds": a.seeds, "loss": m["adjusted_loss"], "se": m["se"],
                      "per_seed": m["eval_adjusted_per_seed"], "seconds": round(time.time() - t0, 1),
                      "device": jax.devices()[0].device_kind}))


if __name__ == "__main__":
    main()
