r"""Would a smaller stage pool have seen the tails the lean budget's pool of 2¹⁹ saw?

After each stage the sweep fits the scale on a pool of ``Stages.scale_pool`` fresh sequences
(:func:`numerics.train.scale_fit.fit_scale`); it searches only when a pool sequence costs more than ``SCALE_AT``.
A pool of ``2^k`` sequences is a prefix of every larger pool of the same stream (chunks of ``CHUNK``, a short chunk
keeps the first sequences of a full draw).  For every stage of a finished sweep whose record says the fit searched,
this evaluates the stage's own model (``RUNS/<budget>/<cell>/stage<k>/model.npz``, before its fit) on the
recorded pool and prints its largest loss and the recorded scale, then, for each prefix size asked for, the largest
loss in the prefix, how many of its sequences pass ``SCALE_AT``, and the scale a fit on that prefix keeps:

    LINTF_HOST_DEVICES=1 python benchmarks/pool_prefix.py --out runs/here/out --runs runs/here/runs \
        --prefix 131072 --prefix 262144
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from numerics.io import load_model  # noqa: E402
from numerics.reproduce.budgets import get_budget  # noqa: E402
from numerics.train import scale_fit  # noqa: E402


def searched(out: Path) -> list[tuple[str, str, int, dict]]:
    """``(cell, noise, stage, scale record)`` of every stage of ``out``'s cells whose fit searched, by noise."""
    rows = []
    for p in sorted((out / "models").glob("*/metrics.json")):
        m = json.loads(p.read_text())
        rows += [(p.parent.name, m["noise"], s["stage"], s["scale"]) for s in m["train"]["stages"]
                 if (s.get("scale") or {}).get("searched")]
    return sorted(rows, key=lambda r: r[1])  # a setting's pool is drawn once and kept


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="the sweep's output folder (models/<cell>/metrics.json)")
    p.add_argument("--runs", type=Path, required=True, help="the sweep's --runs folder (its stage models)")
    p.add_argument("--budget", default="lean", help="the sweep's budget (default lean)")
    p.add_argument("--prefix", type=int, action="append", required=True, help="a smaller pool size (repeatable)")
    a = p.parse_args(argv)
    try:
        budget = get_budget(a.budget)
    except ValueError as e:
        p.error(str(e))
    pool = int(budget.stages.scale_pool)
    bad = [k for k in a.prefix if not 2 <= k < pool]
    if bad:
        p.error(f"--prefix must lie in [2, {pool}) (the budget's stage pool); got {bad[0]}")
    key = jax.random.fold_in(jax.random.PRNGKey(0), scale_fit.SCALE_STREAM)
    print(f"budget {budget.name}: stage pool {pool}, threshold {scale_fit.SCALE_AT:g}")
    heads = " | ".join(f"{k}: max, above, scale" for k in a.prefix)
    print(f"| cell | stage | whole pool: max, recorded scale | {heads} |")
    print("|---|--:|---|" + "---|" * len(a.prefix))
    missed = dict.fromkeys(a.prefix, 0)
    rows = searched(a.out)
    for cell, noise, stage, rec in rows:
        model = a.runs / budget.name / cell / f"stage{stage}" / "model.npz"
        if not model.exists():
            print(f"| {cell} | {stage} | no {model} |")
            continue
        P, Q, _ = load_model(model)
        losses = scale_fit.pool_losses(P, Q, noise, budget.n, budget.d, key, pool)
        cols = []
        for k in a.prefix:
            head = losses[:k]
            above = int(np.sum(~(head <= scale_fit.SCALE_AT)))
            c = scale_fit.fit_scale(P, Q, noise, budget.n, budget.d, pool=k)[0] if above else 1.0
            missed[k] += above == 0
            cols.append(f"{float(head.max()):.3g}, {above}, {c:.3f}")
        print(f"| {cell} | {stage} | {float(losses.max()):.3g}, {rec['scale']:.3f} | " + " | ".join(cols) + " |",
              flush=True)
    print(f"{len(rows)} searched stages; " + "; ".join(f"a pool of {k} holds no tail in {n}"
                                                      for k, n in missed.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
