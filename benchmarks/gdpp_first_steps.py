r"""Why deep GD++ rolls back from the random start: its first training steps, seen one chunk at a time.

Prints the gradient at the start (normalised to norm 1; ``ω_xx`` and ``ω_yx`` per layer), then runs the
compiled training program (``ω_xx`` free, no step rejection) in chunks of ``--chunk`` steps with no rollback, and after each chunk prints
the ``ω_xx`` of every layer, the share of the last batch whose pass overflowed (dead) and the batch median of
``½ (y_t − ŷ)²`` (the guard's statistic; the limit is ``100 · d/2 = 500``).  Stops at the first chunk the guard
rejects.

    python benchmarks/gdpp_first_steps.py --layers 12 --noise uniform:0
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

from numerics.models.forward import predict_fast  # noqa: E402
from numerics.train import (TrainConfig, chunk_fn, data_key, draw, init_state, loss_fn,  # noqa: E402
                               noise_values, training_devices)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--noise", default="uniform:0")
    ap.add_argument("--chunk-steps", dest="chunk", type=int, default=4)
    ap.add_argument("--chunks", type=int, default=10)
    args = ap.parse_args()
    cfg = TrainConfig(model="gdpp", layers=args.layers, noise=args.noise, chunk=args.chunk, gdpp_xx="free",
                      trust=0.0)  # unconstrained, no step rejection: the divergence they would stop is watched
    state = init_state(cfg)
    first = jax.tree_util.tree_map(lambda a: a[0], state.params)
    b = draw(cfg, data_key(cfg.seed, 1, 0), cfg.batch, None, noise_values(cfg))
    g = jax.grad(lambda p: loss_fn(p, b, delta=cfg.huber_delta)[0])(first)
    norm = float(jnp.sqrt(sum(jnp.sum(x**2) for x in jax.tree_util.tree_leaves(g))))
    print("gradient at step 0 / its norm:")
    print("  omega_xx", np.array2string(np.asarray(g.omega_xx) / norm, precision=3, max_line_width=200))
    print("  omega_yx", np.array2string(np.asarray(g.omega_yx) / norm, precision=3, max_line_width=200))
    fn = chunk_fn(cfg, cfg.chunk, training_devices(cfg.batch))
    for c in range(args.chunks):
        state, ok, _ = fn(state, jnp.asarray(cfg.seed, jnp.int32), noise_values(cfg))
        p = jax.tree_util.tree_map(lambda a: a[0], state.params)
        step = int(state.step)
        b = draw(cfg, data_key(cfg.seed, 1, step - 1), cfg.batch, None, noise_values(cfg))
        _, alive = predict_fast(p, b.X, b.y, b.x_query, guard=True)
        median = float(loss_fn(p, b)[1].median)  # the guard's own statistic
        print(f"step {step:4d}: omega_xx {np.array2string(np.asarray(p.omega_xx), precision=4, max_line_width=200)}; "
              f"dead {1 - np.asarray(alive).mean():.3f}; median {median:.3g}; chunk check {'passed' if bool(ok[0]) else 'FAILED'}",
              flush=True)
        if not bool(ok[0]):
            break
    print("reproduce: python benchmarks/gdpp_first_steps.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
