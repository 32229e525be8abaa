r"""GD++ at ``fixed:0``: loss of the derived Theorem 5.1 construction against depth.

For each eigenvalue window ``[μ, ν]`` and depth ``L = K + 1`` (``K`` preconditioning layers
``ω_xx = −1/(3ν_l)``, then the GD read-out ``ω_yx = −1/μ_K``; :func:`numerics.models.constructions.gdpp_second_order`),
the loss ``½ E (y_t − ŷ)²`` on ``--sequences`` fresh noiseless sequences (float64, the Gram-form
pass :func:`numerics.models.predict`).  Also prints quantiles of the extreme eigenvalues of
``Σ = XᵀX`` (Wishart, ``n = 20``, ``d = 10``), which decide what a fixed window can reach: a
sequence whose smallest eigenvalue lies below ``μ`` is preconditioned only partly.

    python benchmarks/gdpp_construction.py            # ~1 min on 2 cores
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from numerics.models.constructions import gdpp_second_order  # noqa: E402
from numerics.data import sample  # noqa: E402
from numerics.models import predict, universal  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sequences", type=int, default=100_000)
    ap.add_argument("--windows", default="1.9:58,1:60,0.5:70,0.25:80,0.1:100")
    ap.add_argument("--max-layers", type=int, default=7)
    args = ap.parse_args()
    b = sample(jax.random.PRNGKey(123), "fixed:0", args.sequences, 20, 10, jnp.float64)
    ev = np.linalg.eigvalsh(np.asarray(jnp.einsum("bnd,bne->bde", b.X, b.X)))
    lo, hi = ev[:, 0], ev[:, -1]
    qs = [0.0, 1e-4, 1e-3, 1e-2, 0.5, 0.99, 0.999, 1.0]
    print(f"{args.sequences} sequences, fixed:0, n=20, d=10")
    print("quantile   " + " ".join(f"{q:>8g}" for q in qs))
    print("min eig    " + " ".join(f"{np.quantile(lo, q):8.3f}" for q in qs))
    print("max eig    " + " ".join(f"{np.quantile(hi, q):8.2f}" for q in qs))
    print("\nloss ½E(y_t−ŷ)² (median in brackets) by depth L for window [mu, nu]:")
    print(f"{'[mu,nu]':>12s} " + " ".join(f"{'L=' + str(L):>20s}" for L in range(1, args.max_layers + 1)))
    for w in args.windows.split(","):
        mu, nu = (float(v) for v in w.split(":"))
        row = []
        for L in range(1, args.max_layers + 1):
            P, Q = universal(gdpp_second_order(mu, nu, precondition=L - 1).params._replace(), 10)
            P, Q = jnp.asarray(P, jnp.float64), jnp.asarray(Q, jnp.float64)
            sq = np.asarray(0.5 * (predict(P, Q, b.X, b.y, b.x_query) - b.y_query) ** 2)
            row.append(f"{sq.mean():9.2e} [{np.median(sq):8.1e}]")
        print(f"{w:>12s} " + " ".join(f"{r:>20s}" for r in row), flush=True)
    print("\nreproduce: python benchmarks/gdpp_construction.py " + " ".join(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
