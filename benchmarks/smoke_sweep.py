r"""No-NaN smoke sweep: depths × the paper's 10 noise settings × models, default recipe, few steps.
 Each cell trains with :class:`numerics.train.config.TrainConfig` defaults (batch 2048, per-model
peak lr, warm-up + cosine, clipping, divergence guard) except ``--steps`` and a small held-out
evaluation, then reports rollbacks (and the start steps of the chunks that failed), skipped steps,
the last training loss, the adjusted loss on the finite ones of ``--eval`` float32 sequences and
how many overflowed (``lintf train``'s ``metrics.json`` reports the same pair).  A cell fails if
training raised, the parameters or the training loss are non-finite, or the adjusted loss over
finite sequences is non-finite; overflowing evaluation sequences are counted, not failed (a
few-step deep model is a degree-3^L polynomial with heavy tails).  Exit status 1 if any cell
failed.

    python benchmarks/smoke_sweep.py --models diag,gdpp,full --depths 1-12 --steps 200
    python benchmarks/smoke_sweep.py --models diag --depths 12 --steps 3000 \
        --set '{"y_step": "scaled"}'
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.train import devices as hostdevices  # noqa: E402

hostdevices.configure()  # as the lintf command: one host device per core, before JAX loads

import jax  # noqa: E402
import numpy as np  # noqa: E402

from numerics.data import PAPER_NOISES  # noqa: E402
from numerics.train.config import TrainConfig  # noqa: E402
from numerics.train.loop import adjusted_losses, finite_adjusted, train  # noqa: E402


def depths(spec: str) -> list[int]:
    """``1-12`` (a range) or ``1,6,12`` (a list)."""
    if "-" in spec:
        lo, _, hi = spec.partition("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(v) for v in spec.split(",")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="diag,gdpp,full")
    ap.add_argument("--depths", default="1-12", help="range LO-HI or list L1,L2 (default 1-12)")
    ap.add_argument(
        "--noises",
        default=",".join(PAPER_NOISES)
        .replace("categorical:1,3,5", "categorical:1_3_5")
        .replace("categorical:1,3", "categorical:1_3"),
        help="';'-free list; use _ inside categorical sets",
    )
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--eval", type=int, default=4096)
    ap.add_argument(
        "--set",
        default="{}",
        help='JSON object of further TrainConfig fields, e.g. \'{"y_step": "scaled"}\'',
    )
    args = ap.parse_args()
    over = json.loads(args.set)
    noises = [s.replace("_", ",") for s in args.noises.split(",")]
    failed, t0 = 0, time.perf_counter()
    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}", flush=True)
    print(
        f"{'model':5s} {'L':>3s} {'noise':18s} {'rollbacks':>9s} {'skipped':>7s} {'rejected':>8s} "
        f"{'train loss':>11s} "
        f"{'adjusted':>10s} {'overflow':>8s} {'s':>5s}  status",
        flush=True,
    )
    for kind in args.models.split(","):
        for L in depths(args.depths):
            for noise in noises:
                t = time.perf_counter()
                cfg = TrainConfig(
                    model=kind,
                    layers=L,
                    noise=noise,
                    steps=args.steps,
                    chunk=min(100, args.steps),
                    select_sequences=args.eval,
                    eval_sequences=args.eval,
                    **over,
                )
                try:
                    res = train(cfg)
                    m, o = adjusted_losses(cfg, res.state.params, stream=3, sequences=args.eval)
                    last = float(np.nanmin(res.curve[-1][1:]))
                    adj, _, overflow = finite_adjusted(m[0], o)
                    params_ok = all(
                        np.all(np.isfinite(np.asarray(p)))
                        for p in jax.tree_util.tree_leaves(res.state.params)
                    )
                    ok = params_ok and np.isfinite(last) and np.isfinite(adj)
                    status = "ok" if ok else "NON-FINITE"
                    row = (
                        len(res.rollbacks),
                        res.skipped,
                        int(np.asarray(res.state.rejected).sum()),
                        last,
                        adj,
                        overflow,
                    )
                    at = ",".join(str(e["step"]) for e in res.rollbacks) or "-"
                except Exception as exc:  # noqa: BLE001 - a smoke test reports every failure
                    ok, status, row = (
                        False,
                        f"FAILED {type(exc).__name__}: {exc}",
                        (-1, -1, -1, float("nan"), float("nan"), -1),
                    )
                    at = "-"
                failed += not ok
                print(
                    f"{kind:5s} {L:3d} {noise:18s} {row[0]:9d} {row[1]:7d} {row[2]:8d} "
                    f"{row[3]:11.4g} {row[4]:10.4g} {row[5]:8d} "
                    f"{time.perf_counter() - t:5.0f}  {status}  rolled back at {at}",
                    flush=True,
                )
    print(f"{failed} failed cells; {time.perf_counter() - t0:.0f} s")
    print(
        "reproduce: python benchmarks/smoke_sweep.py "
        + " ".join(shlex.quote(a) for a in sys.argv[1:])
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
