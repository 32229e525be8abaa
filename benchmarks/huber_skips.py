r"""Skipped steps with and without the Huber training loss: the compiled chunk program, from step 0.

A deep model's rare sequence can have a residual so large that its square, or the norm of the gradient,
overflows float32 while its pass stays below the overflow guard; the in-step guard then skips the whole
step.  This runs the training program of one cell chunk by chunk (no rollbacks: a failed chunk is reported
and kept) with ``huber = 0`` (plain squared loss) and the default, and prints the skipped steps.

    python benchmarks/huber_skips.py --model diag --layers 12 --noise uniform:7 --lr 3.4e-3 --steps 150
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.train import devices as hostdevices  # noqa: E402

hostdevices.configure()  # as the lintf command: one host device per core, before JAX loads

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from numerics.train import TrainConfig, chunk_fn, init_state, noise_values, training_devices  # noqa: E402


def skipped_steps(cfg: TrainConfig, steps: int) -> tuple[list[int], list[bool]]:
    """The skipped steps of the first ``steps`` (seed 0) and whether each chunk passed the chunk check."""
    fn = chunk_fn(cfg, cfg.chunk, training_devices(cfg.batch))
    state, skipped, passed = init_state(cfg), [], []
    for c in range(steps // cfg.chunk):
        state, ok, losses = fn(state, jnp.asarray(cfg.seed, jnp.int32), noise_values(cfg))
        skipped += (np.flatnonzero(np.isnan(np.asarray(losses)[:, 0])) + c * cfg.chunk).tolist()
        passed.append(bool(np.asarray(ok)[0]))
    return skipped, passed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="diag")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--noise", default="uniform:7")
    ap.add_argument("--lr", type=float, default=3.4e-3)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--chunk-steps", dest="chunk", type=int, default=50)
    args = ap.parse_args()
    for huber in (0.0, TrainConfig.huber):
        cfg = TrainConfig(model=args.model, layers=args.layers, noise=args.noise, lr=args.lr, chunk=args.chunk,
                          huber=huber, trust=0.0)  # no step rejection: it would stop the steps this counts
        skipped, passed = skipped_steps(cfg, args.steps)
        print(f"huber {huber:g}: {len(skipped)} of {args.steps} steps skipped {skipped}; chunk checks passed: {passed}",
              flush=True)
    print("reproduce: python benchmarks/huber_skips.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
