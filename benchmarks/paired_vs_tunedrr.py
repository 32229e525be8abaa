r"""A saved model against TunedRR (and Bayes) on the *same* fresh sequences: paired differences.

The time-to-quality target ("adjusted loss at or below TunedRR's") compares two numbers
whose standard errors are each ~0.002 on 100 000 sequences; on the same sequences the difference
``ℓ_model − ℓ_TunedRR`` has a much smaller paired SE.  TunedRR's cap and multiplier are tuned on
``--tune`` sequences (key ``split(PRNGKey(seed))[0]``, as :func:`numerics.baselines.table`), the
evaluation uses ``split(PRNGKey(seed))[1]``, float64, :func:`numerics.models.predict`.

    python benchmarks/paired_vs_tunedrr.py runs/full7/model.npz --noise uniform:5
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

from numerics import baselines  # noqa: E402
from numerics.evaluate import losses as evaluation  # noqa: E402
from numerics.model_file import load_model  # noqa: E402
from numerics.models import predict  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("model")
ap.add_argument("--noise", default="uniform:5")
ap.add_argument("--sequences", type=int, default=100_000)
ap.add_argument("--tune", type=int, default=50_000)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()
P, Q, _ = load_model(args.model)
P, Q = jnp.asarray(P, jnp.float64), jnp.asarray(Q, jnp.float64)
n, d = 20, P.shape[-1] - 1
k_tune, k_eval = jax.random.split(jax.random.PRNGKey(args.seed))
tuned = baselines.tune(k_tune, args.noise, args.tune, n, d, ("TunedRR", "Bayes"))
base = baselines.predictor(tuned, args.noise, ("TunedRR", "Bayes"))
fn = jax.jit(lambda X, y, xq: predict(P, Q, X, y, xq))
res = evaluation.evaluate(
    lambda b, sp: base(b, sp) | {"model": fn(b.X, b.y, b.x_query)},
    args.noise,
    args.sequences,
    n,
    d,
    k_eval,
    against="TunedRR",
)
for m in ("model", "TunedRR", "Bayes"):
    r = res[m]
    extra = (
        f", minus TunedRR {r['minus_TunedRR']:+.5f} ± {r['minus_TunedRR_se']:.5f} (paired)"
        if m != "TunedRR"
        else ""
    )
    print(f"{m:8s} adjusted {r['loss']:.5f} ± {r['se']:.5f}{extra}  [{r['count']} sequences]")
print("reproduce: python benchmarks/paired_vs_tunedrr.py " + " ".join(sys.argv[1:]))
