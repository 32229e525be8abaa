r"""Which of a deep run's first chunks fail, seed by seed, under variants of the training recipe.

Runs the compiled training chunks from step 0 with no rollback (a failed chunk is reported and its state
kept, as ``benchmarks/huber_skips.py`` does) and no step rejection (``trust=0`` unless a variant sets it), for
each ``--variant NAME=JSON``. The JSON object holds
:class:`numerics.train.TrainConfig` fields, optionally Adam's own ``adam_eps``, ``adam_b1``, ``adam_b2``
(optax's defaults 1e-8, 0.9, 0.999), and ``loss``: the per-sequence training loss beyond ``δ`` (``huber``, the
default: linear; ``trimmed``: constant, so a sequence beyond ``δ`` has zero gradient; ``cauchy``:
``½ δ² log(1 + r²/δ²)`` everywhere, whose force falls as ``δ²/r``).
Each chunk prints one character per seed (``.`` passed the divergence check, ``X`` failed) and the mean
training loss of its last 10 steps over the seeds.

    python benchmarks/early_chunks.py --model gdpp --layers 12 --noise uniform:0 --steps 600 --seeds 2 \
        --variant 'free={"gdpp_xx": "free"}' --variant 'nonpositive={}'
    python benchmarks/early_chunks.py --model diag --layers 12 --noise uniform:7 --steps 600 --seeds 3 \
        --variant 'default={}' --variant 'warmup600={"warmup": 600}' --variant 'lr5e-3={"lr": 0.005}' \
        --variant 'eps1e-3={"adam_eps": 1e-3}' --variant 'eps1e-2={"adam_eps": 1e-2}' --variant 'eps1e-1={"adam_eps": 0.1}'
    python benchmarks/early_chunks.py --model diag --layers 12 --noise uniform:7 --steps 600 --seeds 3 \
        --variant 'huber={}' --variant 'trimmed={"loss": "trimmed"}' --variant 'cauchy={"loss": "cauchy"}'
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.train import devices as hostdevices  # noqa: E402

hostdevices.configure()  # as the lintf command: one host device per core, before JAX loads

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

from numerics import train as training  # noqa: E402
from numerics.train import TrainConfig, noise_values, training_devices  # noqa: E402


def trimmed(r: jnp.ndarray, delta: float) -> jnp.ndarray:
    """``½ r²`` up to ``δ``, then the constant ``½ δ²``: a sequence beyond ``δ`` pulls with zero force."""
    return jnp.where(jnp.abs(r) <= delta, 0.5 * r**2, 0.5 * delta**2)


def cauchy(r: jnp.ndarray, delta: float) -> jnp.ndarray:
    """``½ δ² log(1 + r²/δ²)``: ``≈ ½ r²`` for ``|r| ≪ δ``, force ``δ²/r`` beyond."""
    return 0.5 * delta**2 * jnp.log1p((r / delta) ** 2)


LOSSES = {"huber": training.huber, "trimmed": trimmed, "cauchy": cauchy}


def chunks(cfg: TrainConfig, steps: int, adam: dict, loss: str = "huber") -> list[str]:
    """One ``'..X  loss'`` entry per chunk of the first ``steps`` steps; ``adam``: ``optax.scale_by_adam`` keywords;
    ``loss``: a key of :data:`LOSSES`, the per-sequence training loss (the default recipe's ``huber``)."""
    saved, saved_loss = training.optimizer, training.huber
    training.optimizer = lambda c: optax.chain(optax.clip_by_global_norm(c.clip), optax.scale_by_adam(**adam))
    training.huber = LOSSES[loss]
    training.CHUNK_CACHE.clear()
    try:
        fn = training.chunk_fn(cfg, cfg.chunk, training_devices(cfg.batch))
        state, out = training.init_state(cfg), []
        for _ in range(steps // cfg.chunk):
            state, ok, losses = fn(state, jnp.asarray(cfg.seed, jnp.int32), noise_values(cfg))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a chunk where every step was skipped
                last = float(np.nanmean(np.asarray(losses)[-10:]))
            out.append("".join("." if o else "X" for o in np.asarray(ok)) + f" {last:.3g}"
                       + (f" rejected {np.asarray(state.rejected).tolist()}" if cfg.trust else ""))
    finally:
        training.optimizer, training.huber = saved, saved_loss
        training.CHUNK_CACHE.clear()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--noise", required=True)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--chunk-steps", dest="chunk", type=int, default=50)
    ap.add_argument("--variant", action="append", default=[], help="NAME=JSON (TrainConfig fields, adam_eps, adam_b1, adam_b2, loss)")
    args = ap.parse_args()
    variants = dict(v.split("=", 1) for v in args.variant) or {"default": "{}"}
    for name, spec in variants.items():
        over = json.loads(spec)
        adam = {k[5:]: float(over.pop(k)) for k in ("adam_eps", "adam_b1", "adam_b2") if k in over}
        loss = over.pop("loss", "huber")
        over.setdefault("trust", 0.0)  # no step rejection: the failures it would stop are what this counts
        cfg = TrainConfig(model=args.model, layers=args.layers, noise=args.noise, seeds=args.seeds,
                          chunk=args.chunk, **over)
        t = time.perf_counter()
        row = chunks(cfg, args.steps, adam, loss)
        print(f"{name:12s} {time.perf_counter() - t:5.0f} s | " + " | ".join(row), flush=True)
    print("reproduce: python benchmarks/early_chunks.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
