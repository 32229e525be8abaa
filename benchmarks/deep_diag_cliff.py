r"""How a deep DIAG run reaches the divergence guard's limit, step by step and layer by layer.

Trains ``--seeds`` seeds with the default recipe and no rollback (as ``benchmarks/early_chunks.py``) up to step
``--until`` in chunks of 10, then one step at a time for ``--steps`` steps. After each single step it prints:

* per seed, the median of ``½ (y_t − ŷ)²`` on a fixed batch of 4096 held-out sequences (the guard's statistic;
  ``inf`` when more than half of them overflow), and whether the step was accepted;
* for seed ``--watch``, per layer ``l``, the median over the batch of ``log₁₀ |1 + ω_yy E_yy^l|``: the factor by
  which layer ``l`` multiplies every ``y`` entry of the context (``E_yy ↦ (1 + ω_yy E_yy)² E_yy`` is the
  ``yy`` entry of the Gram map ``T E Tᵀ`` when ``ω_xy E_xy`` is small), and ``log₁₀ E_yy^l`` itself.

    python benchmarks/deep_diag_cliff.py --layers 12 --noise uniform:7 --seeds 3 --until 120 --steps 12 --watch 2
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.train import devices as hostdevices  # noqa: E402

hostdevices.configure()  # as the lintf command: one host device per core, before JAX loads

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from numerics import train as training  # noqa: E402
from numerics.models import context_gram, kind_of, sandwich  # noqa: E402
from numerics.train import TrainConfig, noise_values, training_devices  # noqa: E402


def layer_factors(params: training.Diag, b: object) -> jax.Array:
    """``(L, 2)``: per layer, the batch medians of ``log₁₀ |1 + ω_yy E_yy^l|`` and ``log₁₀ E_yy^l`` (a sequence
    whose pass has overflowed by layer ``l`` counts as ``+∞``)."""
    d = b.X.shape[-1]
    E = context_gram(b.X, b.y)
    p, q = kind_of(params).layer_vectors(params, d)
    omega = jnp.einsum("lha,lhc->lac", p, q)
    med = lambda v: jnp.median(jnp.where(jnp.isnan(v), jnp.inf, v))  # noqa: E731 - an overflowed sequence counts as +inf
    rows = []
    for l in range(omega.shape[0]):
        eyy = E[:, d, d]
        rows.append(jnp.stack([med(jnp.log10(jnp.abs(1 + omega[l, d, d] * eyy))), med(jnp.log10(eyy))]))
        E = sandwich(jnp.eye(d + 1, dtype=E.dtype) + omega[l] * E, E)
    return jnp.stack(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--noise", default="uniform:7")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--until", type=int, default=120, help="steps run in chunks of 10 first (a multiple of 10)")
    ap.add_argument("--steps", type=int, default=12, help="single steps then traced")
    ap.add_argument("--watch", type=int, default=2, help="the seed whose layers are printed")
    args = ap.parse_args()
    cfg = TrainConfig(model="diag", layers=args.layers, noise=args.noise, seeds=args.seeds, chunk=10,
                      trust=0.0)  # no step rejection: the divergence it would stop is what this watches
    dev = training_devices(cfg.batch)
    seed, values = jnp.asarray(cfg.seed, jnp.int32), noise_values(cfg)
    state = training.init_state(cfg)
    for _ in range(args.until // 10):
        state, _, _ = training.chunk_fn(cfg, 10, dev)(state, seed, values)
    b = training.draw(cfg, training.data_key(cfg.seed, 2, 0), 4096, None, values)  # the selection stream
    median = jax.jit(jax.vmap(lambda p: training.loss_fn(p, b, "fast", False, 0.0)[1]))
    factors = jax.jit(lambda p: layer_factors(p, b))
    watch = lambda s: jax.tree_util.tree_map(lambda a: a[args.watch], s.params)  # noqa: E731
    np.set_printoptions(precision=2, suppress=True, linewidth=200)
    print(f"DIAG-{cfg.layers} {cfg.noise}, default recipe, no rollback; layers of seed {args.watch}")
    for _ in range(args.steps):
        state, ok, _ = training.chunk_fn(cfg, 1, dev)(state, seed, values)
        f = np.asarray(factors(watch(state)))
        print(f"step {int(state.step):4d} accepted {np.asarray(ok).astype(int)} median {np.asarray(median(state.params))}")
        print(f"    log10|1 + w_yy E_yy| {f[:, 0]}")
        print(f"    log10 E_yy           {f[:, 1]}")
    print("reproduce: python benchmarks/deep_diag_cliff.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
