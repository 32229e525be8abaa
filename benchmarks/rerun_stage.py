r"""Train one finished stage of a sweep again, in this process, and compare the two models.

A sweep's stage directory (``RUNS/<budget>/<cell>/stage<k>``, :func:`numerics.train.rundir.run`) holds the
``config.json`` it was trained with and its ``model.npz``.  This trains the same configuration into ``AGAIN`` (a new
directory; a warm start is read from the path the configuration names) and prints whether the two models are the
same file, or else how far apart their ``P`` and ``Q`` are:

    python benchmarks/rerun_stage.py runs/reproduce/lean/diag-L1-uniform7/stage1 /tmp/again

Training is deterministic by seed on one machine, so a stage trained here again gives the same file; a stage trained
on another machine (another CPU, whose XLA kernels round differently) does not.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from numerics.io import file_sha256, load_model  # noqa: E402
from numerics.train import TrainConfig  # noqa: E402
from numerics.train.rundir import run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stage", type=Path, help="a finished stage directory (config.json and model.npz)")
    ap.add_argument("again", type=Path, help="a directory that does not exist yet, to train into")
    args = ap.parse_args(argv)
    if not (args.stage / "config.json").is_file() or not (args.stage / "model.npz").is_file():
        ap.error(f"stage {str(args.stage)!r} holds no config.json and model.npz of a finished stage")
    if args.again.exists():
        ap.error(f"again {str(args.again)!r} exists; give a new directory")
    d = json.loads((args.stage / "config.json").read_text())
    cfg = TrainConfig(**{f.name: d[f.name] for f in fields(TrainConfig) if f.name in d})  # derived entries (peak_lr, ...) left out
    run(cfg, args.again, progress=False, baselines=False)
    a, b = args.stage / "model.npz", args.again / "model.npz"
    if file_sha256(a) == file_sha256(b):
        print(f"{a} and {b}: the same file")
        return 0
    (P1, Q1, _), (P2, Q2, _) = load_model(a), load_model(b)
    print(f"{a} and {b} differ: largest |ΔP| {np.abs(P1 - P2).max():.3g}, |ΔQ| {np.abs(Q1 - Q2).max():.3g} "
          f"(largest |Q| {np.abs(Q1).max():.3g})")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
