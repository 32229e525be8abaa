"""``lintf train``: train a FULL / DIAG / GD++ linear transformer into a run directory.

Example (DIAG, 7 layers, σ ~ U(0,5), 3 seeds in one compiled program)::

    python -m numerics.cli train --model diag --layers 7 --noise uniform:5 --seeds 3 --out runs/diag7

Rerunning the same command after an interruption resumes from the last checkpoint.

GD++ at ``fixed:0`` from the spectral fit (seed 0 = the fit, kept unless Adam improves on it)::

    python -m numerics.cli train --model gdpp --layers 7 --noise fixed:0 --init spectral --dtype float64 \
        --steps 1 --no-baselines --out runs/gdpp7-spectral
"""

from __future__ import annotations

import argparse
import sys

from numerics.io import strict_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="full, diag or gdpp")
    p.add_argument("--layers", type=int, required=True, help="number of layers L >= 1")
    p.add_argument("--heads", type=int, default=1, help="heads per layer (default 1; GD++ needs 1)")
    p.add_argument("--noise", default="uniform:5", help="fixed:S, uniform:SMAX or categorical:S1,S2,...")
    p.add_argument("--seeds", type=int, default=1, help="seeds trained together (vmap); the best is kept")
    p.add_argument("--steps", type=int, default=3000, help="training steps (default 3000)")
    p.add_argument("--batch", type=int, default=2048, help="sequences per step (default 2048)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (default: per model)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps of the (last) phase (default 5%% of it, at least 150, at most half)")
    p.add_argument("--diag-steps", type=int, default=None,
                   help="FULL only: steps that train the DIAG sub-family first (default 2/3 of --steps; 0: none)")
    p.add_argument("--clip", type=float, default=1.0, help="global gradient-norm clip (default 1)")
    p.add_argument("--huber", type=float, default=30.0, help="training loss is Huber beyond this many √d (the "
                   "target's standard deviation); 0: plain squared loss (default 30)")
    p.add_argument("--seed", type=int, default=0, help="master seed (init and data keys derive from it)")
    p.add_argument("--chunk", type=int, default=100, help="steps per compiled chunk / checkpoint (default 100)")
    p.add_argument("--eval-sequences", type=int, default=100_000, help="fresh sequences for the final eval")
    p.add_argument("--dtype", default="float32", help="float32 (default) or float64")
    p.add_argument("--n", type=int, default=20, help="context length n (default 20)")
    p.add_argument("--d", type=int, default=10, help="input dimension d (default 10)")
    p.add_argument("--init", default="random", help="random (default) or spectral: GD++ only, start from the "
                   "exact spectral fit (numerics.gdpp_fit); seed 0 stays the fit, seeds 1.. refine it with Adam")
    p.add_argument("--gdpp-xx", default="nonpositive",
                   help="nonpositive (default) or free: GD++ only, keep every ω_xx <= 0 while training (projected Adam) "
                   "or leave it free")
    p.add_argument("--y-step", default=None,
                   help="plain or scaled (default: scaled for FULL, plain for DIAG): divide Adam's step of q_y "
                   "(FULL: Q_yy) by E y² = d + E σ² (numerics.training.y_step)")
    p.add_argument("--trust", type=float, default=2.0,
                   help="reject a step that raises the median loss of its own batch (every 8th sequence) more than this "
                   "factor, to above TRUST_FLOOR·d/2, and halve the rate until steps are accepted again; 0: off "
                   "(default 2; numerics.training.TRUST_*)")
    p.add_argument("--out", default=None, help="run directory (default runs/MODEL-L-NOISE-sSEED)")
    p.add_argument("--no-baselines", action="store_true", help="skip the baselines table in metrics.json")
    p.add_argument("--json", action="store_true", help="print metrics as JSON, no progress bar")


def run(args: argparse.Namespace) -> int:
    import jax

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    from numerics.rundir import run as run_dir
    from numerics.training import TrainConfig

    cfg = TrainConfig(model=args.model, layers=args.layers, noise=args.noise, heads=args.heads, seeds=args.seeds,
                      steps=args.steps, batch=args.batch, lr=args.lr, warmup=args.warmup, clip=args.clip, huber=args.huber, diag_steps=args.diag_steps,
                      seed=args.seed, chunk=args.chunk, eval_sequences=args.eval_sequences, dtype=args.dtype,
                      n=args.n, d=args.d, init=args.init, gdpp_xx=args.gdpp_xx, y_step=args.y_step,
                      trust=args.trust)
    out = args.out or f"runs/{cfg.model}-{cfg.layers}-{cfg.noise.replace(':', '').replace(',', '_')}-s{cfg.seed}"
    metrics = run_dir(cfg, out, progress=not args.json and sys.stderr.isatty(), baselines=not args.no_baselines)
    assert metrics is not None
    if args.json:
        print(strict_json({k: v for k, v in metrics.items() if k != "curve"}, indent=2))
    else:
        print(f"{cfg.model.upper()}-{cfg.layers} {cfg.noise}: adjusted loss {metrics['adjusted_loss']:.5g} "
              f"± {metrics['se']:.2g} (best of {cfg.seeds} seeds, {metrics['eval_sequences']} sequences, "
              f"{metrics['steps_per_s']:.1f} steps/s) -> {out}")
    return 0
