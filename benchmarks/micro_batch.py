r"""The training step with its forward and backward passes run a part of the batch at a time
(``--micro-batch``).

For each model and each micro-batch size, the compiled training chunk (data drawn on device,
forward, backward, Adam, step rejection, divergence guard), exactly as ``lintf bench`` times it; the
sizes are timed in turn, round after round, in one process, so a change in the machine's load hits
them alike.  ``0`` is the whole batch in one pass.  The best and the median of the rounds are
printed, in steps per second and relative to the whole batch:

    LINTF_HOST_DEVICES=1 python benchmarks/micro_batch.py --models diag,full --layers 7 \
        --batch 1024 \
        --sizes 0,512,256,128 --rounds 6
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
import numpy as np  # noqa: E402

from numerics.bench import timer  # noqa: E402
from numerics.train.config import TrainConfig  # noqa: E402
from numerics.train.loop import training_devices  # noqa: E402


def sizes_arg(text: str, batch: int) -> list[int]:
    """``--sizes``: comma-separated micro-batch sizes, each 0 or a divisor of ``batch``; a one-line
    :class:`ValueError` otherwise."""
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(s < 0 or (s and batch % s) for s in sizes):
        raise ValueError(
            f"--sizes must be comma-separated 0s or divisors of --batch {batch}, got {text!r}"
        )
    return sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--models", default="diag,full", help="comma-separated model kinds (default diag,full)"
    )
    ap.add_argument("--layers", type=int, default=7, help="depth (default 7)")
    ap.add_argument("--batch", type=int, default=1024, help="sequences per step (default 1024)")
    ap.add_argument(
        "--sizes",
        default="0,512,256,128",
        help="micro-batch sizes, 0 the whole batch (default 0,512,256,128)",
    )
    ap.add_argument("--steps", type=int, default=20, help="steps per timed call (default 20)")
    ap.add_argument("--rounds", type=int, default=6, help="timed rounds (default 6)")
    args = ap.parse_args(argv)
    try:
        sizes = sizes_arg(args.sizes, args.batch)
        cfgs = {
            (kind, s): TrainConfig(
                model=kind,
                layers=args.layers,
                batch=args.batch,
                micro_batch=s,
                steps=10**6,
                noise="uniform:3",
                diag_steps=0 if kind == "full" else None,
            )
            for kind in args.models.split(",")
            for s in sizes
        }
    except ValueError as e:
        ap.error(str(e))
    if args.steps < 1 or args.rounds < 1:
        ap.error(f"--steps and --rounds must be >= 1, got {args.steps} and {args.rounds}")
    print(f"devices: {len(training_devices(args.batch))} x {jax.devices()[0].platform}", flush=True)
    runs = {key: timer(cfg, args.steps) for key, cfg in cfgs.items()}
    times: dict[tuple, list[float]] = {key: [] for key in runs}
    for _ in range(args.rounds):
        for key, run in runs.items():
            t = time.perf_counter()
            run()
            times[key].append(time.perf_counter() - t)
    for (kind, s), ts in times.items():
        best, whole = (
            args.steps / min(ts),
            args.steps / min(times[(kind, 0)]) if (kind, 0) in times else None,
        )
        print(
            f"{kind.upper()}-{args.layers} batch {args.batch} micro-batch {s or 'whole':>5}: "
            f"best {best:6.2f}  "
            f"median {args.steps / float(np.median(ts)):6.2f} steps/s"
            + (f"  ({best / whole:.2f}x the whole batch)" if whole else ""),
            flush=True,
        )
    print(
        "reproduce: python benchmarks/micro_batch.py "
        + " ".join(shlex.quote(a) for a in sys.argv[1:])
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
