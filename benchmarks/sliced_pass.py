r"""The float64 model pass on one evaluation chunk, whole and in slices of ``SLICE`` sequences
(:func:`numerics.evaluate.losses.sliced`): the time of each (best of ``--reps`` rounds, taken in turn) and whether
every sequence's number is the same, for the committed models named.

    LINTF_HOST_DEVICES=1 python benchmarks/sliced_pass.py --out results/lean --cell diag-L1-uniform3 \
        --cell diag-L6-uniform3 --cell diag-L12-uniform5 --cell full-L7-uniform3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from numerics.data import Noise  # noqa: E402
from numerics.evaluate import losses  # noqa: E402
from numerics.io import load_model  # noqa: E402
from numerics.reproduce import judge  # noqa: E402
from numerics.reproduce.budgets import PARTS, cells_for, get_budget, parse_cells  # noqa: E402


def best(fn, reps: int) -> tuple[float, np.ndarray]:  # noqa: ANN001
    """The shortest of ``reps`` timed calls of ``fn`` after one warm-up call, and its output."""
    out = jax.block_until_ready(fn())
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        out = jax.block_until_ready(fn())
        times.append(time.perf_counter() - t)
    return min(times), np.asarray(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="a sweep's output folder (its models/<cell>/model.npz)")
    p.add_argument("--budget", default="lean", help="the budget whose cells --cell names (default lean)")
    p.add_argument("--cell", action="append", required=True, help="a cell of the budget (repeatable)")
    p.add_argument("--reps", type=int, default=5, help="timed rounds of each pass (default 5)")
    a = p.parse_args(argv)
    if a.reps < 1:
        p.error(f"--reps must be >= 1; got {a.reps}")
    budget = get_budget(a.budget)
    try:
        names = set(parse_cells(budget, a.cell, lambda c: True))
    except ValueError as e:
        p.error(str(e))
    print(f"one chunk of {losses.CHUNK} float64 sequences; slices of {losses.SLICE}")
    for cell in (c for c in cells_for(budget, PARTS) if c.name in names):
        path = a.out / "models" / cell.name / "model.npz"
        if not path.exists():
            p.error(f"--cell {cell.name}: no {path}")
        with jax.enable_x64(True):
            P, Q = (jnp.asarray(x, jnp.float64) for x in load_model(path)[:2])
            batch = losses.chunk_batch(jax.random.PRNGKey(0), Noise.parse(cell.noise), 0, losses.CHUNK, budget.n,
                                       budget.d, losses.CHUNK)
            rows = []
            for name, fn in (("loss", lambda b: losses._model_losses(P, Q, b)),
                             ("read-outs", lambda b: judge._reads(P, Q, b.X, b.y, b.x_query))):
                t_whole, whole = best(lambda: fn(batch), a.reps)
                t_part, part = best(lambda: losses.sliced(lambda *s: fn(type(batch)(*s)), *batch), a.reps)
                rows.append(f"{name} {t_whole:.3f} s whole, {t_part:.3f} s sliced ({t_whole / t_part:.2f}x), "
                            f"{'the same numbers' if np.array_equal(whole, part, equal_nan=True) else 'NOT the same'}")
        print(f"{cell.name}: " + "; ".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
