r"""Each choice of the fast pass, timed inside the real training step against the alternative it
replaced.

Every variant swaps one function of :mod:`numerics.models.forward` and rebuilds the compiled
training chunk (data drawn on device, forward, backward, Adam, divergence guard), exactly as ``lintf
bench`` times it. The variants are timed in turn, round after round, in one process, so a change in
the machine's load hits them alike; the best and the median of the rounds are printed.

- ``current``: the pass as shipped.
- ``einsum-PEQ`` (FULL only): ``G = P E Q`` as two einsum GEMMs over the batch, instead of
  :func:`numerics.models.kinds.full_g`'s one GEMM on the upper triangle of ``E``.
- ``folded-gram``: ``E⁰ = ctxᵀ ctx`` written plainly, which XLA compiles to a transposed-operand
  batched dot, instead of a copy behind ``optimization_barrier`` and a plain batched dot.
- ``autodiff-sandwich``: autodiff's reverse rule of ``T E Tᵀ`` instead of the hand-written one.

    python benchmarks/fast_pass_variants.py --models full,diag --rounds 10
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.train import devices as hostdevices  # noqa: E402

hostdevices.configure()  # as the lintf command: one host device per core, before JAX loads

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from numerics.bench import timer  # noqa: E402
from numerics.models import forward as fastforward  # noqa: E402
from numerics.train import step as training  # noqa: E402
from numerics.train.config import TrainConfig  # noqa: E402
from numerics.train.loop import training_devices  # noqa: E402


def einsum_g(P: jax.Array, Q: jax.Array):  # noqa: ANN201
    """The replaced FULL ``G``: ``P E`` then ``(P E) Q``, two einsums over the whole batch."""
    return lambda E: jnp.einsum("hbae,hef->baf", jnp.einsum("hac,bce->hbae", P, E), Q)


def folded_gram(X: jax.Array, y: jax.Array) -> jax.Array:
    """The replaced ``E⁰``: XLA folds the transpose into the dot."""
    ctx = jnp.concatenate([X, y[..., None]], axis=-1)
    return jnp.swapaxes(ctx, -1, -2) @ ctx


VARIANTS = {
    "current": {},
    "einsum-PEQ": {"full_g": einsum_g},
    "folded-gram": {"context_gram": folded_gram},
    "autodiff-sandwich": {"sandwich": lambda T, E: (T @ E) @ jnp.swapaxes(T, -1, -2)},
}


def build(cfg: TrainConfig, swap: dict, length: int):  # noqa: ANN201
    """``lintf bench``'s timer of the compiled chunk, traced with ``swap``'s functions in place of
    :mod:`numerics.models.forward`'s (the chunk cache is emptied around it, so no variant reuses
    another's)."""
    saved = {name: getattr(fastforward, name) for name in swap}
    try:
        for name, f in swap.items():
            setattr(fastforward, name, f)
        training.CHUNK_CACHE.clear()
        return timer(cfg, length)  # compiles and warms up while the swap is in place
    finally:
        for name, f in saved.items():
            setattr(fastforward, name, f)
        training.CHUNK_CACHE.clear()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="full,diag")
    ap.add_argument("--layers", type=int, default=7)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=10, help="steps per timed call")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    print(f"devices: {len(training_devices(args.batch))} x {jax.devices()[0].platform}", flush=True)
    for kind in args.models.split(","):
        cfg = TrainConfig(
            model=kind,
            layers=args.layers,
            batch=args.batch,
            steps=10**6,
            diag_steps=0 if kind == "full" else None,
        )  # FULL's own phase, as lintf bench
        runs = {
            name: build(cfg, swap, args.steps)
            for name, swap in VARIANTS.items()
            if kind == "full" or "full_g" not in swap
        }
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                t = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t)
        for name, ts in times.items():
            ts_ = np.asarray(ts)
            print(
                f"{kind.upper()}-{args.layers} batch {args.batch} {name:18s} "
                f"best {args.steps / ts_.min():6.2f}  "
                f"median {args.steps / np.median(ts_):6.2f} steps/s",
                flush=True,
            )
    print(
        "reproduce: python benchmarks/fast_pass_variants.py "
        + " ".join(shlex.quote(a) for a in sys.argv[1:])
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
